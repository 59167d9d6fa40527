package interp_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A2C and REINFORCE inputs (SEMANTICS.md §15): B = 3, the advantage and value target as
// data. The critic's errors V − y = (−0.5, 2, 0.2) put the middle element on smooth_l1's
// linear part.
const onHead = "package: p\ndtype: float64\nparam_dtype: float64\ndims: {B: 3}\nbatch: [B]\n"

func onInputs(drop ...string) map[string][]float64 {
	in := map[string][]float64{
		"log_prob": {-1, -0.5, -2}, "advantage": {1, -2, 0.5}, "entropy": {0.5, 1.0, 1.5},
		"value_target": {1, 2, 3}, "state_value": {0.5, 4, 3.2}, "old_state_value": {0.4, 3.0, 3.0},
	}
	for _, k := range drop {
		delete(in, k)
	}
	return in
}

// A2CLoss by hand, TorchRL's defaults: −log π·A = (1, −1, 1), smooth_l1 of the critic's
// errors = (0.125, 1.5, 0.02), entropy_coeff 0.01.
func TestA2CHandValues(t *testing.T) {
	out := evalGrad(t, onHead+"loss: {type: a2c}\n", onInputs("old_state_value"))
	near(t, []float64{1.0 / 3}, out["loss_objective"], hand, "loss_objective")
	near(t, []float64{1.0}, out["entropy"], hand, "entropy")
	near(t, []float64{-0.01}, out["loss_entropy"], hand, "loss_entropy")
	near(t, []float64{1.645 / 3}, out["loss_critic"], hand, "loss_critic")
	near(t, []float64{-1.0 / 3, 2.0 / 3, -0.5 / 3}, out["grad.log_prob"], hand, "grad.log_prob")
	near(t, []float64{-0.01 / 3, -0.01 / 3, -0.01 / 3}, out["grad.entropy"], hand, "grad.entropy")
	near(t, []float64{-0.5 / 3, 1.0 / 3, 0.2 / 3}, out["grad.state_value"], hand, "grad.state_value")
	_, ok := out["grad.advantage"]
	require.False(t, ok, "the advantage is data")
}

// A2C's options: critic_coeff scales the critic (2), clip_value takes the larger of the
// clipped and unclipped losses (the middle element's clipped loss is 1.0 < 1.5), reduction
// none keeps [B] and still reports entropy; critic_coeff null drops the critic term and its
// input, 0 keeps it as zeros; entropy_coeff 0 drops the entropy outputs.
func TestA2COptions(t *testing.T) {
	out := evalGrad(t, onHead+"loss: {type: a2c, critic_coeff: 2, clip_value: 0.5, reduction: none}\n", onInputs())
	near(t, []float64{1, -1, 1}, out["loss_objective"], hand, "loss_objective none")
	near(t, []float64{0.25, 3, 0.04}, out["loss_critic"], hand, "loss_critic none, clipped")
	near(t, []float64{1.0 / 3}, out["value_clip_fraction"], hand, "value_clip_fraction")
	near(t, []float64{1.0}, out["entropy"], hand, "entropy with reduction none")
	near(t, []float64{-1, 2, 0.4}, out["grad.state_value"], hand, "grad.state_value: the unclipped loss wins everywhere")

	out = eval(t, onHead+"loss: {type: a2c, critic_coeff: null, entropy_coeff: 0}\n", onInputs("old_state_value", "entropy", "value_target", "state_value"))
	for _, k := range []string{"loss_critic", "entropy", "loss_entropy"} {
		_, ok := out[k]
		require.False(t, ok, "%s dropped", k)
	}
	out = eval(t, onHead+"loss: {type: a2c, critic_coeff: 0}\n", onInputs("old_state_value"))
	near(t, []float64{0}, out["loss_critic"], hand, "critic_coeff 0 keeps loss_critic")
}

// ReinforceLoss by hand: −log π·A with A detached, the critic's smooth_l1 without a
// coefficient, no entropy term.
func TestReinforceHandValues(t *testing.T) {
	out := evalGrad(t, onHead+"loss: {type: reinforce}\n", onInputs("old_state_value", "entropy"))
	near(t, []float64{1.0 / 3}, out["loss_actor"], hand, "loss_actor")
	near(t, []float64{1.645 / 3}, out["loss_value"], hand, "loss_value")
	near(t, []float64{-1.0 / 3, 2.0 / 3, -0.5 / 3}, out["grad.log_prob"], hand, "grad.log_prob")
	near(t, []float64{-0.5 / 3, 1.0 / 3, 0.2 / 3}, out["grad.state_value"], hand, "grad.state_value")
	_, ok := out["entropy"]
	require.False(t, ok, "no entropy term")

	out = eval(t, onHead+"loss: {type: reinforce, clip_value: 0.5, loss_critic_type: l2, reduction: sum}\n", onInputs("entropy"))
	near(t, []float64{0.25 + 4 + 0.04}, out["loss_value"], hand, "loss_value sum l2, clipped")
	near(t, []float64{1.0 / 3}, out["value_clip_fraction"], hand, "value_clip_fraction")
}

// PPOLoss's critic_coeff None with a critic is 1.0 (ppo.py:502-505: the `elif` that would
// turn None off never sees it; the docstring says otherwise), so null keeps the critic at
// 1.0, and 0 drops it. Smooth-L1 of the critic's errors (0.5, −2, −0.2): (0.125, 1.5, 0.02).
// lossgen dropped the term for null (the PPO-with-distributions review).
func TestPPOCriticCoeffNull(t *testing.T) {
	for _, typ := range []string{"ppo", "clip_ppo"} { // klpen_ppo shares the parameter (ppoParams)
		in := onInputs("old_state_value")
		in["sample_log_prob"] = []float64{-1, -0.5, -2}
		out := eval(t, onHead+"loss: {type: "+typ+", critic_coeff: null}\n", in)
		near(t, []float64{1.645 / 3}, out["loss_critic"], hand, typ+" critic_coeff null is 1.0")
		delete(in, "state_value")
		delete(in, "value_target")
		out = eval(t, onHead+"loss: {type: "+typ+", critic_coeff: 0}\n", in)
		_, ok := out["loss_critic"]
		require.False(t, ok, "%s: critic_coeff 0 drops loss_critic", typ)
	}
}
