// Package passes holds the IR passes that run between lowering and planning: each takes a
// finished graph and returns a new one (ir.Rebuild, ir.Extend), so every backend gets their
// result at once. Like avo's pass.Compile, the pipeline is a plain list run in order; a pass
// returns an error rather than panicking.
package passes

import (
	"fmt"

	"github.com/lossgen/lossgen/gen/ir"
)

// Pass is one graph-to-graph function.
type Pass struct {
	Name string
	Run  func(*ir.Graph) (*ir.Graph, error)
}

// Forward is the pipeline every kernel's forward graph runs through.
var Forward = []Pass{
	{"gather-pushdown", GatherPushdown},
}

// Backward turns a forward graph (after Forward) into ForwardBackward's: the gradients, then
// the same clean-ups on what they added.
var Backward = []Pass{
	{"autodiff", Autodiff},
	{"gather-pushdown", GatherPushdown},
}

// Run applies ps in order.
func Run(g *ir.Graph, ps []Pass) (*ir.Graph, error) {
	for _, p := range ps {
		var err error
		if g, err = p.Run(g); err != nil {
			return nil, fmt.Errorf("pass %s: %w", p.Name, err)
		}
	}
	return g, nil
}

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
