package interp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/lossgen/lossgen/gen/interp"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/passes"
	"github.com/lossgen/lossgen/spec"
)

// eval parses a spec, lowers it and runs the interpreter on flat row-major inputs.
func eval(t *testing.T, src string, in map[string][]float64) map[string][]float64 {
	t.Helper()
	return evalGraph(t, src, in, false)
}

// evalGrad is eval on ForwardBackward's graph: the outputs and the gradients grad.<input>.
func evalGrad(t *testing.T, src string, in map[string][]float64) map[string][]float64 {
	t.Helper()
	return evalGraph(t, src, in, true)
}

func evalGraph(t *testing.T, src string, in map[string][]float64, grad bool) map[string][]float64 {
	t.Helper()
	s, err := spec.Parse("test.yaml", []byte(src), lower.Registry())
	require.NoError(t, err)
	g, _, err := lower.Lower(s)
	require.NoError(t, err)
	if grad {
		g, err = passes.Autodiff(g)
		require.NoError(t, err)
	}
	inputs := map[string]*tensor.Dense{}
	for _, x := range g.Inputs {
		v, ok := in[x.Name]
		require.True(t, ok, "test gives no input %q", x.Name)
		inputs[x.Name] = interp.New(x.Shape, v)
	}
	require.Len(t, in, len(g.Inputs), "test gives inputs the graph does not read")
	outs, err := interp.Run(g, inputs)
	require.NoError(t, err)
	res := map[string][]float64{}
	for k, v := range outs {
		res[k] = interp.Data(v)
	}
	return res
}

// near asserts |got−want| ≤ tol·max(1, |want|) elementwise (an infinity only equals itself).
func near(t *testing.T, want, got []float64, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		if math.IsInf(want[i], 0) && got[i] == want[i] {
			continue
		}
		d := math.Abs(got[i] - want[i])
		if !(d <= tol*math.Max(1, math.Abs(want[i]))) {
			t.Errorf("%s[%d] = %.15g, want %.15g (diff %.3g)", what, i, got[i], want[i], d)
		}
	}
}

const hand = 1e-12 // the interpreter against values computed by hand in float64

// ClipPPO inputs of SEMANTICS.md §9.1 (B = 4, ε = 0.2).
var ppo91 = map[string][]float64{
	"sample_log_prob": {-1.0, -0.5, -2.0, -1.2},
	"log_prob":        {-0.8, -0.8, -1.5, -1.2},
	"advantage":       {1.0, -0.5, -2.0, 0.3},
	"entropy":         {1.0, 1.2, 0.8, 1.5},
	"state_value":     {0.5, 1.0, -0.3, 2.0},
	"value_target":    {1.0, -0.5, 0.2, 4.0},
}

const ppo91Spec = `
package: p
dtype: float64
param_dtype: float64
dims: {B: 4}
batch: [B]
loss:
  type: clip_ppo
  clip_epsilon: 0.2
`

func with(m map[string][]float64, k string, v []float64) map[string][]float64 {
	out := map[string][]float64{k: v}
	for kk, vv := range m {
		if kk != k {
			out[kk] = vv
		}
	}
	return out
}

func TestClipPPOHandValuesMean(t *testing.T) {
	out := eval(t, ppo91Spec, ppo91)
	e2, e5, e3 := math.Exp(0.2), math.Exp(0.5), math.Exp(-0.3)
	// Rows 0, 1 take the clipped branch (1.2·1, 0.8·−0.5); row 2 keeps r·A = −2e^0.5 (A < 0);
	// row 3 is inside the bounds.
	elems := []float64{-1.2, 0.4, 2 * e5, -0.3}
	near(t, []float64{(elems[0] + elems[1] + elems[2] + elems[3]) / 4}, out["loss_objective"], hand, "loss_objective")
	near(t, []float64{0.75}, out["clip_fraction"], hand, "clip_fraction")
	sw := e2 + e3 + e5 + 1
	sw2 := e2*e2 + e3*e3 + e5*e5 + 1
	near(t, []float64{sw * sw / sw2 / 4}, out["ESS"], hand, "ESS")
	near(t, []float64{-0.1}, out["kl_approx"], hand, "kl_approx")
	near(t, []float64{1.125}, out["entropy"], hand, "entropy")
	near(t, []float64{-0.01 * 1.125}, out["loss_entropy"], hand, "loss_entropy")
	// smooth_l1 of y − V = [0.5, −1.5, 0.5, 2]: [0.125, 1, 0.125, 1.5].
	near(t, []float64{0.6875}, out["loss_critic"], hand, "loss_critic")
	// Biased variances along dim 0: Var(y − V) = 6.1875/4, Var(y) = 11.7675/4; eps = 2^-52.
	near(t, []float64{1 - (6.1875/4)/(11.7675/4+0x1p-52)}, out["explained_variance"], hand, "explained_variance")
	require.NotContains(t, out, "value_clip_fraction")

	// The 10-digit values printed in SEMANTICS.md §9.1.
	near(t, []float64{0.5493606354}, out["loss_objective"], 1e-10, "loss_objective (SEMANTICS)")
	near(t, []float64{0.9229506233}, out["ESS"], 1e-10, "ESS (SEMANTICS)")
	// SEMANTICS.md printed the explained variance with float32's eps (2^-23).
	out32 := eval(t, strings.Replace(ppo91Spec, "float64", "float32", 1), ppo91)
	near(t, []float64{0.4741874018}, out32["explained_variance"], 1e-10, "explained_variance (SEMANTICS, float32 eps)")
}

func TestClipPPOReductions(t *testing.T) {
	e2, e5, e3 := math.Exp(0.2), math.Exp(0.5), math.Exp(-0.3)
	elems := []float64{-1.2, 0.4, 2 * e5, -0.3}
	critic := []float64{0.125, 1, 0.125, 1.5}
	h := []float64{1.0, 1.2, 0.8, 1.5}
	sw := e2 + e3 + e5 + 1
	ess := sw * sw / (e2*e2 + e3*e3 + e5*e5 + 1)
	for _, red := range []string{"none", "sum", "mean"} {
		t.Run(red, func(t *testing.T) {
			out := eval(t, ppo91Spec+"  reduction: "+red+"\n", ppo91)
			var wantObj, wantCritic, wantEnt []float64
			switch red {
			case "none":
				wantObj, wantCritic = elems, critic
				for _, x := range h {
					wantEnt = append(wantEnt, -0.01*x)
				}
			case "sum":
				wantObj = []float64{elems[0] + elems[1] + elems[2] + elems[3]}
				wantCritic = []float64{2.75}
				wantEnt = []float64{-0.01 * 4.5}
			case "mean":
				wantObj = []float64{(elems[0] + elems[1] + elems[2] + elems[3]) / 4}
				wantCritic = []float64{0.6875}
				wantEnt = []float64{-0.01 * 1.125}
			}
			near(t, wantObj, out["loss_objective"], hand, "loss_objective")
			near(t, wantCritic, out["loss_critic"], hand, "loss_critic")
			near(t, wantEnt, out["loss_entropy"], hand, "loss_entropy")
			// ESS is _reduce(ess) / B of a scalar ess: the same for every reduction here.
			near(t, []float64{ess / 4}, out["ESS"], hand, "ESS")
			// Never reduced by reduction: always means.
			near(t, []float64{0.75}, out["clip_fraction"], hand, "clip_fraction")
			near(t, []float64{1.125}, out["entropy"], hand, "entropy")
		})
	}
	out := eval(t, ppo91Spec+"  reduction: sum\n", ppo91)
	near(t, []float64{2.1974425414}, out["loss_objective"], 1e-10, "loss_objective sum (SEMANTICS)")
}

func TestClipPPOCriticTypes(t *testing.T) {
	// y − V = [0.5, −1.5, 0.5, 2.0].
	want := map[string]float64{
		"l2":        (0.25 + 2.25 + 0.25 + 4) / 4,
		"l1":        (0.5 + 1.5 + 0.5 + 2) / 4,
		"smooth_l1": (0.125 + 1 + 0.125 + 1.5) / 4,
	}
	for typ, w := range want {
		t.Run(typ, func(t *testing.T) {
			out := eval(t, ppo91Spec+"  loss_critic_type: "+typ+"\n  critic_coeff: 0.5\n", ppo91)
			near(t, []float64{0.5 * w}, out["loss_critic"], hand, "loss_critic")
		})
	}
	// critic_coeff 0 drops the critic term and its logs.
	out := eval(t, ppo91Spec+"  critic_coeff: 0\n", map[string][]float64{
		"sample_log_prob": ppo91["sample_log_prob"], "log_prob": ppo91["log_prob"],
		"advantage": ppo91["advantage"], "entropy": ppo91["entropy"],
	})
	require.NotContains(t, out, "loss_critic")
	require.NotContains(t, out, "explained_variance")
}

func TestClipPPOClipValue(t *testing.T) {
	in := with(ppo91, "old_state_value", []float64{0.4, 1.5, -0.3, 1.0})
	out := eval(t, ppo91Spec+"  clip_value: true\n", in)
	// Δ = V − V_old = [0.1, −0.5, 0, 1] → clamp ±0.2 → [0.1, −0.2, 0, 0.2]: rows 1, 3 clipped.
	// V_c = [0.5, 1.3, −0.3, 1.2]; y − V_c = [0.5, −1.8, 0.5, 2.8] → smooth_l1 [0.125, 1.3, 0.125, 2.3];
	// max with the unclipped [0.125, 1, 0.125, 1.5].
	near(t, []float64{0.5}, out["value_clip_fraction"], hand, "value_clip_fraction")
	near(t, []float64{(0.125 + 1.3 + 0.125 + 2.3) / 4}, out["loss_critic"], hand, "loss_critic")
	near(t, []float64{0.9625}, out["loss_critic"], hand, "loss_critic (SEMANTICS)")
	// A number works the same; a larger δ clips nothing.
	out = eval(t, ppo91Spec+"  clip_value: 2.0\n", in)
	near(t, []float64{0}, out["value_clip_fraction"], hand, "value_clip_fraction δ=2")
	near(t, []float64{0.6875}, out["loss_critic"], hand, "loss_critic δ=2")
}

func TestClipPPONormalizeAdvantage(t *testing.T) {
	out := eval(t, ppo91Spec+"  normalize_advantage: true\n", ppo91)
	adv := ppo91["advantage"]
	mean := (adv[0] + adv[1] + adv[2] + adv[3]) / 4
	var ss float64
	for _, a := range adv {
		ss += (a - mean) * (a - mean)
	}
	std := math.Sqrt(ss / 3) // unbiased
	n := make([]float64, 4)
	for i, a := range adv {
		n[i] = (a - mean) / std
	}
	// Branches unchanged: rows 0, 1 clipped (1.2, 0.8), row 2 unclipped e^0.5, row 3 ratio 1.
	elems := []float64{-1.2 * n[0], -0.8 * n[1], -math.Exp(0.5) * n[2], -n[3]}
	near(t, []float64{(elems[0] + elems[1] + elems[2] + elems[3]) / 4}, out["loss_objective"], hand, "loss_objective")
	near(t, []float64{0.1557784866}, out["loss_objective"], 1e-10, "loss_objective (SEMANTICS)")
}

// A [N=2, T=3] batch: ESS sums over N per t (then means over T, divides by N) and the
// explained variance is per column t, as TorchRL computes them on [N, T, 1].
func TestClipPPOTwoDimBatch(t *testing.T) {
	src := `
package: p
dtype: float64
param_dtype: float64
dims: {N: 2, T: 3}
batch: [N, T]
loss: {type: clip_ppo, entropy_bonus: false}
`
	lp := []float64{-1, -1, -1, -1, -1, -1}
	lpOld := []float64{-1.1, -0.9, -1, -1.3, -1, -0.6}
	adv := []float64{1, 2, 3, 4, 5, 6}
	v := []float64{0, 1, 0, 2, 0, 1}
	y := []float64{1, 1, 2, 0, 3, 5}
	out := eval(t, src, map[string][]float64{"log_prob": lp, "sample_log_prob": lpOld, "advantage": adv, "state_value": v, "value_target": y})
	var ess float64
	ev := make([]float64, 3)
	for tt := 0; tt < 3; tt++ {
		w0, w1 := math.Exp(lp[tt]-lpOld[tt]), math.Exp(lp[3+tt]-lpOld[3+tt])
		ess += (w0 + w1) * (w0 + w1) / (w0*w0 + w1*w1)
		r0, r1 := y[tt]-v[tt], y[3+tt]-v[3+tt]
		varR := (r0 - r1) * (r0 - r1) / 4 // biased variance of two numbers
		varY := (y[tt] - y[3+tt]) * (y[tt] - y[3+tt]) / 4
		ev[tt] = 1 - varR/(varY+0x1p-52)
	}
	near(t, []float64{ess / 3 / 2}, out["ESS"], hand, "ESS")
	near(t, ev, out["explained_variance"], hand, "explained_variance")
}

const gaeSpec = `
package: g
dtype: float64
param_dtype: float64
dims: {N: 1, T: 5}
batch: [N, T]
estimator: {type: gae, gamma: 0.9, lmbda: 0.8}
`

// SEMANTICS.md §9.2 inputs.
var gae92 = map[string][]float64{
	"next.reward":      {1.0, 0.0, 2.0, -1.0, 0.5},
	"state_value":      {0.5, 0.4, 0.3, 0.2, 0.1},
	"next.state_value": {0.4, 0.3, 0.9, 0.1, 0.6},
	"next.done":        {0, 0, 1, 0, 0},
	"next.terminated":  {0, 0, 1, 0, 0},
}

// gaeByHand is the textbook recursion written out for one row.
func gaeByHand(r, v, vn, done, term []float64, gamma, lmbda float64) (adv, vt []float64) {
	T := len(r)
	adv = make([]float64, T)
	vt = make([]float64, T)
	next := 0.0
	for t := T - 1; t >= 0; t-- {
		delta := r[t] + gamma*(1-term[t])*vn[t] - v[t]
		next = delta + gamma*lmbda*(1-done[t])*next
		adv[t] = next
		vt[t] = next + v[t]
	}
	return adv, vt
}

func TestGAEDoneInTheMiddle(t *testing.T) {
	out := eval(t, gaeSpec, gae92)
	near(t, []float64{1.64768, 1.094, 1.7, -0.4332, 0.94}, out["advantage"], hand, "advantage")
	near(t, []float64{2.14768, 1.494, 2.0, -0.2332, 1.04}, out["value_target"], hand, "value_target")
}

func TestGAETerminatedButNotDone(t *testing.T) {
	// Truncated at t = 2: done cuts the recursion, V'_2 still bootstraps (§9.2 case B).
	out := eval(t, gaeSpec, with(gae92, "next.terminated", []float64{0, 0, 0, 0, 0}))
	near(t, []float64{2.067584, 1.6772, 2.51, -0.4332, 0.94}, out["advantage"], hand, "advantage truncated")
	near(t, []float64{2.567584, 2.0772, 2.81, -0.2332, 1.04}, out["value_target"], hand, "value_target truncated")

	// Terminated without done (an inconsistent record, but TorchRL computes it): the bootstrap
	// at t = 1 is zeroed while credit still flows from t = 2 into t = 1.
	term := []float64{0, 1, 0, 0, 0}
	done := []float64{0, 0, 0, 0, 0}
	in := with(with(gae92, "next.terminated", term), "next.done", done)
	out = eval(t, gaeSpec, in)
	adv, vt := gaeByHand(gae92["next.reward"], gae92["state_value"], gae92["next.state_value"], done, term, 0.9, 0.8)
	near(t, adv, out["advantage"], hand, "advantage terminated-not-done")
	near(t, vt, out["value_target"], hand, "value_target terminated-not-done")
	// δ_1 = 0 + 0 − 0.4; A_1 = δ_1 + 0.72·A_2.
	require.InDelta(t, -0.4+0.72*out["advantage"][2], out["advantage"][1], hand)
}

func TestGAEDoneOnLastStep(t *testing.T) {
	flags := []float64{0, 0, 0, 0, 1}
	in := with(with(gae92, "next.terminated", flags), "next.done", flags)
	out := eval(t, gaeSpec, in)
	// δ_4 = 0.5 − 0.1 (no bootstrap); δ_3 = −1 + 0.09 − 0.2; then plain recursion with 0.72.
	a4 := 0.5 - 0.1
	a3 := -1 + 0.9*0.1 - 0.2 + 0.72*a4
	a2 := 2 + 0.9*0.9 - 0.3 + 0.72*a3
	a1 := 0 + 0.9*0.3 - 0.4 + 0.72*a2
	a0 := 1 + 0.9*0.4 - 0.5 + 0.72*a1
	near(t, []float64{a0, a1, a2, a3, a4}, out["advantage"], hand, "advantage")
	// Truncated on the last step: bootstraps from V'_4 like a row end.
	in = with(with(gae92, "next.terminated", []float64{0, 0, 0, 0, 0}), "next.done", flags)
	out = eval(t, gaeSpec, in)
	require.InDelta(t, 0.5+0.9*0.6-0.1, out["advantage"][4], hand)
}

func TestGAEOneStep(t *testing.T) {
	src := `
package: g
dtype: float64
param_dtype: float64
dims: {N: 3, T: 1}
batch: [N, T]
estimator: {type: gae, gamma: 0.9, lmbda: 0.8}
`
	in := map[string][]float64{
		"next.reward": {1, 2, 3}, "state_value": {0.5, 0.5, 0.5}, "next.state_value": {1, 2, 4},
		"next.done": {0, 1, 1}, "next.terminated": {0, 0, 1},
	}
	out := eval(t, src, in)
	// T = 1: A = δ whatever done says; terminated zeroes the bootstrap.
	near(t, []float64{1 + 0.9 - 0.5, 2 + 1.8 - 0.5, 3 - 0.5}, out["advantage"], hand, "advantage")
	near(t, []float64{1 + 0.9, 2 + 1.8, 3}, out["value_target"], hand, "value_target")
}

func TestGAEAverage(t *testing.T) {
	out := eval(t, strings.Replace(gaeSpec, "lmbda: 0.8}", "lmbda: 0.8, average_gae: true}", 1), gae92)
	raw := []float64{1.64768, 1.094, 1.7, -0.4332, 0.94}
	var m float64
	for _, a := range raw {
		m += a / 5
	}
	var ss float64
	for _, a := range raw {
		ss += (a - m) * (a - m)
	}
	std := math.Max(math.Sqrt(ss/4), 1e-4)
	want := make([]float64, 5)
	for i, a := range raw {
		want[i] = (a - m) / std
	}
	near(t, want, out["advantage"], hand, "advantage")
	near(t, []float64{0.7629015673, 0.1209355928, 0.8235641518, -1.6497811321, -0.0576201796}, out["advantage"], 1e-9, "advantage (SEMANTICS)")
	// value_target comes from the un-normalised advantage.
	near(t, []float64{2.14768, 1.494, 2.0, -0.2332, 1.04}, out["value_target"], hand, "value_target")
}

func TestGAEWithTerminatedNull(t *testing.T) {
	// keys.terminated: null → TorchRL uses done as terminated.
	in := map[string][]float64{}
	for k, v := range gae92 {
		if k != "next.terminated" {
			in[k] = v
		}
	}
	out := eval(t, gaeSpec+"keys: {terminated: null}\n", in)
	near(t, []float64{1.64768, 1.094, 1.7, -0.4332, 0.94}, out["advantage"], hand, "advantage")
}

// The ESS squeeze quirk: with N = 1 the squeezed log-weight is [T], so the logsumexp runs
// over time and the result is divided by N = 1.
func TestESSSqueezeQuirk(t *testing.T) {
	src := `
package: p
dtype: float64
param_dtype: float64
dims: {N: 1, T: 3}
batch: [N, T]
loss: {type: clip_ppo, entropy_bonus: false, critic_coeff: 0}
`
	lw := []float64{0.1, -0.2, 0.3}
	out := eval(t, src, map[string][]float64{
		"log_prob": lw, "sample_log_prob": {0, 0, 0}, "advantage": {1, 1, 1},
	})
	var s, s2 float64
	for _, x := range lw {
		s += math.Exp(x)
		s2 += math.Exp(2 * x)
	}
	near(t, []float64{s * s / s2}, out["ESS"], hand, "ESS")
}

// Every reduction op against hand values, including the NaN and infinity rules.
func TestReductionsByHand(t *testing.T) {
	b := ir.NewBuilder(ir.F64, []ir.Dim{{Name: "N", Size: 2}, {Name: "T", Size: 3}}, []string{"N", "T"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Batch()})
	b.Output("sum_T", b.Sum(x, "T"), ir.Metric, "", "")
	b.Output("max_N", b.ReduceMax(x, "N"), ir.Metric, "", "")
	b.Output("min_all", b.ReduceMin(x, "N", "T"), ir.Metric, "", "")
	b.Output("lse_T", b.LogSumExp(x, "T"), ir.Metric, "", "")
	b.Output("var1_T", b.Var(x, 1, "T"), ir.Metric, "", "")
	b.Output("argmax_T", b.ArgMax(x, "T"), ir.Metric, "", "")
	g := b.Graph()
	run := func(v []float64) map[string][]float64 {
		outs, err := interp.Run(g, map[string]*tensor.Dense{"x": interp.New(g.Inputs[0].Shape, v)})
		require.NoError(t, err)
		res := map[string][]float64{}
		for k, o := range outs {
			res[k] = interp.Data(o)
		}
		return res
	}
	out := run([]float64{1, 3, 3, -1, 0, 2})
	near(t, []float64{7, 1}, out["sum_T"], hand, "sum_T")
	near(t, []float64{1, 3, 3}, out["max_N"], hand, "max_N")
	near(t, []float64{-1}, out["min_all"], hand, "min_all")
	near(t, []float64{math.Log(math.E + 2*math.Exp(3)), math.Log(math.Exp(-1) + 1 + math.Exp(2))}, out["lse_T"], hand, "lse_T")
	near(t, []float64{4.0 / 3, 7.0 / 3}, out["var1_T"], hand, "var1_T")
	near(t, []float64{1, 2}, out["argmax_T"], hand, "argmax_T (first maximal index)")

	inf, nan := math.Inf(1), math.NaN()
	out = run([]float64{nan, 1, 2, inf, 1, math.Inf(-1)})
	require.True(t, math.IsNaN(out["sum_T"][0]))
	require.True(t, math.IsNaN(out["max_N"][0]))
	require.True(t, math.IsNaN(out["min_all"][0]))
	require.Equal(t, 0.0, out["argmax_T"][0], "NaN counts as the maximum")
	require.True(t, math.IsInf(out["lse_T"][1], 1), "logsumexp with +inf is +inf")
	out = run([]float64{math.Inf(-1), math.Inf(-1), math.Inf(-1), 0, 0, 0})
	require.True(t, math.IsInf(out["lse_T"][0], -1), "logsumexp of all −inf is −inf")
}
