package passes_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/passes"
)

// The gradient-guards pass drops zero guards that cannot act and changes no value, bit for
// bit. The graph is a masked per-row mean of exp(x) (every valid element's seed is
// 1/(B·max(count, 1)) ≠ 0, so the guard of exp's derivative is the mask), plus an entropy-like
// softmax term Σ p·x / Σ e whose seeds divide by the softmax's denominator (≥ 1, so ≠ 0).
// Inputs carry what breaks a wrong rewrite: garbage and NaN at masked elements, an
// all-masked row, an exp that overflows in float32 (its gradient is +inf, not NaN), a −inf
// logit.
func TestGradientGuards(t *testing.T) {
	build := func() *ir.Graph {
		b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "B", Size: 3}, {Name: "A", Size: 4}}, []string{"B"})
		x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "A"), Differentiable: true})
		m := b.Input(ir.Input{Key: "m", Name: "m", Kind: ir.Bool, Shape: b.Shape("B", "A")})
		zero, one := b.Const(0), b.Const(1)
		xm := b.Where(m, x, zero)
		count := b.Max(b.Sum(b.Where(m, one, zero), "A"), one)
		rowMean := b.Div(b.Sum(b.Where(m, b.Exp(xm), zero), "A"), count)
		b.Output("loss_mean", b.Mean(rowMean, "B"), ir.LossTerm, "", "")
		s := b.Sub(x, b.Detach(b.ReduceMax(x, "A")))
		e := b.Exp(s)
		den := b.Sum(e, "A")
		ent := b.Div(b.Sum(b.Mul(e, b.MaxFirst(s, b.Const(-math.MaxFloat32))), "A"), den)
		b.Output("loss_entropy", b.Mean(ent, "B"), ir.LossTerm, "", "")
		return b.Graph()
	}
	ad, err := passes.Autodiff(build())
	require.NoError(t, err)
	ad, err = passes.CustomGrads(ad)
	require.NoError(t, err)
	gg, err := passes.GradientGuards(ad)
	require.NoError(t, err)
	guards := func(g *ir.Graph) int {
		n := 0
		for _, x := range g.Nodes {
			if x.Op == ir.OpNe && x.Args[1].IsScalarConst() && x.Args[1].Value[0] == 0 {
				n++
			}
		}
		return n
	}
	require.NotZero(t, guards(ad), "autodiff guards exp's derivative and the divisions")
	require.Zero(t, guards(gg), "every seed here is nonzero or masked")
	for _, x := range gg.Nodes {
		if x.Op == ir.OpWhere && x.Args[1].Op == ir.OpWhere {
			require.NotSame(t, x.Args[0], x.Args[1].Args[0], "%s selects by its condition twice", x)
		}
	}

	nan, inf := math.NaN(), math.Inf(1)
	for _, in := range []map[string][]float64{
		{"x": {0.5, -1, 2, 3, 7, nan, inf, -3, 100, 0, 1, -inf}, "m": {1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0}},
		{"x": {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, "m": {0, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 1}},
		{"x": {-inf, 0, 1e30, -1e30, 95, 95, 1, 2, 0.1, 0.2, 0.3, 0.4}, "m": {1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
	} {
		want, got := run(t, ad, in), run(t, gg, in)
		for name, w := range want {
			for i := range w {
				require.Equal(t, math.Float64bits(w[i]), math.Float64bits(got[name][i]), "%s[%d]: %v, rewritten %v", name, i, w[i], got[name][i])
			}
		}
	}
	// exp(95) overflows float32: the valid element's gradient is +inf, as float64's rounded.
	got := run(t, gg, map[string][]float64{"x": {-inf, 0, 1e30, -1e30, 95, 95, 1, 2, 0.1, 0.2, 0.3, 0.4}, "m": {1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1}})
	require.True(t, math.IsInf(got["grad.x"][4], 1), "%v", got["grad.x"][4])
}

// Inside where(m, ·, z), a selection by m of a value nothing else reads is its first branch:
// where(m, −where(m, x, 0) + where(m, y, 0), 0) is where(m, −x + y, 0), the same values bit
// for bit (garbage and NaN at masked elements included); a term another output reads keeps
// its selection.
func TestGradientGuardsSelectOnce(t *testing.T) {
	b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "B", Size: 4}}, []string{"B"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B")})
	y := b.Input(ir.Input{Key: "y", Name: "y", Kind: ir.Float, Shape: b.Shape("B")})
	m := b.Input(ir.Input{Key: "m", Name: "m", Kind: ir.Bool, Shape: b.Shape("B")})
	zero := b.Const(0)
	shared := b.Exp(b.Where(m, y, zero))
	b.Output("out", b.Where(m, b.Add(b.Neg(b.Where(m, x, zero)), b.Where(m, y, zero)), zero), ir.Metric, "", "")
	b.Output("shared", b.Where(m, b.Mul(shared, x), zero), ir.Metric, "", "")
	b.Output("alsoShared", shared, ir.Metric, "", "")
	g := b.Graph()
	gg, err := passes.GradientGuards(g)
	require.NoError(t, err)
	out := gg.Output("out").Node
	require.Equal(t, ir.OpWhere, out.Op)
	require.Equal(t, ir.OpAdd, out.Args[1].Op)
	isInput := func(n *ir.Node, name string) bool { return n.Op == ir.OpInput && n.Input.Name == name }
	require.True(t, isInput(out.Args[1].Args[0].Args[0], "x"), "−where(m, x, 0) is −x under m")
	require.True(t, isInput(out.Args[1].Args[1], "y"), "where(m, y, 0) is y under m")
	require.Same(t, gg.Output("alsoShared").Node, gg.Output("shared").Node.Args[1].Args[0], "a value another output reads is not rebuilt")
	nan := math.NaN()
	in := map[string][]float64{"x": {1, nan, 3, -2}, "y": {0.5, 7, math.Inf(1), math.Copysign(0, -1)}, "m": {1, 0, 0, 1}}
	want, got := run(t, g, in), run(t, gg, in)
	for name, w := range want {
		for i := range w {
			require.Equal(t, math.Float64bits(w[i]), math.Float64bits(got[name][i]), "%s[%d]", name, i)
		}
	}
}
