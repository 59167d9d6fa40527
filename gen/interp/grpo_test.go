package interp_test

import (
	"math"
	"testing"
)

// GRPOLoss, DAPO and CISPOLoss against values computed by hand (SEMANTICS.md §12), on a
// [3, 3] token batch whose middle row is all padding and whose padding holds NaN and ±inf:
//
//	row 0: r = 1.5, 0.9, pad   A = 1, −2        row 2: r = 0.5, 1, 1.1   A = −1, 3, 2
//
// sample_log_prob is 0 at valid tokens, so lw = log r. With ε = 0.2 the per-token losses
// −min(r·A, clip(r)·A) are −1.2 (clipped), 1.8, 0.8 (clipped), −3, −2.2.

const grpoHead = ppoHead + "dims: {B: 3, L: 3}\nbatch: [B, L]\nkeys: {mask: mask}\n"

func grpoInputs() map[string][]float64 {
	nan, inf := math.NaN(), math.Inf(1)
	lp := []float64{math.Log(1.5), math.Log(0.9), nan, nan, inf, -inf, math.Log(0.5), 0, math.Log(1.1)}
	d := []float64{0.5, -0.05, nan, 0, 0, 0, 0, 1, -1} // ref_log_prob − log_prob at valid tokens
	ref := make([]float64, len(lp))
	for i := range lp {
		ref[i] = lp[i] + d[i]
	}
	ref[2], ref[3], ref[4] = inf, nan, -inf
	return map[string][]float64{
		"mask":            {1, 1, 0, 0, 0, 0, 1, 1, 1},
		"log_prob":        lp,
		"sample_log_prob": {0, 0, inf, nan, 0, -inf, 0, 0, 0},
		"advantage":       {1, -2, inf, nan, 1, -inf, -1, 3, 2},
		"entropy":         {0.5, 1.5, nan, nan, inf, 1, 1, 1, 1},
		"ref_log_prob":    ref,
	}
}

func k3(d float64) float64 { return math.Expm1(d) - d }

func TestGRPOHandValues(t *testing.T) {
	in := grpoInputs()
	out := evalGrad(t, grpoHead+"loss: {type: grpo, kl_to_ref_coeff: 0.1, kl_to_inference_coeff: 0}\n", in)
	near(t, []float64{5}, out["num_valid"], hand, "num_valid")
	near(t, []float64{-3.8 / 5}, out["loss_objective"], hand, "token mean of −min(r·A, clip(r)·A)")
	near(t, []float64{2.0 / 5}, out["clip_fraction"], hand, "2 of 5 valid tokens clipped")
	near(t, []float64{-math.Log(1.5*0.9*0.5*1.1) / 5}, out["kl_approx"], hand, "mean of −lw")
	near(t, []float64{1}, out["entropy"], hand, "mean H over valid tokens")
	near(t, []float64{-0.01}, out["loss_entropy"], hand, "−0.01·mean H")
	near(t, []float64{25 / 5.52 / 5}, out["ESS"], hand, "(Σw)²/Σw²/n, w = 1.5, 0.9, 0.5, 1, 1.1")
	kl := (k3(0.5) + k3(-0.05) + k3(0) + k3(1) + k3(-1)) / 5
	near(t, []float64{kl, 0.1 * kl}, []float64{out["kl_to_ref"][0], out["loss_kl_to_ref"][0]}, hand, "k3 KL to ref")
	klInf := 0.0
	for _, r := range []float64{1.5, 0.9, 0.5, 1, 1.1} {
		klInf += k3(-math.Log(r))
	}
	near(t, []float64{klInf / 5, 0}, []float64{out["kl_to_inference"][0], out["loss_kl_to_inference"][0]}, hand, "coefficient 0: the metric, a zero loss")
	// ∂/∂lp: objective −A·r/5 where unclipped, entropy none, KL 0.1·(1 − e^d)/5, KL to
	// inference 0·(…); exactly 0 at padding.
	g := func(obj, d float64) float64 { return obj/5 + 0.1*(1-math.Exp(d))/5 }
	near(t, []float64{g(0, 0.5), g(2*0.9, -0.05), 0, 0, 0, 0, g(0, 0), g(-3, 1), g(-2*1.1, -1)},
		out["grad.log_prob"], hand, "grad log_prob")
	near(t, []float64{-0.002, -0.002, 0, 0, 0, 0, -0.002, -0.002, -0.002}, out["grad.entropy"], hand, "grad entropy")

	// prompt_mean: each row's mean over its tokens, the padded row a 0, the mean over 3 rows.
	noRef := without(in, "ref_log_prob")
	out = eval(t, grpoHead+"loss: {type: grpo, aggregation: prompt_mean}\n", noRef)
	near(t, []float64{(0.3 + 0 - 4.4/3) / 3}, out["loss_objective"], hand, "prompt_mean")
	near(t, []float64{(-0.01*1 + 0 - 0.01) / 3}, out["loss_entropy"], hand, "prompt_mean of −0.01·H")
	out = eval(t, grpoHead+"loss: {type: grpo, aggregation: prompt_mean, reduction: sum}\n", noRef)
	near(t, []float64{0.3 - 4.4/3}, out["loss_objective"], hand, "prompt_mean, reduction sum: the rows' means summed")
	out = eval(t, grpoHead+"loss: {type: grpo, reduction: sum}\n", noRef)
	near(t, []float64{-3.8}, out["loss_objective"], hand, "reduction sum sums the valid tokens")
	out = eval(t, grpoHead+"loss: {type: grpo, aggregation: none}\n", noRef)
	near(t, []float64{-1.2, 1.8, 0, 0, 0, 0, 0.8, -3, -2.2}, out["loss_objective"], hand, "aggregation none: 0 at padding")

	// KL-Mask 0.1 drops the token with ½(ln 0.5)² = 0.24 from the loss terms, ESS and the KL
	// terms, not from clip_fraction, kl_approx or entropy.
	out = eval(t, grpoHead+"loss: {type: grpo, kl_mask_threshold: 0.1, kl_to_ref_coeff: 0.1}\n", in)
	near(t, []float64{4, 5}, []float64{out["num_kept"][0], out["num_valid"][0]}, hand, "kept and valid counts")
	near(t, []float64{-4.6 / 4}, out["loss_objective"], hand, "token mean over kept tokens")
	near(t, []float64{2.0 / 5}, out["clip_fraction"], hand, "clip_fraction over valid tokens")
	near(t, []float64{4.5 * 4.5 / 5.27 / 4}, out["ESS"], hand, "ESS over kept tokens")
	near(t, []float64{(k3(0.5) + k3(-0.05) + k3(1) + k3(-1)) / 4}, out["kl_to_ref"], hand, "KL over kept tokens")
	near(t, []float64{-0.01}, out["loss_entropy"], hand, "entropy term over kept tokens")

	// No valid token: every mean and ESS is 0.
	in["mask"] = make([]float64, 9)
	out = eval(t, grpoHead+"loss: {type: grpo, kl_to_ref_coeff: 0.1}\n", in)
	for _, o := range []string{"num_valid", "loss_objective", "clip_fraction", "kl_approx", "entropy", "loss_entropy", "ESS", "kl_to_ref", "loss_kl_to_ref"} {
		near(t, []float64{0}, out[o], hand, o+" with no valid token")
	}
}

// DAPO's clip-higher bound 1.28 changes the first token's clipped gain.
func TestDAPOHandValues(t *testing.T) {
	in := without(grpoInputs(), "ref_log_prob")
	out := eval(t, grpoHead+"loss: {type: dapo}\n", in)
	near(t, []float64{-3.88 / 5}, out["loss_objective"], hand, "token mean with clip [0.8, 1.28]")
	near(t, []float64{2.0 / 5}, out["clip_fraction"], hand, "clip_fraction")
}

// CISPO: TorchRL's −clip(r)·A gives clipped tokens no gradient; the stop-gradient form
// −sg(clip(r))·A·log π gives every valid token −clip(r)·A.
func TestCISPOHandValues(t *testing.T) {
	in := without(without(grpoInputs(), "ref_log_prob"), "entropy")
	out := evalGrad(t, grpoHead+"loss: {type: cispo, entropy_bonus: false}\n", in)
	near(t, []float64{-(1.2 - 1.8 - 0.8 + 3 + 2.2) / 5}, out["loss_objective"], hand, "−clip(r)·A")
	near(t, []float64{0, 0.36, 0, 0, 0, 0, 0, -0.6, -0.44}, out["grad.log_prob"], hand, "clipped tokens: 0")
	out = evalGrad(t, grpoHead+"loss: {type: cispo, entropy_bonus: false, stop_gradient: true}\n", in)
	v := -1.2*math.Log(1.5) + 1.8*math.Log(0.9) + 0.8*math.Log(0.5) + 0 - 2.2*math.Log(1.1)
	near(t, []float64{v / 5}, out["loss_objective"], hand, "−sg(clip(r))·A·log π")
	near(t, []float64{-0.24, 0.36, 0, 0, 0, 0, 0.16, -0.6, -0.44}, out["grad.log_prob"], hand, "every valid token: −clip(r)·A/n")
}
