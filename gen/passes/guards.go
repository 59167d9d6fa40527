package passes

import (
	"github.com/lossgen/lossgen/gen/ir"
)

// GradientGuards drops the chain rule's zero guards (ir.Builder.gradMul) that cannot act,
// using the value ranges of the gradient autodiff built:
//
//   - where(g ≠ 0, g·d, g) is g·d where g's range excludes 0: a NaN g gives NaN either way.
//   - where(g ≠ 0, g·d, g) for a masked gradient g = where(m, s, 0), s's range excluding 0
//     (the seed a masked mean sends each valid token), is where(m, s·d, 0): g ≠ 0 is m.
//   - where(m, −where(m, x, y), z) is where(m, −x, z) when nothing else reads the negation
//     (a gradient masked again after its sign flip), and where(m, where(m, x, y), z) is
//     where(m, x, z) (ir.Builder.Where's folds).
//
// Every value stays bit for bit what it was (a guard's g where g = 0 is +0, as the masked
// 0 that replaces it), so no golden changes; the kernels lose a compare, a select and a
// mask per guard (and the masking of g itself when nothing else reads it).
func GradientGuards(g *ir.Graph) (*ir.Graph, error) {
	rc := rangeCache{}
	uses := map[*ir.Node]int{}
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			uses[a]++
		}
	}
	for _, o := range g.Outputs {
		uses[o.Node]++
	}
	negOnce := map[*ir.Node]bool{} // rebuilt negations whose original has one reader
	return ir.Rebuild(g, func(b *ir.Builder, n *ir.Node, args []*ir.Node) *ir.Node {
		if n.Op != ir.OpWhere {
			if n.Op == ir.OpNeg && uses[n] == 1 {
				m := b.Neg(args[0])
				negOnce[m] = true
				return m
			}
			return nil
		}
		c, x, y := args[0], args[1], args[2]
		if gd := guardOf(c, x, y); gd != nil {
			if rc.excludesZero(y) {
				return gd
			}
			if y.Op == ir.OpWhere && isZero(y.Args[2]) && rc.excludesZero(y.Args[1]) {
				return b.Where(y.Args[0], b.Copy(gd, []*ir.Node{y.Args[1], gd.Args[1]}), y.Args[2])
			}
			return nil
		}
		if x.Op == ir.OpNeg && negOnce[x] && x.Args[0].Op == ir.OpWhere && x.Args[0].Args[0] == c {
			return b.Where(c, b.Neg(x.Args[0].Args[1]), y)
		}
		return b.Where(c, x, y) // its folds: a guard's replacement may be masked again
	}), nil
}

// guardOf returns op(g, d) when where(c, x, y) is the zero guard where(g ≠ 0, op(g, d), g)
// of a multiplication or division (ir.Builder.guarded), else nil.
func guardOf(c, x, y *ir.Node) *ir.Node {
	if c.Op != ir.OpNe || c.Args[0] != y || !isZero(c.Args[1]) {
		return nil
	}
	if (x.Op == ir.OpMul || x.Op == ir.OpDiv) && x.Args[0] == y {
		return x
	}
	return nil
}

// isZero reports whether n is the scalar constant 0.
func isZero(n *ir.Node) bool { return n.IsScalarConst() && n.Value[0] == 0 }

// rangeCache computes value ranges (rangeOf) of nodes as they are built, on demand.
type rangeCache map[*ir.Node]ir.Interval

// of is n's interval (NaN aside).
func (rc rangeCache) of(n *ir.Node) ir.Interval {
	if iv, ok := rc[n]; ok {
		return iv
	}
	args := make([]ir.Interval, len(n.Args))
	for i, a := range n.Args {
		args[i] = rc.of(a)
	}
	iv := rangeOf(n, args)
	rc[n] = iv
	return iv
}

// excludesZero reports whether n is never 0 (NaN aside).
func (rc rangeCache) excludesZero(n *ir.Node) bool {
	iv := rc.of(n)
	return iv.Lo > 0 || iv.Hi < 0
}
