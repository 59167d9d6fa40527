package passes

import "github.com/lossgen/lossgen/gen/ir"

// CustomGrads replaces every custom_grad(y, x, d) by y. A forward kernel needs only the
// value, and ForwardBackward's graph has used d once autodiff has run: without the node, no
// backend computes a derivative nothing reads.
func CustomGrads(g *ir.Graph) (*ir.Graph, error) {
	has := false
	for _, n := range g.Nodes {
		has = has || n.Op == ir.OpCustomGrad
	}
	if !has {
		return g, nil
	}
	return ir.Rebuild(g, func(b *ir.Builder, n *ir.Node, args []*ir.Node) *ir.Node {
		if n.Op != ir.OpCustomGrad {
			return nil
		}
		return b.Note(args[0], n.Note)
	}), nil
}
