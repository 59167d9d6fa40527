package passes_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/passes"
)

// verifyGraph is a small well-formed graph with every role Verify looks at.
func verifyGraph() *ir.Graph {
	b := newBuilder()
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "A"), Differentiable: true})
	v := b.Input(ir.Input{Key: "v", Name: "v", Kind: ir.Float, Shape: b.Shape("B"), Differentiable: true})
	a := b.Input(ir.Input{Key: "a", Name: "a", Kind: ir.Index, Shape: b.Shape("B")})
	beta := b.Input(ir.Input{Key: "beta", Name: "beta", Kind: ir.Float, Shape: b.Shape(), State: true, Init: 1})
	lp := b.Gather(x, a, "A")
	greedy := b.Gather(x, b.ArgMax(x, "A"), "A")
	adv := b.Detach(b.Sub(v, b.Const(1)))
	b.Output("loss", b.Mean(b.Mul(b.Mul(lp, adv), beta), "B"), ir.LossTerm, "", "")
	b.Output("greedy", b.Sum(greedy, "B"), ir.Metric, "", "")
	b.Output("advantage", adv, ir.Estimate, "", "")
	b.Output("beta", b.Mul(beta, b.Const(1.5)), ir.State, "", "")
	b.Output("faults", b.Sum(b.Gt(v, b.Const(0)), "B"), ir.Fault, "", "")
	return b.Graph()
}

// Verify accepts well-formed graphs, autodiff's included, and names what is wrong in each
// broken copy: order, arity, shapes, normal form, gathers and roles.
func TestVerify(t *testing.T) {
	g := verifyGraph()
	_, err := passes.Verify(g)
	require.NoError(t, err)
	fb, err := passes.Run(g, passes.Backward)
	require.NoError(t, err)
	require.NotNil(t, fb.Output("grad.x"))
	node := func(g *ir.Graph, op ir.Op) *ir.Node {
		for _, n := range g.Nodes {
			if n.Op == op {
				return n
			}
		}
		panic(op.String())
	}
	for want, breakIt := range map[string]func(g *ir.Graph){
		"numbered 1 at position 0": func(g *ir.Graph) { g.Nodes[0], g.Nodes[1] = g.Nodes[1], g.Nodes[0] },
		"1 arguments; sub takes 2": func(g *ir.Graph) { n := node(g, ir.OpSub); n.Args = n.Args[:1] },
		"which is not an earlier node": func(g *ir.Graph) {
			n := node(g, ir.OpSub)
			n.Args[1] = g.Nodes[len(g.Nodes)-1]
		},
		"shape [B=3 A=4]; its arguments make [B=3]": func(g *ir.Graph) { n := node(g, ir.OpGather); n.Shape = n.Args[0].Shape },
		"shape [A=4]; its arguments make [B=3]":     func(g *ir.Graph) { node(g, ir.OpSub).Shape = ir.Shape{{Name: "A", Size: 4}} },
		"reduces no axis":                           func(g *ir.Graph) { node(g, ir.OpMean).Axes = nil },
		"compute the same values": func(g *ir.Graph) {
			n := node(g, ir.OpGt)
			n.Op = ir.OpSub // now sub(v, 0)... of the same constant as the estimate's sub(v, 1)
			n.Args[1] = node(g, ir.OpSub).Args[1]
		},
		"an op of constants, not folded": func(g *ir.Graph) {
			n := node(g, ir.OpSub)
			n.Args[0], n.Shape = n.Args[1], ir.Shape{}
		},
		"no output depends on it": func(g *ir.Graph) { g.Outputs = g.Outputs[1:] },
		"carries no gradient": func(g *ir.Graph) {
			n := node(g, ir.OpDetach)
			n.Args[0] = node(g, ir.OpSub).Args[1]
			n.Shape = ir.Shape{}
		},
		"neither an index input nor an argmax": func(g *ir.Graph) { node(g, ir.OpArgMax).Op = ir.OpRMax },
		"output loss: declared twice":          func(g *ir.Graph) { g.Outputs[1].Name = "loss" },
		"output advantage (estimate): carries a gradient": func(g *ir.Graph) {
			g.Output("advantage").Node = node(g, ir.OpSub)
		},
		"output gamma (state): not a scalar with a state input of its name": func(g *ir.Graph) { g.Output("beta").Name = "gamma" },
		"output faults (fault): a count of shape [A=4]":                     func(g *ir.Graph) { g.Output("faults").Node = node(g, ir.OpIota) },
		"output grad.x (gradient): shape [B=3]; the input is [B=3 A=4]": func(g *ir.Graph) {
			g.Output("grad.x").Node = node(g, ir.OpGather)
		},
		"output grad.a (gradient): not grad.<x> of a differentiable input": func(g *ir.Graph) { g.Output("grad.x").Name = "grad.a" },
	} {
		t.Run(want, func(t *testing.T) {
			c := fb.Clone()
			breakIt(c)
			_, err := passes.Verify(c)
			require.ErrorContains(t, err, want)
		})
	}
}
