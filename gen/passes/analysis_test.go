package passes_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/passes"
)

// Intervals by hand: GAE's and V-trace's scan coefficients are within [0, 1]; an iota and an
// argmax within their axis; 0·∞ at a corner, a float input and ops the analysis does not
// model are unbounded.
func TestValueRange(t *testing.T) {
	b := newBuilder()
	done := b.Input(ir.Input{Key: "done", Name: "done", Kind: ir.Bool, Shape: b.Shape("B")})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "A")})
	notDone := b.Sub(b.Const(1), done)
	count := b.Sum(b.Where(done, b.Const(1), b.Const(0)), "B")
	gae := b.Mul(b.Const(0.95*0.99), notDone)
	vtrace := b.Mul(b.Mul(b.Const(0.99), notDone), b.Min(b.Exp(b.Detach(x)), b.Const(1)))
	outs := map[string]*ir.Node{
		"gae": gae, "vtrace": vtrace, "iota": b.Iota("A", false), "argmax": b.ArgMax(x, "A"),
		"corner": b.Mul(done, b.Exp(x)), "x": x, "log": b.Log(b.Add(done, b.Const(1))),
		"shift": b.Add(b.Max(done, b.Const(-2)), b.Const(0.5)), "table": b.ConstTensor(b.Shape("A"), []float64{3, -1, 2, 0}),
		"expDone": b.Exp(done),
		"shifted": b.Sub(x, b.Detach(b.ReduceMax(x, "A"))), "softmaxNum": b.Exp(b.Sub(x, b.ReduceMax(x, "A"))),
		"notShifted": b.Sub(x, b.ReduceMax(b.Neg(x), "A")), "shiftedUp": b.Sub(b.ReduceMax(x, "A"), x),
		"count": count, "seed": b.Div(b.Const(0.125), b.Max(count, b.Const(1))), "recip": b.Div(b.Const(1), x),
		"softmaxDen": b.Sum(b.Exp(b.Sub(x, b.ReduceMax(x, "A"))), "A"), "negated": b.Neg(b.Sub(x, b.ReduceMax(x, "A"))),
		"select": b.Where(done, b.Const(2), b.Const(-1)), "less": b.Lt(x, b.Const(0)), "meanDone": b.Mean(done, "B"),
	}
	for name, n := range outs {
		b.Output(name, n, ir.Metric, "", "")
	}
	g, err := passes.ValueRange(b.Graph())
	require.NoError(t, err)
	inf := math.Inf(1)
	seedLo := 0.125 * (1 / (3 * (1 + 3*0x1p-23)))
	for name, want := range map[string]ir.Interval{
		"gae": {Lo: 0, Hi: 0.95 * 0.99}, "vtrace": {Lo: 0, Hi: 0.99}, "iota": {Lo: 0, Hi: 3}, "argmax": {Lo: 0, Hi: 3},
		"corner": {Lo: -inf, Hi: inf}, "x": {Lo: -inf, Hi: inf}, "log": {Lo: -inf, Hi: inf},
		"shift": {Lo: 0.5, Hi: 1.5}, "table": {Lo: -1, Hi: 3},
		"expDone": {Lo: 0, Hi: math.Exp(1) * (1 + 0x1p-20)}, // the kernels' exp may be an ulp above e^x
		// x − max x ≤ 0, so a softmax's numerators are within [0, 1]; the max of another
		// tensor, or the difference the other way, bounds nothing.
		"shifted": {Lo: -inf, Hi: 0}, "softmaxNum": {Lo: 0, Hi: 1 + 0x1p-20},
		"notShifted": {Lo: -inf, Hi: inf}, "shiftedUp": {Lo: -inf, Hi: inf},
		// A sum of 3 values within [0, 1], widened by float32 rounding; a division by it
		// (past a max with 1) is nonzero, one by anything of either sign bounds nothing.
		"count": {Lo: 0, Hi: 3 * (1 + 3*0x1p-23)}, "recip": {Lo: -inf, Hi: inf},
		"seed": {Lo: seedLo - seedLo*0x1p-23, Hi: 0.125 * (1 + 0x1p-23)},
		// A softmax's denominator holds e^0 = 1 for its maximal element.
		"softmaxDen": {Lo: 1, Hi: 4 * (1 + 0x1p-20) * (1 + 4*0x1p-23)}, "negated": {Lo: 0, Hi: inf},
		"select": {Lo: -1, Hi: 2}, "less": {Lo: 0, Hi: 1}, "meanDone": {Lo: 0, Hi: 1 + 3*0x1p-23},
	} {
		require.Equal(t, want, g.Range(g.Output(name).Node), name)
	}
	require.True(t, g.Range(g.Output("vtrace").Node).Within(-1, 1))
	require.False(t, g.Range(g.Output("x").Node).Within(-1, 1))
}

// A rewrite drops the facts of the graph it started from; a backend handed a graph without
// them is told which analysis to run.
func TestFactsBelongToOneGraph(t *testing.T) {
	b := newBuilder()
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B")})
	b.Output("y", b.Exp(x), ir.Metric, "", "")
	g, err := passes.Run(b.Graph(), passes.Forward)
	require.NoError(t, err)
	require.Equal(t, ir.Interval{Lo: 0, Hi: math.Inf(1)}, g.Range(g.Output("y").Node))
	re, err := passes.GatherPushdown(g)
	require.NoError(t, err)
	require.Nil(t, re.Facts)
	require.Nil(t, g.Clone().Facts)
	require.PanicsWithValue(t, "ir: the graph has no value-range facts: run it through passes.Forward or passes.Backward",
		func() { re.Range(re.Output("y").Node) })
	require.Panics(t, func() { g.Range(re.Output("y").Node) }, "a node of another graph")
}

// Twins: the logsumexp of 2·x (either operand order) over the same axes as one of x; not
// over other axes, and not when the base is itself a twin. Shared exps: the graph's exp of
// a logsumexp's argument.
func TestLogSumExpPairs(t *testing.T) {
	b := newBuilder()
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "A")})
	two := b.Const(2)
	outs := map[string]*ir.Node{
		"base": b.LogSumExp(x, "B"), "twin": b.LogSumExp(b.Mul(two, x), "B"),
		"otherAxes": b.LogSumExp(b.Mul(x, two), "B", "A"), "twinA": b.LogSumExp(b.Mul(x, two), "A"),
		"twinOfTwin": b.LogSumExp(b.Mul(two, b.Mul(two, x)), "B"),
		"ratio":      b.Exp(x), "lseA": b.LogSumExp(x, "A"),
	}
	for name, n := range outs {
		b.Output(name, n, ir.Metric, "", "")
	}
	g, err := passes.LogSumExpPairs(b.Graph())
	require.NoError(t, err)
	out := func(name string) *ir.Node { return g.Output(name).Node }
	require.Same(t, out("base"), g.Twin(out("twin")))
	require.Nil(t, g.Twin(out("otherAxes")), "no logsumexp of x over B and A")
	require.Same(t, out("lseA"), g.Twin(out("twinA")), "x·2 over A")
	require.Nil(t, g.Twin(out("twinOfTwin")), "its base is a twin")
	require.Nil(t, g.Twin(out("base")))
	require.Same(t, out("ratio"), g.ExpOf(out("base")))
	require.Same(t, out("ratio"), g.ExpOf(out("lseA")))
	require.Nil(t, g.ExpOf(out("twin")), "no exp(2·x) in the graph")
	_, err = passes.Verify(g)
	require.NoError(t, err)
}
