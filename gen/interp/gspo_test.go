package interp_test

import (
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

// GSPO (Liger's sequence-level ppo_loss_fn), MCAdvantage and DistillationLoss against values
// computed by hand (SEMANTICS.md §12.4-12.6), on the [3, 3] token batch of grpo_test.go's
// layout: row 0 has 2 valid tokens, row 1 none, row 2 three, and padding holds NaN and ±inf.
//
// sample_log_prob is 0 at valid tokens, so the log-weights are the log-probs:
//
//	row 0: ln 3, ln 0.75        s₀ = exp(ln 2.25 / 2) = 1.5     A₀ = 1   (clipped at 1.2)
//	row 2: ln 0.5, 0, ln 1.1    s₂ = 0.55^(1/3) ≈ 0.819          A₂ = −2  (inside [0.8, 1.2])

func gspoInputs() map[string][]float64 {
	nan, inf := math.NaN(), math.Inf(1)
	lp := []float64{math.Log(3), math.Log(0.75), nan, nan, inf, -inf, math.Log(0.5), 0, math.Log(1.1)}
	d := []float64{0.5, -0.05, 0, 0, 0, 0, 0, 1, -1} // ref_log_prob − log_prob at valid tokens
	ref := make([]float64, len(lp))
	for i := range lp {
		ref[i] = lp[i] + d[i]
	}
	ref[2], ref[3], ref[4] = inf, nan, -inf
	return map[string][]float64{
		"mask":            {1, 1, 0, 0, 0, 0, 1, 1, 1},
		"log_prob":        lp,
		"sample_log_prob": {0, 0, inf, nan, 0, -inf, 0, 0, 0},
		"advantage":       {1, nan, -2}, // per sequence; the all-padding row's is garbage
		"ref_log_prob":    ref,
	}
}

var gspoS2 = math.Pow(0.55, 1.0/3)

func TestGSPOHandValues(t *testing.T) {
	in := gspoInputs()
	s2 := gspoS2
	kls := []float64{k3(0.5), k3(-0.05), k3(0), k3(1), k3(-1)}
	klSum := kls[0] + kls[1] + kls[2] + kls[3] + kls[4]

	// loss_type dapo (Liger's default): Σ over the valid tokens / 5.
	out := evalGrad(t, grpoHead+"loss: {type: gspo, beta: 0.1}\n", in)
	near(t, []float64{5}, out["num_valid"], hand, "num_valid")
	near(t, []float64{(2*-1.2 + 3*2*s2) / 5}, out["loss_objective"], hand, "Σ_tokens −min(s·A, clip(s)·A) / N")
	near(t, []float64{2.0 / 5}, out["clip_fraction"], hand, "row 0's 2 tokens: s > 1.2 with A > 0")
	near(t, []float64{klSum / 5, 0.1 * klSum / 5}, []float64{out["kl_to_ref"][0], out["loss_kl_to_ref"][0]}, hand, "k3 KL to ref")
	// ∂/∂lp: row 0 clipped (0); row 2 −A·s₂/N through the sequence mean; KL β(1 − e^d)/N.
	kg := func(d, scale float64) float64 { return 0.1 * (1 - math.Exp(d)) * scale }
	g2 := 2 * s2 / 5
	near(t, []float64{kg(0.5, 0.2), kg(-0.05, 0.2), 0, 0, 0, 0, g2 + kg(0, 0.2), g2 + kg(1, 0.2), g2 + kg(-1, 0.2)},
		out["grad.log_prob"], hand, "grad log_prob, dapo")

	// loss_type grpo: the mean over the 3 sequences of each one's token mean (row 1: 0).
	out = evalGrad(t, grpoHead+"loss: {type: gspo, beta: 0.1, loss_type: grpo}\n", in)
	near(t, []float64{(-1.2 + 0 + 2*s2) / 3}, out["loss_objective"], hand, "mean over sequences")
	near(t, []float64{0.1 * ((kls[0]+kls[1])/2 + (kls[2]+kls[3]+kls[4])/3) / 3}, out["loss_kl_to_ref"], hand, "β·mean over sequences of the KL")
	near(t, []float64{klSum / 5}, out["kl_to_ref"], hand, "the metric stays a token mean")
	g2 = 2 * s2 / 9
	near(t, []float64{kg(0.5, 1.0/6), kg(-0.05, 1.0/6), 0, 0, 0, 0, g2 + kg(0, 1.0/9), g2 + kg(1, 1.0/9), g2 + kg(-1, 1.0/9)},
		out["grad.log_prob"], hand, "grad log_prob, grpo: 1/(B·n_b)")

	// GSPO-token with the per-sequence advantage at each token: the same values and gradients.
	tokIn := without(in, "ref_log_prob")
	tokIn["advantage"] = []float64{1, 1, math.Inf(1), math.NaN(), 0, math.Inf(-1), -2, -2, -2}
	out = evalGrad(t, grpoHead+"loss: {type: gspo, beta: 0, variant: token}\n", tokIn)
	near(t, []float64{(2*-1.2 + 3*2*s2) / 5}, out["loss_objective"], hand, "token variant")
	near(t, []float64{0, 0, 0, 0, 0, 0, 2 * s2 / 5, 2 * s2 / 5, 2 * s2 / 5}, out["grad.log_prob"], hand, "token variant gradient")
	// A token's own advantage: row 0's second token has A = −1, where s = 1.5 is the max of
	// (s, 0.8), unclipped: its loss is 1.5 and its gradient −A·s/N = 0.3; delta 1.3 caps it.
	tokIn["advantage"][1] = -1
	out = evalGrad(t, grpoHead+"loss: {type: gspo, beta: 0, variant: token}\n", tokIn)
	near(t, []float64{(-1.2 + 1.5 + 3*2*s2) / 5}, out["loss_objective"], hand, "per-token advantage")
	near(t, []float64{1.0 / 5}, out["clip_fraction"], hand, "only token 0 is clipped on its binding side")
	near(t, []float64{0, 0.3, 0, 0, 0, 0, 2 * s2 / 5, 2 * s2 / 5, 2 * s2 / 5}, out["grad.log_prob"], hand, "per-token gradient")
	out = evalGrad(t, grpoHead+"loss: {type: gspo, beta: 0, variant: token, delta: 1.3}\n", tokIn)
	near(t, []float64{(-1.2 + 1.3 + 3*2*s2) / 5}, out["loss_objective"], hand, "delta caps the unclipped ratio")
	near(t, []float64{0, 0, 0, 0, 0, 0, 2 * s2 / 5, 2 * s2 / 5, 2 * s2 / 5}, out["grad.log_prob"], hand, "capped: no gradient")

	// No valid token: every output is 0.
	in["mask"] = make([]float64, 9)
	out = eval(t, grpoHead+"loss: {type: gspo, loss_type: grpo}\n", in)
	for _, o := range []string{"num_valid", "loss_objective", "clip_fraction", "kl_to_ref", "loss_kl_to_ref"} {
		near(t, []float64{0}, out[o], hand, o+" with no valid token")
	}
}

// MCAdvantage: (R − mean R)/max(std R, 1e-6) over each group, unbiased std; a group of equal
// rewards gets 0. Group 0's returns are 1, 2, 3 (mean 2, std 1), group 1's all 5.
func TestMCAdvantageHandValues(t *testing.T) {
	const head = ppoHead + "dims: {G: 2, N: 3, L: 2}\n"
	want := []float64{-1, 0, 1, 0, 0, 0}
	out := eval(t, head+"batch: [G, N]\nestimator: {type: mc_advantage, group_dim: N}\n",
		map[string][]float64{"next.reward": {1, 2, 3, 5, 5, 5}})
	near(t, want, out["advantage"], hand, "one reward per sequence")

	// Per-token rewards, NaN and ±inf at padding; the last sequence has no valid token.
	nan, inf := math.NaN(), math.Inf(1)
	in := map[string][]float64{
		"mask":        {1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0},
		"next.reward": {0.5, 0.5, 2, nan, 1, 2, 4, 1, 2.5, 2.5, inf, -inf},
	}
	for ret, r := range map[string][]float64{
		"sum":  {1, 2, 3, 5, 5, 0},
		"mean": {0.5, 2, 1.5, 2.5, 2.5, 0},
		"max":  {0.5, 2, 2, 4, 2.5, 0},
	} {
		out = eval(t, head+"batch: [G, N, L]\nestimator: {type: mc_advantage, group_dim: N, trajectory_return: "+ret+"}\nkeys: {mask: mask}\n", in)
		near(t, standardized(r), out["advantage"], hand, "trajectory_return "+ret)
	}
	near(t, want, standardized([]float64{1, 2, 3, 5, 5, 5}), hand, "standardized")

	// kl_reward writes a reward per token: without a trajectory return the error says which.
	s, err := spec.Parse("t.yaml", []byte(head+"batch: [G, N, L]\ntransforms: [{type: kl_reward, coef: 0.1}]\n"+
		"estimator: {type: mc_advantage, group_dim: N}\nloss: {type: grpo}\n"), lower.Registry())
	require.NoError(t, err)
	_, _, err = lower.Lower(s)
	require.ErrorContains(t, err, "estimator.trajectory_return: none reads one reward per sequence [G=2 N=3], but an earlier stage writes keys.reward per token [G=2 N=3 L=2]: "+
		"write trajectory_return: sum")

	// Chained into GRPOLoss: ratio 1, so the token loss is −A at each valid token.
	out = eval(t, ppoHead+"dims: {G: 1, N: 2, L: 2}\nbatch: [G, N, L]\nestimator: {type: mc_advantage, group_dim: N}\n"+
		"loss: {type: grpo, entropy_bonus: false}\nkeys: {mask: mask}\n", map[string][]float64{
		"next.reward":     {0, 1},
		"mask":            {1, 1, 1, 0},
		"log_prob":        {-1, -2, -0.5, nan},
		"sample_log_prob": {-1, -2, -0.5, inf},
	})
	a := 0.5 / math.Sqrt(0.5)
	near(t, []float64{-a, a}, out["advantage"], hand, "advantage of the group {0, 1}")
	near(t, []float64{(2*a - a) / 3}, out["loss_objective"], hand, "grpo's token mean of −A")
}

// standardized is each group of 3 of r standardised as MCAdvantage does.
func standardized(r []float64) []float64 {
	out := make([]float64, len(r))
	for g := 0; g < len(r); g += 3 {
		x := r[g : g+3]
		mean := (x[0] + x[1] + x[2]) / 3
		v := 0.0
		for _, y := range x {
			v += (y - mean) * (y - mean)
		}
		std := math.Max(math.Sqrt(v/2), 1e-6)
		for i, y := range x {
			out[g+i] = (y - mean) / std
		}
	}
	return out
}

// DistillationLoss: per sequence Σ k3 over its valid tokens (/ their number), then the mean
// over sequences; the all-padding row contributes 0 (TorchRL raises there).
func TestDistillationHandValues(t *testing.T) {
	in := without(without(without(gspoInputs(), "advantage"), "sample_log_prob"), "ref_log_prob")
	nan, inf := math.NaN(), math.Inf(1)
	d := []float64{0.5, -0.05, 0, 0, 0, 0, 0, 1, -1} // teacher − student at valid tokens
	teacher := make([]float64, 9)
	for i := range d {
		teacher[i] = in["log_prob"][i] + d[i]
	}
	teacher[2], teacher[3], teacher[4] = nan, inf, -inf
	in["teacher_log_prob"] = teacher
	row0, row2 := k3(0.5)+k3(-0.05), k3(0)+k3(1)+k3(-1)

	out := evalGrad(t, grpoHead+"loss: {type: distillation}\n", in)
	near(t, []float64{(row0/2 + row2/3) / 3}, out["loss_distill"], hand, "reverse, normalised, mean")
	near(t, []float64{(row0/2 + row2/3) / 3}, out["kl_to_teacher"], hand, "kl_to_teacher")
	g := func(d, n float64) float64 { return (1 - math.Exp(d)) / n / 3 }
	near(t, []float64{g(0.5, 2), g(-0.05, 2), 0, 0, 0, 0, g(0, 3), g(1, 3), g(-1, 3)}, out["grad.log_prob"], hand, "reverse gradient (1 − e^d)/(n_b·B)")

	out = evalGrad(t, grpoHead+"loss: {type: distillation, kl_direction: forward, normalize_by_seq_length: false, reduction: sum}\n", in)
	fwd0, fwd2 := k3(-0.5)+k3(0.05), k3(0)+k3(-1)+k3(1)
	near(t, []float64{fwd0 + fwd2}, out["loss_distill"], hand, "forward, summed over tokens and sequences")
	near(t, []float64{(fwd0 + fwd2) / 3}, out["kl_to_teacher"], hand, "kl_to_teacher is a mean over sequences")
	gf := func(d float64) float64 { return math.Expm1(-d) } // ∂k3(lp − t)/∂lp = e^(lp−t) − 1
	near(t, []float64{gf(0.5), gf(-0.05), 0, 0, 0, 0, gf(0), gf(1), gf(-1)}, out["grad.log_prob"], hand, "forward gradient")

	out = eval(t, grpoHead+"loss: {type: distillation, reduction: none}\n", in)
	near(t, []float64{row0 / 2, 0, row2 / 3}, out["loss_distill"], hand, "one per sequence, 0 for the padded row")
}

// The k3 series at small |d|, where e^d − 1 − d cancels, against the series to d^30 in
// big.Float: to the float64 rounding of its own few operations with dtype float64 (terms to
// d^10), and within 5e-9 of the value with dtype float32 (terms to d^6, the float32 kernels'
// form, evaluated by the interpreter in float64).
func TestK3SeriesAccuracy(t *testing.T) {
	ds := []float64{1e-12, -1e-8, 3e-4, -0.01, 0.03, -0.05, 0.0999, -0.0999999}
	exact := func(d float64) float64 {
		x, term, sum := big.NewFloat(d).SetPrec(200), big.NewFloat(1).SetPrec(200), new(big.Float).SetPrec(200)
		term.Mul(term, x)
		for k := 2; k <= 30; k++ {
			term.Mul(term, x)
			term.Quo(term, big.NewFloat(float64(k)))
			sum.Add(sum, term)
		}
		v, _ := sum.Float64()
		return v
	}
	zero := make([]float64, len(ds))
	for _, c := range []struct {
		dtype string
		rel   float64
	}{{"float64", 4e-16}, {"float32", 5e-9}} {
		src := "package: p\ndtype: " + c.dtype + "\nparam_dtype: float64\ndims: {B: 8, L: 1}\nbatch: [B, L]\n" +
			"loss: {type: distillation, reduction: none, normalize_by_seq_length: false}\n"
		out := eval(t, src, map[string][]float64{"log_prob": zero, "teacher_log_prob": ds})
		for i, d := range ds {
			want := exact(d)
			assert.InEpsilon(t, want, out["loss_distill"][i], c.rel, "%s k3(%g)", c.dtype, d)
		}
	}
}
