package interp_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The policy distributions, KLPEN's KL and β, and masks against values computed by hand
// (SEMANTICS.md §1.8, §2.3, §11.3, §11.16), in float64 with float64 hyper-parameters.

const ppoHead = "package: p\ndtype: float64\nparam_dtype: float64\n"

// Categorical log-probabilities and entropies: huge logits (computed as (z − m) − log Σ e^(z−m),
// no digit lost), −inf logits and the most negative finite one (0·log 0 = 0, not NaN).
func TestCategoricalHandValues(t *testing.T) {
	src := ppoHead + "dims: {B: 3, A: 3}\nbatch: [B]\nloss: {type: ppo, distribution: categorical, action_dim: A, reduction: none, critic_coeff: 0, entropy_coeff: 1}\n"
	inf := math.Inf(-1)
	out := eval(t, src, map[string][]float64{
		"logits":          {10000, 9999, 9998, inf, 0, 0, -math.MaxFloat64, 1, 1},
		"action":          {1, 2, 0},
		"sample_log_prob": {0, 0, 0},
		"advantage":       {1, 1, 1},
	})
	// loss_objective = −exp(log π(a) − 0)·1 = −p(a).
	near(t, []float64{-0.24472847105479764, -0.5, 0}, out["loss_objective"], hand, "−p(a)")
	near(t, []float64{-0.8323955818399389, -math.Ln2, -math.Ln2}, out["loss_entropy"], hand, "−H")
	near(t, []float64{(0.8323955818399389 + 2*math.Ln2) / 3}, out["entropy"], hand, "mean H")
}

// One-hot actions read the class at the argmax of the vector (OneHotCategorical.log_prob).
func TestOneHotCategoricalHandValues(t *testing.T) {
	src := ppoHead + "dims: {B: 2, A: 3}\nbatch: [B]\nloss: {type: ppo, distribution: one_hot_categorical, action_dim: A, reduction: none, critic_coeff: 0, entropy_bonus: false}\n"
	out := eval(t, src, map[string][]float64{
		"logits":          {10000, 9999, 9998, math.Log(3), 0, 0},
		"action":          {0, 1, 0, 1, 0, 0},
		"sample_log_prob": {0, 0},
		"advantage":       {1, 2},
	})
	near(t, []float64{-0.24472847105479764, -2 * 0.6}, out["loss_objective"], hand, "−A·p(a)")
}

// Normal log-probability, entropy (summed over the event dim) and KL(old ‖ current).
func TestNormalHandValues(t *testing.T) {
	src := ppoHead + "dims: {B: 1, D: 2}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: normal, action_dim: D, critic_coeff: 0, entropy_coeff: 1, beta: 0.7}\n"
	out := eval(t, src, map[string][]float64{
		"loc": {0, 1}, "scale": {2, 0.5}, "action": {1, 1},
		"old_loc": {0, 0}, "old_scale": {1, 1},
		"sample_log_prob": {0}, "advantage": {0}, "beta": {0.7},
	})
	lp := -0.125 - 2*0.5*math.Log(2*math.Pi)
	near(t, []float64{-lp}, out["kl_approx"], hand, "log N(1; 0, 2) + log N(1; 1, ½)")
	near(t, []float64{2 * (0.5 + 0.5*math.Log(2*math.Pi))}, out["entropy"], hand, "Σ_d ½ + ½ log 2π + log σ_d")
	near(t, []float64{3.125}, out["kl"], hand, "KL = (ln 2 + 1/8 − 1/2) + (−ln 2 + 4 − 1/2)")
	near(t, []float64{0.7 * 3.125}, out["loss_objective"], hand, "−(r·0 − β·KL)")
	near(t, []float64{1.4}, out["beta"], hand, "mean KL 3.125 > 1.5·dtarg: β·2")
}

// KLPEN's categorical KL: 0 where p_old = 0, +inf where the current p = 0 < p_old; β halves
// when the mean KL is below dtarg/1.5 and stays inside the band.
func TestKLPENCategoricalHandValues(t *testing.T) {
	src := ppoHead + "dims: {B: 2, A: 3}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: categorical, action_dim: A, critic_coeff: 0, entropy_bonus: false, beta: 0.7}\n"
	inf := math.Inf(-1)
	in := map[string][]float64{
		"logits":     {math.Log(3), 0, 0, 0, 0, inf},
		"old_logits": {0, 0, inf, 0, 0, 0},
		"action":     {0, 0}, "sample_log_prob": {0, 0}, "advantage": {0, 0}, "beta": {0.7},
	}
	out := eval(t, src, in)
	near(t, []float64{0.36698458754010027, math.Inf(1)}, out["kl"], hand, "KL(½,½,0 ‖ ⅗,⅕,⅕), KL(⅓,⅓,⅓ ‖ ½,½,0)")
	in["logits"] = []float64{0, 0, 0, 0, 0, 0}
	in["old_logits"] = []float64{0, 0, 0, 0, 0, 0}
	near(t, []float64{0.35}, eval(t, src, in)["beta"], hand, "mean KL 0 < dtarg/1.5: β·½")
	// Inside the band [dtarg/1.5, 1.5·dtarg] β stays: KL(½,½ ‖ p, 1−p) = 0.01 at p ≈ 0.5705.
	q := 0.5705
	kl := 0.5*math.Log(0.5/q) + 0.5*math.Log(0.5/(1-q))
	in["logits"] = []float64{math.Log(q), math.Log(1 - q), inf, math.Log(q), math.Log(1 - q), inf}
	in["old_logits"] = []float64{0, 0, inf, 0, 0, inf}
	out = eval(t, src, in)
	near(t, []float64{kl, kl}, out["kl"], hand, "KL inside the band")
	near(t, []float64{0.7}, out["beta"], hand, "mean KL in the band: β unchanged")
}

// TanhNormal log-probability: the safe atanh of the action (clamped to ±(1 − 1e−15) in
// float64) and the affine map of low/high.
func TestTanhNormalHandValues(t *testing.T) {
	src := ppoHead + "dims: {B: 2, D: 1}\nbatch: [B]\nloss: {type: ppo, distribution: tanh_normal, action_dim: D, critic_coeff: 0, entropy_bonus: false, reduction: none}\n"
	out := eval(t, src, map[string][]float64{
		"loc": {0, 0}, "scale": {1, 1}, "action": {0.5, 1},
		"sample_log_prob": {0, 0}, "advantage": {1, 1},
	})
	near(t, []float64{-math.Exp(-0.7821250808544645), -math.Exp(-122.2406074937066)}, out["loss_objective"], hand, "−π(a)")
	src = ppoHead + "dims: {B: 1, D: 1}\nbatch: [B]\nloss: {type: ppo, distribution: tanh_normal, action_dim: D, critic_coeff: 0, entropy_bonus: false, low: -2, high: 1}\n"
	out = eval(t, src, map[string][]float64{"loc": {0}, "scale": {1}, "action": {0}, "sample_log_prob": {0}, "advantage": {0}})
	near(t, []float64{1.2666772323962288}, out["kl_approx"], hand, "−log π(0) on [−2, 1]")
}

// Masks: reductions over the valid elements, none zeroes the rest, a fully masked batch
// gives 0 means, and num_valid counts.
func TestMaskHandValues(t *testing.T) {
	src := ppoHead + "dims: {B: 2, L: 3}\nbatch: [B, L]\nloss: {type: ppo, critic_coeff: 0, entropy_coeff: 1}\nkeys: {mask: mask}\n"
	nan := math.NaN()
	in := map[string][]float64{
		"log_prob":        {0, math.Log(2), nan, 0, 0, nan},
		"sample_log_prob": {0, 0, 0, 0, 0, 0},
		"advantage":       {1, 1, nan, 3, -1, 7},
		"entropy":         {0.5, 1.5, nan, 1, 1, nan},
		"mask":            {1, 1, 0, 1, 1, 0},
	}
	out := eval(t, src, in)
	near(t, []float64{4}, out["num_valid"], hand, "valid count")
	near(t, []float64{-(1 + 2 + 3 - 1) / 4.0}, out["loss_objective"], hand, "masked mean of −r·A")
	near(t, []float64{1}, out["entropy"], hand, "masked mean H")
	near(t, []float64{-math.Log(2) / 4}, out["kl_approx"], hand, "masked kl_approx")
	in["mask"] = []float64{0, 0, 0, 0, 0, 0}
	out = eval(t, src, in)
	near(t, []float64{0, 0, 0, 0}, []float64{out["num_valid"][0], out["loss_objective"][0], out["entropy"][0], out["loss_entropy"][0]}, hand, "no valid element")
}

// KLPEN's β with a mask: updated from the masked mean of kl, and kept when no element is
// valid (TorchRL's mean over nothing is NaN, which neither comparison passes), however far
// the masked elements' kl is from dtarg (SEMANTICS.md §11.20).
func TestKLPENBetaMasked(t *testing.T) {
	src := ppoHead + "dims: {B: 3, A: 2}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: categorical, action_dim: A, critic_coeff: 0, entropy_bonus: false, beta: 1}\nkeys: {mask: mask}\n"
	in := map[string][]float64{
		"logits":     {0, 0, 0, 0, 0, 0},
		"old_logits": {0, 0, 5, -5, 0, 0}, // KL 0, large, 0
		"action":     {0, 0, 0}, "sample_log_prob": {0, 0, 0}, "advantage": {0, 0, 0}, "beta": {1},
		"mask": {1, 1, 0},
	}
	near(t, []float64{2}, eval(t, src, in)["beta"], hand, "masked mean KL > 1.5·dtarg: β·2")
	in["mask"] = []float64{1, 0, 1}
	near(t, []float64{0.5}, eval(t, src, in)["beta"], hand, "masked mean KL 0 < dtarg/1.5: β·½")
	for _, old := range [][]float64{{0, 0, 0, 0, 0, 0}, {0, 0, 5, -5, 0, 0}} {
		in["old_logits"], in["mask"] = old, []float64{0, 0, 0}
		out := eval(t, src, in)
		near(t, []float64{0, 1}, []float64{out["num_valid"][0], out["beta"][0]}, hand, "no valid element: β stays")
	}
}

// Under param_dtype float32 (the default) a float64 run rounds what TorchRL holds in float32
// tensors, as TorchRL v0.11 computes it (the numbers are torch's, in float64 with the
// float32 buffers): KLPEN's β updated in place in its float32 buffer; TanhNormal's affine
// log-determinant log((high − low)/2), taken in float32 and added to each dim's term; GAE's λγ, the float32 product of
// the float32 λ and γ (not the product of the doubles rounded once, which differs here).
func TestFloat32BuffersInFloat64Runs(t *testing.T) {
	const head = "package: p\ndtype: float64\n"
	src := head + "dims: {B: 1, A: 2}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: categorical, action_dim: A, critic_coeff: 0, entropy_bonus: false, beta: 3.3, increment: 1.7}\n"
	out := eval(t, src, map[string][]float64{
		"logits": {0, 0}, "old_logits": {5, -5}, "action": {0}, "sample_log_prob": {0}, "advantage": {0}, "beta": {float64(float32(3.3))},
	})
	require.Equal(t, 5.610000133514404, out["beta"][0], "β·increment rounded in β's float32 buffer")

	src = head + "dims: {B: 1, D: 1}\nbatch: [B]\nloss: {type: ppo, distribution: tanh_normal, action_dim: D, critic_coeff: 0, entropy_bonus: false, low: -2, high: 2}\n"
	out = eval(t, src, map[string][]float64{"loc": {0}, "scale": {1}, "action": {0}, "sample_log_prob": {0}, "advantage": {0}})
	near(t, []float64{1.6120857156692723}, out["kl_approx"], 1e-15, "−log π(0) on [−2, 2], log 2 taken in float32")
	// Three action dims on [−2, 1]: torch's ComposeTransform adds f32(log 1.5) to each dim's
	// float64 tanh term, then the dims are summed in float64 (not the float32 sum of three
	// copies, 1.2163952589, which is 3e−8 off). The value is torch 1.13's TanhNormal of the
	// same parameters, in float64.
	src = head + "dims: {B: 1, D: 3}\nbatch: [B]\nloss: {type: ppo, distribution: tanh_normal, action_dim: D, critic_coeff: 0, entropy_bonus: false, low: -2, high: 1}\n"
	out = eval(t, src, map[string][]float64{"loc": {0, 0, 0}, "scale": {1, 1, 1}, "action": {0, 0, 0}, "sample_log_prob": {0}, "advantage": {0}})
	near(t, []float64{3.800031661570019}, out["kl_approx"], 1e-15, "−log π(0) on [−2, 1]³, f32(log 1.5) added to each dim's term")

	src = head + "dims: {N: 1, T: 2}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.9, lmbda: 0.8}\n"
	out = eval(t, src, map[string][]float64{
		"next.reward": {0, 1}, "state_value": {0, 0}, "next.state_value": {0, 0},
		"next.done": {0, 0}, "next.terminated": {0, 0},
	})
	require.Equal(t, 0.7199999690055847, out["advantage"][0], "λγ = f32(f32(0.8)·f32(0.9))")
}
