package passes

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
)

// ExpOfClamp rewrites e^clamp(x, lo, hi), lo and hi scalar constants and the clamp torch's
// (tie-first min and max: Builder.Clamp), as where(x > hi, e^hi, where(x < lo, e^lo, e^x)):
// the same values (e^x where lo ≤ x ≤ hi, bit for bit; NaN stays NaN) up to the rounding of
// the bounds' exponentials, and e^x is then shared with any other use of it (a ratio
// exp(log_weight) next to exp(log_weight_clip)). The selection is made on x, not on e^x, so
// the gradient is torch.clamp's exactly: e^x·g where lo ≤ x ≤ hi, bounds included, and 0
// beyond them, also at an x a few ulps past a bound whose e^x rounds to e^hi (CISPO's
// clipped tokens get no gradient).
func ExpOfClamp(g *ir.Graph) (*ir.Graph, error) {
	return ir.Rebuild(g, func(b *ir.Builder, n *ir.Node, args []*ir.Node) *ir.Node {
		if n.Op != ir.OpExp || !isConstClamp(args[0]) {
			return nil
		}
		return b.Note(expClamped(b, args[0]), n.Note)
	}), nil
}

// isConstClamp reports whether x is torch's clamp, MinFirst(MaxFirst(y, lo), hi), with scalar
// constant bounds.
func isConstClamp(x *ir.Node) bool {
	return x.Op == ir.OpMin && x.TieFirst && x.Args[1].IsScalarConst() &&
		x.Args[0].Op == ir.OpMax && x.Args[0].TieFirst && x.Args[0].Args[1].IsScalarConst()
}

// expClamped builds e^x for a clamp x (isConstClamp) from e^y; a clamp of a clamp is
// rewritten all the way down.
func expClamped(b *ir.Builder, x *ir.Node) *ir.Node {
	inner := x.Args[0]
	y := inner.Args[0]
	lo, hi := inner.Args[1], x.Args[1]
	var e *ir.Node
	if isConstClamp(y) {
		e = expClamped(b, y)
	} else {
		e = b.Exp(y)
	}
	below := b.Where(b.Lt(y, lo), b.Const(math.Exp(lo.Value[0])), e)
	return b.Where(b.Gt(y, hi), b.Const(math.Exp(hi.Value[0])), below)
}
