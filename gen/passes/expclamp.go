package passes

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
)

// ExpOfClamp rewrites e^clamp(x, lo, hi), lo and hi scalar constants, as the clamp of e^x to
// e^lo, e^hi: the same values (exp is monotone, NaN stays NaN) up to the rounding of the
// bounds, with the same tie rule at each bound, and e^x is then shared with any other use
// of it (a ratio exp(log_weight) next to exp(log_weight_clip)).
func ExpOfClamp(g *ir.Graph) (*ir.Graph, error) {
	return ir.Rebuild(g, func(b *ir.Builder, n *ir.Node, args []*ir.Node) *ir.Node {
		if n.Op != ir.OpExp || !isConstClamp(args[0]) {
			return nil
		}
		return b.Note(expClamped(b, args[0]), n.Note)
	}), nil
}

// isConstClamp reports whether x is min(max(y, lo), hi) with scalar constant bounds.
func isConstClamp(x *ir.Node) bool {
	return x.Op == ir.OpMin && x.Args[1].IsScalarConst() && x.Args[0].Op == ir.OpMax && x.Args[0].Args[1].IsScalarConst()
}

// expClamped builds e^x for a clamp x (isConstClamp) as the clamp of e^y; a clamp of a
// clamp is rewritten all the way down.
func expClamped(b *ir.Builder, x *ir.Node) *ir.Node {
	inner := x.Args[0]
	lo, hi := inner.Args[1].Value[0], x.Args[1].Value[0]
	upper, lower := b.Min, b.Max
	if inner.TieFirst {
		lower = b.MaxFirst
	}
	if x.TieFirst {
		upper = b.MinFirst
	}
	var e *ir.Node
	if isConstClamp(inner.Args[0]) {
		e = expClamped(b, inner.Args[0])
	} else {
		e = b.Exp(inner.Args[0])
	}
	return upper(lower(e, b.Const(math.Exp(lo))), b.Const(math.Exp(hi)))
}
