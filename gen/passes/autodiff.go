package passes

import (
	"fmt"

	"github.com/lossgen/lossgen/gen/ir"
)

// GradPrefix starts the name of every gradient output: grad.<input data name>.
const GradPrefix = "grad."

// Autodiff adds, for every differentiable input x, the output grad.<x>: the gradient with
// respect to x of the sum of every element of every loss-term output (TorchRL users sum the
// loss_* values and call backward; with reduction "none" that is the sum of the elements).
// Reverse mode over the graph with ir's per-op rules; it stops where TorchRL detaches
// (OpDetach: estimator results, normalisation statistics, targets), at constants and at
// inputs that are not differentiable. Gradients are ordinary nodes, so the planner fuses them
// into the passes that read the same inputs, and every backend computes them.
func Autodiff(g *ir.Graph) (*ir.Graph, error) {
	b := ir.Extend(g)
	nodes := append([]*ir.Node(nil), b.Nodes()...)
	b.MarkBounded(boundedNodes(nodes))
	requires := gradientFlow(&ir.Graph{Nodes: nodes})
	// adj[n] is the gradient with respect to n's value. It may have fewer dims than n, meaning
	// it is the same along the others (a loss term's 1, a mean's 1/n).
	adj := map[*ir.Node]*ir.Node{}
	// accumulate adds contribution c to n's gradient; over is the shape c stands for: the
	// consumer's, when n was broadcast into an elementwise op. Over the dims n lacks it is
	// summed: by a reduction where c has the dim, by the dim's extent where c is the same
	// along it.
	accumulate := func(n, c *ir.Node, over ir.Shape) {
		var sum []string
		for _, d := range over {
			switch {
			case n.Shape.Has(d.Name):
			case c.Shape.Has(d.Name):
				sum = append(sum, d.Name)
			default:
				c = b.Mul(c, b.Const(float64(d.Size)))
			}
		}
		if len(sum) > 0 {
			c = b.Sum(c, sum...)
		}
		if old := adj[n]; old != nil {
			c = b.Add(old, c)
		}
		adj[n] = c
	}
	for _, o := range b.Outputs() {
		if o.Role == ir.LossTerm && requires[o.Node] {
			accumulate(o.Node, b.Const(1), o.Node.Shape)
		}
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		g := adj[n]
		if g == nil || !requires[n] || n.Op == ir.OpInput {
			continue
		}
		contribs, err := ir.ApplyVJP(b, n, g)
		if err != nil {
			return nil, fmt.Errorf("autodiff: %w", err)
		}
		for j, c := range contribs {
			if c != nil && requires[n.Args[j]] {
				over := n.Args[j].Shape // a reduction's or gather's rule gives its argument's shape
				if n.Op.Class() == ir.Elementwise {
					over = n.Shape
				}
				accumulate(n.Args[j], c, over)
			}
		}
	}
	for _, in := range b.Inputs() {
		if !in.Differentiable {
			continue
		}
		x := b.InputNode(in.Name)
		grad := adj[x]
		if grad == nil {
			grad = b.Const(0) // no loss term reads it
		}
		b.Output(GradPrefix+in.Name, b.Broadcast(grad, in.Shape), ir.Gradient,
			"gradient of the summed loss_* outputs with respect to "+in.Name+" ("+in.Doc+")", "lossgen autodiff (PyTorch's rules at kinks)")
	}
	return b.Graph(), nil
}
