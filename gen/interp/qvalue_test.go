package interp_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/spec"
)

// QValueModule (v0.11) on SEMANTICS.md §9.5's values [1, 3, 3, 2], with a mask and an
// all-masked row: one_hot marks both tied maxima (chosen 2·3); categorical takes the first;
// mult_one_hot picks within each chunk; masked actions are finfo.min, so an all-masked row
// marks every action and its chosen value k·finfo.min overflows to −inf.
func TestQValueHandValues(t *testing.T) {
	const head = "package: p\ndtype: float64\ndims: {B: 3, A: 4}\nbatch: [B]\n"
	values := []float64{1, 3, 3, 2, 1, 3, 3, 2, 5, -1, 0, 2}
	mask := []float64{1, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0}
	in := map[string][]float64{"action_value": values}
	lo := -math.MaxFloat64

	out := eval(t, head+"transforms: [{type: qvalue, action_dim: A}]\n", in)
	require.Equal(t, []float64{0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0}, out["action"])
	require.Equal(t, []float64{6, 6, 5}, out["chosen_action_value"])
	require.Equal(t, values, out["action_value"])

	out = eval(t, head+"transforms: [{type: qvalue, action_dim: A, action_space: categorical}]\n", in)
	require.Equal(t, []float64{1, 1, 0}, out["action"])
	require.Equal(t, []float64{3, 3, 5}, out["chosen_action_value"])

	out = eval(t, head+"transforms: [{type: qvalue, action_dim: A, action_space: mult_one_hot, var_nums: [2, 2]}]\n", in)
	require.Equal(t, []float64{0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1}, out["action"])
	require.Equal(t, []float64{6, 6, 7}, out["chosen_action_value"])

	masked := map[string][]float64{"action_value": values}
	out = eval(t, head+"transforms: [{type: qvalue, action_dim: A}]\nkeys: {action_mask: mask}\n", with(masked, "mask", mask))
	require.Equal(t, []float64{0, 1, 1, 0, 0, 0, 1, 0, 1, 1, 1, 1}, out["action"])
	require.Equal(t, []float64{6, 3, math.Inf(-1)}, out["chosen_action_value"])
	require.Equal(t, []float64{1, 3, 3, 2, 1, lo, 3, 2, lo, lo, lo, lo}, out["action_value"])

	out = eval(t, head+"transforms: [{type: qvalue, action_dim: A, action_space: categorical}]\nkeys: {action_mask: mask}\n", with(masked, "mask", mask))
	require.Equal(t, []float64{1, 2, 0}, out["action"])
	require.Equal(t, []float64{3, 3, lo}, out["chosen_action_value"])

	// float32: the mask value is float32's most negative finite value; the all-masked row's
	// chosen value 4·finfo(float32).min is −inf as in a float32 kernel.
	out = eval(t, "package: p\ndims: {B: 3, A: 4}\nbatch: [B]\ntransforms: [{type: qvalue, action_dim: A}]\nkeys: {action_mask: mask}\n", with(masked, "mask", mask))
	require.Equal(t, []float64{6, 3, math.Inf(-1)}, out["chosen_action_value"])
	require.Equal(t, -math.MaxFloat32, out["action_value"][5])
}

// DistributionalQValueModule on §9.5: support [−1, 0, 1], two actions whose atom
// probabilities are [0.2, 0.5, 0.3] and [0.1, 0.3, 0.6] (laid out [K, A]): expected Q
// [0.1, 0.5], so action 1. A positive log-prob is counted by the fault output.
func TestDistributionalQValueHandValues(t *testing.T) {
	const src = "package: p\ndtype: float64\nparam_dtype: float64\ndims: {B: 1, K: 3, A: 2}\nbatch: [B]\ntransforms: [{type: distributional_qvalue, action_dim: A, atom_dim: K, support: [-1, 0, 1]%s}]\n"
	lv := []float64{math.Log(0.2), math.Log(0.1), math.Log(0.5), math.Log(0.3), math.Log(0.3), math.Log(0.6)}
	out := eval(t, sprintf(src, ""), map[string][]float64{"action_value": lv})
	near(t, []float64{0.1, 0.5}, out["expected_action_value"], hand, "expected_action_value")
	require.Equal(t, []float64{0, 1}, out["action"])
	require.Equal(t, []float64{0}, out["invalid_action_value"])
	out = eval(t, sprintf(src, ", action_space: categorical"), map[string][]float64{"action_value": lv})
	require.Equal(t, []float64{1}, out["action"])

	bad := append([]float64(nil), lv...)
	bad[0], bad[3] = 0.5, 1e-300
	out = eval(t, sprintf(src, ""), map[string][]float64{"action_value": bad})
	require.Equal(t, []float64{2}, out["invalid_action_value"])
	// A masked-out positive value is finfo.min before the check, as in TorchRL.
	out = eval(t, sprintf(src, "")+"keys: {action_mask: m}\n", map[string][]float64{"action_value": bad, "m": {0, 1}})
	require.Equal(t, []float64{1}, out["invalid_action_value"])
	require.Equal(t, []float64{0, 1}, out["action"], "action 0's atoms are exp(finfo.min) = 0: expected 0")
	near(t, []float64{0, 0.5}, out["expected_action_value"], hand, "masked expected values")
}

// Spec checks of the Q-value modules.
func TestQValueSpecChecks(t *testing.T) {
	for _, c := range []struct{ body, err string }{
		{"dims: {B: 2, A: 4}\ntransforms: [{type: qvalue, action_dim: A, action_space: mult_one_hot}]\n", "var_nums: required for action_space mult_one_hot"},
		{"dims: {B: 2, A: 4}\ntransforms: [{type: qvalue, action_dim: A, action_space: mult_one_hot, var_nums: [2, 3]}]\n", "the chunk sizes [2 3] sum to 5, but the action dim A has 4 actions"},
		{"dims: {B: 2, A: 4, C: 3}\ntransforms: [{type: qvalue}]\n", "transforms[0].action_dim: required: one of A, C"},
		{"dims: {B: 2, K: 3, A: 4}\ntransforms: [{type: distributional_qvalue, action_dim: A, atom_dim: K, support: [0, 1]}]\n", "support: has 2 values but the atom dim K has 3"},
		{"dims: {B: 2, A: 4, K: 3}\ntransforms: [{type: distributional_qvalue, action_dim: A, atom_dim: K, support: [0, 1, 2]}]\n", "atom_dim: dims.K must be declared before the action dim A"},
		{"dims: {B: 2, K: 2, A: 4}\ntransforms: [{type: distributional_qvalue, action_dim: A, atom_dim: K, support: [0, 1], action_space: mult_one_hot, var_nums: [1, 1, 2]}]\n", "3 chunks but 2 atoms"},
	} {
		_, err := spec.Parse("t.yaml", []byte("package: p\nbatch: [B]\n"+c.body), lower.Registry())
		require.ErrorContains(t, err, c.err, c.body)
	}
}

// KLRewardTransform (v0.11, §6.1, §11.2): reward − coef·(lp − ref); masked tokens have kl = 0
// and ref_log_probs = 0; a negative coef is the March 2025 sign.
func TestKLRewardHandValues(t *testing.T) {
	const src = "package: p\ndtype: float64\nparam_dtype: float64\ndims: {B: 1, L: 4}\nbatch: [B, L]\ntransforms: [{type: kl_reward, coef: %s}]\n"
	in := map[string][]float64{
		"next.reward":  {0, 0, 1, -2},
		"log_prob":     {-1, -0.5, -2, -0.1},
		"ref_log_prob": {-1.5, -0.5, -1, -0.4},
	}
	out := eval(t, sprintf(src, "0.2"), in)
	near(t, []float64{-0.1, 0, 1.2, -2.06}, out["next.reward"], hand, "reward")
	near(t, []float64{0.5, 0, -1, 0.3}, out["next.kl_penalty"], hand, "kl_penalty")
	require.Equal(t, in["ref_log_prob"], out["next.ref_log_probs"])
	out = eval(t, sprintf(src, "-0.2"), in)
	near(t, []float64{0.1, 0, 0.8, -1.94}, out["next.reward"], hand, "reward, negative coef")
	out = eval(t, sprintf(src, "0.2")+"keys: {mask: m}\n", with(in, "m", []float64{1, 1, 0, 1}))
	near(t, []float64{-0.1, 0, 1, -2.06}, out["next.reward"], hand, "masked reward")
	near(t, []float64{0.5, 0, 0, 0.3}, out["next.kl_penalty"], hand, "masked kl_penalty")
	near(t, []float64{-1.5, -0.5, 0, -0.4}, out["next.ref_log_probs"], hand, "masked ref_log_probs")
	// add_to_reward: false (TorchRL's _step): kl_penalty and ref_log_probs as before, the
	// reward neither read nor written; a TD(0) after it reads the data's reward.
	noReward := map[string][]float64{"log_prob": in["log_prob"], "ref_log_prob": in["ref_log_prob"]}
	out = eval(t, "package: p\ndtype: float64\ndims: {B: 1, L: 4}\nbatch: [B, L]\ntransforms: [{type: kl_reward, add_to_reward: false}]\n", noReward)
	require.NotContains(t, out, "next.reward")
	near(t, []float64{0.5, 0, -1, 0.3}, out["next.kl_penalty"], hand, "kl_penalty without the reward")
	require.Equal(t, in["ref_log_prob"], out["next.ref_log_probs"])
	out = eval(t, "package: p\ndtype: float64\nparam_dtype: float64\ndims: {B: 1, L: 4}\nbatch: [B, L]\ntransforms: [{type: kl_reward, add_to_reward: false}]\nestimator: {type: td0, gamma: 0.5}\n",
		with(with(with(in, "state_value", []float64{1, 1, 1, 1}), "next.state_value", []float64{2, 2, 2, 2}), "next.terminated", []float64{0, 0, 0, 1}))
	near(t, []float64{1, 1, 2, -2}, out["value_target"], hand, "TD(0) on the data's reward: r + 0.5·2, and r at the terminal step")
	// coef is a float32 tensor in TorchRL (param_dtype float32, §11.14).
	out = eval(t, "package: p\ndtype: float64\ndims: {B: 1, L: 4}\nbatch: [B, L]\ntransforms: [{type: kl_reward, coef: 0.1}]\n", in)
	near(t, []float64{-float64(float32(0.1)) * 0.5}, out["next.reward"][:1], hand, "float32 coef")
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// The logged OpenRLHF rollout in golden/data/rlhf_tokens.npz was trained on token rewards
// −0.2·(logprobs − ref_logprobs) (plus a sequence reward of 0 on the last token): the KL reward
// with coef 0.2 reproduces them to float32 rounding.
func TestKLRewardMatchesLoggedRLHFRewards(t *testing.T) {
	data, err := golden.ReadNPZ("../../golden/data/rlhf_tokens.npz")
	require.NoError(t, err)
	in := map[string][]float64{}
	for _, k := range []string{"next.reward", "log_prob", "ref_log_prob", "mask"} {
		in[k] = data[k].Float64s()
	}
	out := eval(t, "package: p\ndims: {B: 1, L: 12}\nbatch: [B, L]\ntransforms: [{type: kl_reward, coef: 0.2}]\nkeys: {mask: mask}\n", in)
	want := data["token_rewards"].Float64s()
	for i, w := range want {
		require.InDelta(t, w, out["next.reward"][i], 1e-9, "token %d", i)
	}
}
