package passes

import (
	"fmt"
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
)

// verifyOutputs checks the outputs' names, nodes and roles (Verify).
func verifyOutputs(g *ir.Graph) error {
	inputs := map[string]*ir.Input{}
	for _, in := range g.Inputs {
		inputs[in.Name] = in
	}
	requires := gradientFlow(g)
	seen := map[string]bool{}
	for _, o := range g.Outputs {
		if seen[o.Name] {
			return fmt.Errorf("output %s: declared twice", o.Name)
		}
		seen[o.Name] = true
		if o.Node.ID >= len(g.Nodes) || g.Nodes[o.Node.ID] != o.Node {
			return fmt.Errorf("output %s: v%d is not a node of the graph", o.Name, o.Node.ID)
		}
		if err := verifyRole(o, inputs, requires); err != nil {
			return fmt.Errorf("output %s (%s): %w", o.Name, o.Role, err)
		}
	}
	return nil
}

// verifyRole checks what output o's role asks of it.
func verifyRole(o *ir.Output, inputs map[string]*ir.Input, requires map[*ir.Node]bool) error {
	switch o.Role {
	case ir.Gradient:
		name, ok := strings.CutPrefix(o.Name, GradPrefix)
		if x := inputs[name]; !ok || x == nil || !x.Differentiable {
			return fmt.Errorf("not %s<x> of a differentiable input x", GradPrefix)
		}
		if x := inputs[name]; !o.Node.Shape.Equal(x.Shape) {
			return fmt.Errorf("shape %s; the input is %s", o.Node.Shape, x.Shape)
		}
	case ir.State:
		if x := inputs[o.Name]; x == nil || !x.State || len(o.Node.Shape) != 0 {
			return fmt.Errorf("not a scalar with a state input of its name")
		}
	case ir.Fault:
		if len(o.Node.Shape) != 0 {
			return fmt.Errorf("a count of shape %s, not a scalar", o.Node.Shape)
		}
	case ir.Estimate:
		if requires[o.Node] {
			return fmt.Errorf("carries a gradient; an estimator's result is detached")
		}
	}
	return nil
}

// gradientFlow marks the nodes a gradient reaches from a differentiable input: what
// autodiff differentiates (it stops at detaches, constants and iotas).
func gradientFlow(g *ir.Graph) map[*ir.Node]bool {
	requires := map[*ir.Node]bool{}
	for _, n := range g.Nodes {
		switch n.Op {
		case ir.OpInput:
			requires[n] = n.Input.Differentiable
		case ir.OpDetach, ir.OpConst, ir.OpIota:
		default:
			for _, a := range n.Args {
				requires[n] = requires[n] || requires[a]
			}
		}
	}
	return requires
}
