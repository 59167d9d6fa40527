package passes_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/passes"
)

// Forward and Pipeline both start with Prepare; Pipeline is Prepare then Backward, which
// starts with autodiff; in each list a verify follows the last rewrite, and the analyses
// come after it (a rewrite drops the facts).
func TestPipelineOrder(t *testing.T) {
	names := func(ps []passes.Pass) (out []string) {
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	require.Equal(t, names(passes.Prepare), names(passes.Forward[:len(passes.Prepare)]))
	require.Equal(t, names(passes.Prepare), names(passes.Pipeline[:len(passes.Prepare)]))
	require.Equal(t, names(passes.Backward), names(passes.Pipeline[len(passes.Prepare):]))
	require.Equal(t, "autodiff", passes.Backward[0].Name)
	require.Equal(t, "verify", passes.Pipeline[0].Name, "lowering's graph is checked first")
	for _, half := range [][]passes.Pass{passes.Forward, passes.Backward} {
		var analyses []string
		checked := false
		for _, p := range half {
			switch p.Kind {
			case passes.Rewrite:
				require.Empty(t, analyses, "%s after the analyses %v", p.Name, analyses)
				checked = false
			case passes.Check:
				checked = true
			case passes.Analysis:
				require.True(t, checked, "%s on an unverified rewrite", p.Name)
				require.NotNil(t, p.Report, p.Name)
				analyses = append(analyses, p.Name)
			}
		}
		require.Equal(t, []string{"value-range", "logsumexp-pairs"}, analyses)
	}
}

// newBuilder starts a graph over B=3 (batch) and A=4.
func newBuilder() *ir.Builder {
	return ir.NewBuilder(ir.F64, []ir.Dim{{Name: "B", Size: 3}, {Name: "A", Size: 4}}, []string{"B"})
}

// exp(clamp(x, lo, hi)) becomes where(x > hi, e^hi, where(x < lo, e^lo, exp(x))), sharing
// the graph's exp(x), with the exp's note; values agree up to the rounding of the bounds,
// NaN included, a clamp of a clamp is rewritten all the way down, and the gradient is the
// clamp's: e^x inside [lo, hi], bounds included, 0 beyond, also an ulp past a bound (CISPO's
// clipped tokens, where a clamp of e^x would tie with e^hi and pass the gradient).
func TestExpOfClamp(t *testing.T) {
	b := newBuilder()
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B"), Differentiable: true})
	c := b.Clamp(x, b.Const(-0.5), b.Const(0.25))
	b.Output("e", b.Note(b.Exp(c), "ratio_clip"), ir.LossTerm, "", "")
	b.Output("r", b.Exp(x), ir.Metric, "", "")
	b.Output("n", b.Exp(b.Clamp(c, b.Const(-1), b.Const(0))), ir.Metric, "", "")
	g, err := passes.ExpOfClamp(b.Graph())
	require.NoError(t, err)
	_, err = passes.Verify(g)
	require.NoError(t, err)
	e, r := g.Output("e").Node, g.Output("r").Node
	require.Equal(t, ir.OpWhere, e.Op)
	require.Equal(t, ir.OpGt, e.Args[0].Op, "selected on x > hi")
	require.Equal(t, "x", e.Args[0].Args[0].Input.Name)
	require.Equal(t, math.Exp(0.25), e.Args[1].Value[0])
	below := e.Args[2]
	require.Equal(t, ir.OpLt, below.Args[0].Op, "then on x < lo")
	require.Equal(t, math.Exp(-0.5), below.Args[1].Value[0])
	require.Same(t, r, below.Args[2], "else the graph's exp(x)")
	require.Equal(t, "ratio_clip", e.Note)
	exps := 0
	for _, n := range g.Nodes {
		if n.Op == ir.OpExp {
			exps++
			require.Equal(t, ir.OpInput, n.Args[0].Op, "every exp is of x: %s", n)
		}
	}
	require.Equal(t, 1, exps)
	hi1 := math.Nextafter(0.25, 1)
	in := map[string][]float64{"x": {-2, 0.1, math.NaN()}}
	got := run(t, g, in)
	require.InDeltaSlice(t, []float64{math.Exp(-0.5), math.Exp(0.1)}, got["e"][:2], 1e-15)
	require.True(t, math.IsNaN(got["e"][2]), "NaN stays NaN")
	require.InDeltaSlice(t, []float64{math.Exp(-0.5), 1}, got["n"][:2], 1e-15, "clamped to [−0.5, 0]")
	fb, err := passes.Autodiff(g)
	require.NoError(t, err)
	got = run(t, fb, map[string][]float64{"x": {0.25, hi1, -0.5}})
	require.Equal(t, []float64{math.Exp(0.25), 0, math.Exp(-0.5)}, got["grad.x"], "torch.clamp's gradient: bounds pass it, an ulp past them does not")
}

// expm1_minus_x's derivative is e^x − 1: the value plus x, and −1 where x < −40 (at −∞ the
// sum would be ∞ − ∞); NaN stays NaN.
func TestExpM1MinusXGradient(t *testing.T) {
	b := ir.NewBuilder(ir.F64, []ir.Dim{{Name: "B", Size: 7}}, []string{"B"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B"), Differentiable: true})
	b.Output("k3", b.Sum(b.ExpM1MinusX(x), "B"), ir.LossTerm, "", "")
	fb, err := passes.Autodiff(b.Graph())
	require.NoError(t, err)
	xs := []float64{math.Inf(-1), -50, -1, 0, 1e-3, 2, math.NaN()}
	got := run(t, fb, map[string][]float64{"x": xs})["grad.x"]
	for i, v := range xs[:6] {
		require.InDelta(t, math.Expm1(v), got[i], 1e-15*max(1, math.Abs(math.Expm1(v))), "x = %v", v)
	}
	require.True(t, math.IsNaN(got[6]))
}
