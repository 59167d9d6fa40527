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
//   - where(m, f(where(m, x, y), ...), z) is where(m, f(x, ...), z) for elementwise f that
//     nothing else reads (a gradient masked again after a sign flip or a sum of masked
//     terms).
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
	private := map[*ir.Node]bool{} // rebuilt nodes whose one original has one reader
	return ir.Rebuild(g, func(b *ir.Builder, n *ir.Node, args []*ir.Node) *ir.Node {
		m := rewriteGuard(b, rc, n, args, private)
		if m == nil {
			m = b.Copy(n, args)
		}
		if _, seen := private[m]; !seen {
			private[m] = uses[n] == 1
		} else {
			private[m] = false // two originals merged into one
		}
		return m
	}), nil
}

// rewriteGuard is GradientGuards' replacement of n (rebuilt on args), or nil.
func rewriteGuard(b *ir.Builder, rc rangeCache, n *ir.Node, args []*ir.Node, private map[*ir.Node]bool) *ir.Node {
	if n.Op != ir.OpWhere {
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
	return b.Where(c, assume(b, x, c, private, 8), y)
}

// assume rebuilds x as it is where c holds: a selection by c inside it is its first branch.
// It rebuilds only elementwise nodes that nothing but x's selection reads (private), so no
// value is computed twice, to depth levels.
func assume(b *ir.Builder, x, c *ir.Node, private map[*ir.Node]bool, depth int) *ir.Node {
	if x.Op == ir.OpWhere && x.Args[0] == c {
		return assume(b, x.Args[1], c, private, depth)
	}
	if depth == 0 || !private[x] || x.Op.Class() != ir.Elementwise || x.Op == ir.OpBroadcast || x.Op == ir.OpDetach || x.Op == ir.OpCustomGrad {
		return x
	}
	args := make([]*ir.Node, len(x.Args))
	changed := false
	for i, a := range x.Args {
		args[i] = assume(b, a, c, private, depth-1)
		changed = changed || args[i] != a
	}
	if !changed {
		return x
	}
	m := b.Copy(x, args)
	_, existed := private[m] // merged with a node built before: others may read it
	private[m] = !existed
	return m
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
