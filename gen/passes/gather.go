package passes

import "github.com/lossgen/lossgen/gen/ir"

// GatherPushdown moves gathers through elementwise ops: gather(f(x, y), i) = f(gather(x, i),
// y') where an argument without the gathered axis is used as it is. A gather then always
// reads an input or a stored tensor at the selected index, so log_softmax(z)[action] costs a
// read of z[action] and the row's logsumexp, not a stored [*batch, A] tensor.
func GatherPushdown(g *ir.Graph) (*ir.Graph, error) {
	return ir.Rebuild(g, func(b *ir.Builder, n *ir.Node, args []*ir.Node) *ir.Node {
		if n.Op != ir.OpGather {
			return nil
		}
		return push(b, args[0], args[1], n.Axes[0])
	}), nil
}

func push(b *ir.Builder, x, idx *ir.Node, axis string) *ir.Node {
	if x.Op.Class() != ir.Elementwise {
		return b.Gather(x, idx, axis)
	}
	args := make([]*ir.Node, len(x.Args))
	for i, a := range x.Args {
		args[i] = a
		if a.Shape.Has(axis) {
			args[i] = push(b, a, idx, axis)
		}
	}
	return b.Copy(x, args)
}
