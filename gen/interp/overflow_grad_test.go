package interp_test

import (
	"math"
	"testing"
)

// Gradients at the float32 overflow and underflow edges are float64's rounded to float32
// (SEMANTICS.md §11.19): 0 where a where, clamp or min did not take the branch whose
// derivative overflowed (0·inf is not formed), the signed limit where it did.

// ClipPPO, log-ratios [100, 100, 0.1], advantages [0, 1, −1]: exp(100) overflows float32.
// The clipped branch is taken at elements 0 and 1 (issue 17 item 2: they were NaN).
func TestClipPPOGradientAtOverflow(t *testing.T) {
	src := "package: p\ndtype: float32\ndims: {B: 3}\nbatch: [B]\nloss: {type: clip_ppo, critic_coeff: 0, entropy_bonus: false}\n"
	out := evalGrad(t, src, map[string][]float64{
		"log_prob": {100, 100, 0.1}, "sample_log_prob": {0, 0, 0}, "advantage": {0, 1, -1},
	})
	near(t, []float64{-0.0316096954}, out["loss_objective"], 1e-7, "loss_objective")
	// Element 2: A < 0, ratio e^0.1 above 1−ε: the unclipped gain, ∂/∂lp = −A·r/3.
	near(t, []float64{0, 0, math.Exp(0.1) / 3}, out["grad.log_prob"], 1e-7, "grad.log_prob")
	// A < 0 with an overflowing ratio: the unclipped branch is taken and its gradient is
	// −A·e^100/3, beyond float32: +inf, as float64's 8.9e42 rounds.
	out = evalGrad(t, src, map[string][]float64{
		"log_prob": {100, -200, 0}, "sample_log_prob": {0, 0, 0}, "advantage": {-1, 1, 0},
	})
	g := out["grad.log_prob"]
	if !math.IsInf(g[0], 1) || !(math.Abs(g[1]) < 1e-80) || g[2] != 0 {
		t.Errorf("grad.log_prob = %v, want [+Inf ≈−e^-200/3 0] (the interpreter keeps float64's range below float32's)", g)
	}
}

// The same edges through every elementwise rule the PPO family's gradients use: exp (ratio),
// log and division (the categorical log-softmax and entropy with logits ±1e30 and −inf),
// and the Normal's log-density at a tiny scale, where 1/σ² overflows float32. Whatever the
// forward value, no gradient is NaN where float64 has a number.
func TestGradientsAtFloat32Edges(t *testing.T) {
	cat := "package: p\ndtype: float32\ndims: {B: 4, A: 3}\nbatch: [B]\nloss: {type: ppo, distribution: categorical, action_dim: A, critic_coeff: 0, entropy_coeff: 0.5, reduction: sum}\n"
	inf := math.Inf(-1)
	out := evalGrad(t, cat, map[string][]float64{
		"logits":          {1e30, 0, -1e30, 0, inf, inf, 80, -80, 0, 3e38, 3e38, -3e38},
		"action":          {0, 0, 1, 2},
		"sample_log_prob": {0, 0, -160, 0},
		"advantage":       {1, 1, 0, 1},
	})
	for i, v := range out["grad.logits"] {
		if math.IsNaN(v) {
			t.Errorf("grad.logits[%d] = NaN", i)
		}
	}
	normal := "package: p\ndtype: float32\ndims: {B: 2, D: 1}\nbatch: [B]\nloss: {type: clip_ppo, distribution: normal, action_dim: D, critic_coeff: 0, entropy_bonus: false}\n"
	out = evalGrad(t, normal, map[string][]float64{
		"loc": {0, 0}, "scale": {1e-30, 1}, "action": {1, 0.5},
		"sample_log_prob": {0, 0}, "advantage": {1, 1},
	})
	// Element 0: log π = −1/(2·1e-60) − … = −inf in float32: the ratio is 0, inside no clip
	// bound from below for A > 0 (min(r, e^hi) = r): ∂/∂lp = r/2 = 0, and 0·∂lp/∂σ (which
	// overflows) is 0, not NaN.
	for _, k := range []string{"grad.loc", "grad.scale"} {
		for i, v := range out[k] {
			if math.IsNaN(v) {
				t.Errorf("%s[%d] = NaN", k, i)
			}
		}
	}
}
