package passes

import (
	"fmt"

	"github.com/lossgen/lossgen/gen/ir"
)

// Verify checks what every pass and backend assumes of a graph, and returns it unchanged:
//
//   - order and arity: nodes are numbered by position, read only earlier nodes, and have
//     their op's number of arguments;
//   - shapes: every shape is a sub-sequence of the graph's dims, and each node's is what its
//     op makes of its arguments' (broadcast by name, reduced, gathered);
//   - normal form: no two nodes compute the same thing, no elementwise op of constants is
//     left unfolded, every node but an input feeds an output, and a detach wraps only a
//     value that could carry a gradient (ir.Builder keeps all of this);
//   - gathers: an index is an index input (possibly masked, ir.GatherIndex), whose range
//     the kernels check, or an argmax along an axis no longer than the gathered one;
//   - roles: output names are unique; a gradient is grad.<x> of x's shape for a
//     differentiable input x, a state output has a state input of its name, a fault count
//     is a scalar, and an estimator's result carries no gradient (TorchRL computes it
//     under no_grad: a loss reads it through a detach).
//
// A violation is a bug in lowering or in a pass; the error names the node or output.
func Verify(g *ir.Graph) (*ir.Graph, error) {
	if err := verifyOutputs(g); err != nil {
		return nil, err
	}
	keys := map[string]*ir.Node{}
	for i, n := range g.Nodes {
		if err := verifyNode(g, i, n); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if m := keys[n.Key()]; m != nil {
			return nil, fmt.Errorf("%s and %s compute the same values", m, n)
		}
		keys[n.Key()] = n
	}
	live := map[*ir.Node]bool{}
	for _, o := range g.Outputs {
		live[o.Node] = true
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		if live[g.Nodes[i]] {
			for _, a := range g.Nodes[i].Args {
				live[a] = true
			}
		}
	}
	for _, n := range g.Nodes {
		if !live[n] && n.Op != ir.OpInput {
			return nil, fmt.Errorf("%s: no output depends on it", n)
		}
	}
	return g, nil
}

// verifyNode checks node n at position i.
func verifyNode(g *ir.Graph, i int, n *ir.Node) error {
	if n.ID != i {
		return fmt.Errorf("numbered %d at position %d", n.ID, i)
	}
	if len(n.Args) != n.Op.Arity() {
		return fmt.Errorf("%d arguments; %s takes %d", len(n.Args), n.Op, n.Op.Arity())
	}
	for _, a := range n.Args {
		if a.ID >= i || g.Nodes[a.ID] != a {
			return fmt.Errorf("reads v%d, which is not an earlier node of the graph", a.ID)
		}
	}
	if !n.Shape.SubOf(ir.Shape(g.Dims)) {
		return fmt.Errorf("shape %s is not in the graph's dims %s", n.Shape, ir.Shape(g.Dims))
	}
	if err := verifyShape(g, n); err != nil {
		return err
	}
	switch {
	case n.Op.Class() == ir.Elementwise && n.Op != ir.OpBroadcast && n.Op != ir.OpDetach && allScalarConsts(n.Args):
		return fmt.Errorf("an op of constants, not folded")
	case n.Op == ir.OpDetach && !mayCarryGradient(n.Args[0]):
		return fmt.Errorf("detaches v%d, which carries no gradient", n.Args[0].ID)
	case n.Op == ir.OpGather:
		return verifyGatherIndex(n)
	}
	return nil
}

func allScalarConsts(args []*ir.Node) bool {
	for _, a := range args {
		if !a.IsScalarConst() {
			return false
		}
	}
	return true
}

// mayCarryGradient is false for the values ir.Builder.Detach returns as they are.
func mayCarryGradient(x *ir.Node) bool {
	switch x.Op {
	case ir.OpConst, ir.OpIota, ir.OpDetach:
		return false
	case ir.OpInput:
		return x.Input.Differentiable
	}
	return true
}

// verifyGatherIndex checks that gather n's index is range-checked or in range by
// construction: an argmax the value-range analysis keeps within the gathered axis.
func verifyGatherIndex(n *ir.Node) error {
	if _, ok := ir.GatherIndex(n); ok {
		return nil
	}
	idx, x := n.Args[1], n.Args[0]
	size := x.Shape[x.Shape.Index(n.Axes[0])].Size
	if idx.Op == ir.OpArgMax && rangeOf(idx, nil).Within(0, float64(size-1)) {
		return nil
	}
	return fmt.Errorf("its index v%d is neither an index input nor an argmax within the %d elements of %s", idx.ID, size, n.Axes[0])
}
