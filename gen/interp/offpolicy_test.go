package interp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

// Off-policy actor-critic inputs (SEMANTICS.md §14): B = 3, Q = 2 members; the third
// transition is terminated and its target values are huge, which must not reach y.
var (
	offQ      = []float64{1.0, 0.5, 2.0, 0.8, 0.9, 2.5}   // Q_k(s, a) [Q=2, B=3]
	offQActor = []float64{0.3, -0.2, 1.0, 0.4, -0.5, 1.0} // Q_k(s, ã): minima at k = 0, 1 and a tie
	offQNext  = []float64{1.0, 2.0, 50.0, 1.5, 1.0, 60.0} // Q'_k(s', a')
	offReward = []float64{1.0, 0.0, -1.0}
	offTerm   = []float64{0, 0, 1}
)

const offHead = "package: p\ndtype: float64\nparam_dtype: float64\ndims: {Q: 2, B: 3}\nbatch: [B]\n"

func sacInputs(logAlpha float64) map[string][]float64 {
	return map[string][]float64{
		"state_action_value": offQ, "state_action_value_actor": offQActor, "next.state_action_value": offQNext,
		"log_prob": {-1.2, -0.4, -0.9}, "next.log_prob": {-1.0, -0.5, -2.0}, "log_alpha": {logAlpha},
		"next.reward": offReward, "next.terminated": offTerm,
	}
}

// SACLoss by hand (α = 0.5, target_entropy auto = −2): V' = min_k(Q'_k − α·log π') =
// (1.5, 1.25, ·), y = r + 0.99(1 − τ)V' = (2.485, 1.2375, −1); smooth_l1 summed over the
// members; the actor's minimum takes the first member on a tie, and so does its gradient.
func TestSACHandValues(t *testing.T) {
	out := evalGrad(t, offHead+"loss: {type: sac, action_dim: 2}\n", sacInputs(math.Log(0.5)))
	near(t, []float64{2.485, 1.2375, -1}, out["value_target"], hand, "value_target")
	near(t, []float64{(2.17 + 0.32890625 + 5.5) / 3}, out["loss_qvalue"], hand, "loss_qvalue")
	near(t, []float64{(-0.9 + 0.3 - 1.45) / 3}, out["loss_actor"], hand, "loss_actor")
	near(t, []float64{math.Ln2 * (-3.2 - 2.4 - 2.9) / 3}, out["loss_alpha"], hand, "loss_alpha")
	near(t, []float64{0.5}, out["alpha"], hand, "alpha")
	near(t, []float64{2.5 / 3}, out["entropy"], hand, "entropy")
	near(t, []float64{1.685, 0.7375, 3.5}, out["td_error"], hand, "td_error (absolute)")
	near(t, []float64{-1.0 / 3, -0.7375 / 3, 1.0 / 3, -1.0 / 3, -0.3375 / 3, 1.0 / 3}, out["grad.state_action_value"], hand, "grad.state_action_value")
	near(t, []float64{-1.0 / 3, 0, -1.0 / 3, 0, -1.0 / 3, 0}, out["grad.state_action_value_actor"], hand, "grad.state_action_value_actor")
	near(t, []float64{0.5 / 3, 0.5 / 3, 0.5 / 3}, out["grad.log_prob"], hand, "grad.log_prob")
	near(t, []float64{8.5 / 3}, out["grad.log_alpha"], hand, "grad.log_alpha")
	for _, k := range []string{"grad.next.state_action_value", "grad.next.log_prob"} {
		_, ok := out[k]
		require.False(t, ok, "%s: targets get no gradient", k)
	}
}

// SAC's options: min_alpha clamps α and loss_alpha's log α but passes the gradient straight
// through; fixed_alpha leaves log_alpha without a gradient; reduction none keeps [B] and drops
// alpha and entropy; an explicit target_entropy; skip_done_states zeroes log π' where done.
func TestSACOptions(t *testing.T) {
	out := evalGrad(t, offHead+"loss: {type: sac, action_dim: 2, min_alpha: 0.6}\n", sacInputs(math.Log(0.5)))
	near(t, []float64{0.6}, out["alpha"], hand, "alpha clamped")
	near(t, []float64{-math.Log(0.6) * (-3.2 - 2.4 - 2.9) / 3}, out["loss_alpha"], hand, "loss_alpha at the clamped log α")
	near(t, []float64{8.5 / 3}, out["grad.log_alpha"], hand, "grad.log_alpha straight through")
	near(t, []float64{1 + 0.99*1.6, 0.99 * 1.3, -1}, out["value_target"], hand, "value_target with α 0.6")
	// min_alpha alone comes with max_alpha 1e9, as TorchRL fills it (sac.py:410-414): log α = 25
	// gives α = e^(log 1e9), not e^25 = 7.2e10; the gradient still passes straight through.
	out = evalGrad(t, offHead+"loss: {type: sac, action_dim: 2, min_alpha: 0.6}\n", sacInputs(25))
	near(t, []float64{math.Exp(math.Log(1e9))}, out["alpha"], hand, "alpha clamped at 1e9")
	near(t, []float64{8.5 / 3}, out["grad.log_alpha"], hand, "grad.log_alpha straight through at the upper bound")

	out = evalGrad(t, offHead+"loss: {type: sac, fixed_alpha: true, reduction: none, target_entropy: 0.5}\n", sacInputs(math.Log(0.5)))
	_, ok := out["grad.log_alpha"]
	require.False(t, ok, "fixed_alpha: log_alpha is a buffer")
	_, ok = out["alpha"]
	require.False(t, ok, "reduction none drops alpha")
	near(t, []float64{-0.9, 0.3, -1.45}, out["loss_actor"], hand, "loss_actor none")
	near(t, []float64{math.Ln2 * -0.7, math.Ln2 * 0.1, math.Ln2 * -0.4}, out["loss_alpha"], hand, "loss_alpha none, target_entropy 0.5")
	near(t, []float64{2.17, 0.32890625, 5.5}, out["loss_qvalue"], hand, "loss_qvalue none")

	in := sacInputs(math.Log(0.5))
	in["next.done"] = []float64{0, 1, 1} // the second transition truncated: log π' = 0 there
	out = eval(t, offHead+"loss: {type: sac, action_dim: 2, skip_done_states: true}\n", in)
	near(t, []float64{2.485, 0.99 * 1.0, -1}, out["value_target"], hand, "value_target skip_done_states")
}

// TD3Loss by hand: y = r + 0.99(1 − τ)·min_k Q'_k = (1.99, 0.99, −1); the actor takes member 0
// only; the priority is squared.
func TestTD3HandValues(t *testing.T) {
	in := map[string][]float64{"state_action_value": offQ, "state_action_value_actor": offQActor, "next.state_action_value": offQNext,
		"next.reward": offReward, "next.terminated": offTerm}
	out := evalGrad(t, offHead+"loss: {type: td3}\n", in)
	near(t, []float64{1.99, 0.99, -1}, out["value_target"], hand, "value_target")
	near(t, []float64{1.0, 1.0, 50.0}, out["next_state_value"], hand, "next_state_value")
	near(t, []float64{(1.18005 + 0.1241 + 5.5) / 3}, out["loss_qvalue"], hand, "loss_qvalue")
	near(t, []float64{-1.1 / 3}, out["loss_actor"], hand, "loss_actor")
	near(t, []float64{1.19 * 1.19, 0.49 * 0.49, 12.25}, out["td_error"], hand, "td_error")
	near(t, []float64{-1.0 / 3, -1.0 / 3, -1.0 / 3, 0, 0, 0}, out["grad.state_action_value_actor"], hand, "grad.state_action_value_actor")
	near(t, []float64{-0.99 / 3, -0.49 / 3, 1.0 / 3, -1.0 / 3, -0.09 / 3, 1.0 / 3}, out["grad.state_action_value"], hand, "grad.state_action_value")
	// A NaN in another member does not reach loss_actor.
	in["state_action_value_actor"] = []float64{0.3, -0.2, 1.0, math.NaN(), 0, 0}
	out = eval(t, offHead+"loss: {type: td3, reduction: sum}\n", in)
	near(t, []float64{-1.1}, out["loss_actor"], hand, "loss_actor sum")
	// param_dtype float32 (the default): TD(0)'s γ is float32(0.99).
	out = eval(t, strings.Replace(offHead, "param_dtype: float64\n", "", 1)+"loss: {type: td3}\n", in)
	g := float64(float32(0.99))
	near(t, []float64{1 + g, g, -1}, out["value_target"], hand, "value_target γ float32")
}

// DDPGLoss by hand: y = r + 0.99(1 − τ)Q'(s', π'(s')) = (1.99, 1.98, −1), l2 by default.
func TestDDPGHandValues(t *testing.T) {
	in := map[string][]float64{"state_action_value": {1.0, 0.5, 2.0}, "state_action_value_actor": {0.3, -0.2, 1.0},
		"next.state_action_value": {1.0, 2.0, 50.0}, "next.reward": offReward, "next.terminated": offTerm}
	src := "package: p\ndtype: float64\nparam_dtype: float64\ndims: {B: 3}\nbatch: [B]\nloss: {type: ddpg}\n"
	out := evalGrad(t, src, in)
	near(t, []float64{1.99, 1.98, -1}, out["value_target"], hand, "value_target")
	near(t, []float64{(0.9801 + 2.1904 + 9) / 3}, out["loss_value"], hand, "loss_value")
	near(t, []float64{-1.1 / 3}, out["loss_actor"], hand, "loss_actor")
	near(t, []float64{0.9801, 2.1904, 9}, out["td_error"], hand, "td_error")
	near(t, []float64{2.0}, out["pred_value_max"], hand, "pred_value_max")
	near(t, []float64{1.99}, out["target_value_max"], hand, "target_value_max")
	near(t, []float64{-1.98 / 3, -2.96 / 3, 2.0}, out["grad.state_action_value"], hand, "grad.state_action_value")
	near(t, []float64{-1.0 / 3, -1.0 / 3, -1.0 / 3}, out["grad.state_action_value_actor"], hand, "grad.state_action_value_actor")
	// TD(1) over the batch as time (TorchRL's default time dim): G_2 = −1, G_1 = 0 + 0.99·G_2, G_0 = 1 + 0.99·G_1.
	out = eval(t, strings.Replace(src, "loss:", "estimator: {type: td1}\nloss:", 1), map[string][]float64{
		"state_action_value": {1.0, 0.5, 2.0}, "state_action_value_actor": {0.3, -0.2, 1.0},
		"next.state_action_value": {1.0, 2.0, 50.0}, "next.reward": offReward, "next.terminated": offTerm, "next.done": {0, 0, 1}})
	near(t, []float64{1 + 0.99*(0.99*-1), 0.99 * -1, -1}, out["value_target"], hand, "value_target TD(1)")
}

// What TorchRL refuses is a spec error: a gamma argument (TypeError), GAE and V-trace
// (NotImplementedError), SAC's target_entropy auto without the action dim, or with a dim
// name that names no dim, a batch dim or the ensemble dim.
func TestOffPolicySpecChecks(t *testing.T) {
	for _, c := range []struct{ loss, err string }{
		{"{type: sac, action_dim: 1, gamma: 0.9}", "loss.gamma: not taken: TorchRL's losses raise TypeError for gamma"},
		{"{type: td3, gamma: 0.9}", "loss.gamma: not taken: TorchRL's losses raise TypeError for gamma"},
		{"{type: ddpg, gamma: 0.9}", "loss.gamma: not taken: TorchRL's losses raise TypeError for gamma"},
		{"{type: sac}", "loss.action_dim: required with target_entropy auto"},
		{"{type: sac, action_dim: D}", `loss.action_dim: "D" is not a dim: want an integer, or the name of a dim declared under dims`},
		{"{type: sac, action_dim: B}", `loss.action_dim: "B" is a batch dim, not a size of one element`},
		{"{type: sac, action_dim: 1, min_alpha: 2, max_alpha: 1}", "loss.min_alpha: 2 is above max_alpha 1"},
		// TorchRL's ValueError (sac.py:410-414, cql.py:333-337): accepted before (the off-policy review).
		{"{type: sac, action_dim: 1, min_alpha: 0.5, max_alpha: 0}", "loss.max_alpha: must be null or greater than 0 when min_alpha is set"},
		{"{type: cql, action_dim: 1, min_alpha: 0.5, max_alpha: 0}", "loss.max_alpha: must be null or greater than 0 when min_alpha is set"},
	} {
		_, err := spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nloss: "+c.loss+"\n"), lower.Registry())
		require.ErrorContains(t, err, c.err, c.loss)
	}
	for _, loss := range []string{"{type: sac, action_dim: Q}", "{type: cql, action_dim: Q}"} {
		_, err := spec.Parse("t.yaml", []byte("package: p\ndims: {Q: 2, B: 4, R: 3}\nbatch: [B]\nloss: "+loss+"\n"), lower.Registry())
		require.ErrorContains(t, err, `loss.action_dim: "Q" is the ensemble dim (the Q-networks), not a size of the action`, loss)
	}
	_, err := spec.Parse("t.yaml", []byte("package: p\ndims: {Q: 2, B: 4, R: 3}\nbatch: [B]\nloss: {type: cql, action_dim: R}\n"), lower.Registry())
	require.ErrorContains(t, err, `loss.action_dim: "R" is CQL's random_dim (the sampled actions), not a size of the action`)
	for _, loss := range []string{"{type: sac, action_dim: 1}", "{type: td3}", "{type: ddpg}"} {
		for _, est := range []string{"gae", "vtrace"} {
			_, err := spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nestimator: {type: "+est+"}\nloss: "+loss+"\n"), lower.Registry())
			require.ErrorContains(t, err, "estimator.type: "+est+" is not supported by", loss)
		}
	}
	for _, loss := range []string{"{type: sac, action_dim: 1, min_alpha: 0.5, max_alpha: null}", "{type: sac, action_dim: 1, max_alpha: 0}"} {
		_, err := spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nloss: "+loss+"\n"), lower.Registry())
		require.NoError(t, err, "null (TorchRL's None, 1e9 beside min_alpha), and 0 alone (no bound) are accepted: %s", loss)
	}
	s, err := spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: sac, target_entropy: auto, action_dim: 3}\n"), lower.Registry())
	require.NoError(t, err)
	require.Equal(t, "td0", s.Estimator.Type)
	require.Equal(t, 0.99, s.Estimator.Float("gamma"))
}

// DiscreteSACLoss by hand (SEMANTICS.md §15.3): Q = 2, B = 2, A = 2, α = 0.5, categorical
// actions (1, 0); the second transition is terminated and its huge next values must not reach
// y. p = softmax(logits) = (½, ½), (¾, ¼); p' = (½, ½), (¼, ¾); min_k Q'_k = (1, 1), (3, 50);
// V'_0 = Σ p'(min Q' − α log p') = 1 + ½ ln 2; the actor's min_k Q_k = (0.5, 2), (−0.5, 1).
func TestDiscreteSACHandValues(t *testing.T) {
	const head = "package: p\ndtype: float64\nparam_dtype: float64\ndims: {Q: 2, B: 2, A: 2}\nbatch: [B]\n"
	in := map[string][]float64{
		"logits": {0, 0, math.Log(3), 0}, "next.logits": {0, 0, 0, math.Log(3)},
		"action_value":      {0.5, 2.0, -0.5, 1.0, 1.0, 2.5, 0.0, 3.0},
		"next.action_value": {1, 2, 3, 50, 2, 1, 4, 60},
		"action":            {1, 0}, "log_alpha": {math.Log(0.5)},
		"next.reward": {1, -1}, "next.terminated": {0, 1},
	}
	out := evalGrad(t, head+"loss: {type: discrete_sac, action_dim: A, action_space: categorical}\n", in)
	y0 := 1 + 0.99*(1+0.5*math.Ln2)
	near(t, []float64{y0, -1}, out["value_target"], hand, "value_target")
	sl1 := func(x float64) float64 { return 0.5 * x * x } // |x| < 1 here
	near(t, []float64{(sl1(2-y0) + sl1(2.5-y0) + 0.125 + 0.5) / 2}, out["loss_qvalue"], hand, "loss_qvalue")
	l1 := math.Log(0.75)
	l2 := math.Log(0.25)
	g := [][]float64{{-0.5*math.Ln2 - 0.5, -0.5*math.Ln2 - 2}, {0.5*l1 + 0.5, 0.5*l2 - 1}}
	p := [][]float64{{0.5, 0.5}, {0.75, 0.25}}
	gbar := []float64{p[0][0]*g[0][0] + p[0][1]*g[0][1], p[1][0]*g[1][0] + p[1][1]*g[1][1]}
	near(t, []float64{(gbar[0] + gbar[1]) / 2}, out["loss_actor"], hand, "loss_actor")
	plp := []float64{-math.Ln2, 0.75*l1 + 0.25*l2}
	te := 0.98 * math.Ln2 // auto: −log(1/A)·0.98
	near(t, []float64{math.Ln2 * (plp[0] + plp[1] + 2*te) / 2}, out["loss_alpha"], hand, "loss_alpha")
	near(t, []float64{-(plp[0] + plp[1]) / 2}, out["entropy"], hand, "entropy")
	near(t, []float64{0.5}, out["alpha"], hand, "alpha")
	near(t, []float64{y0 - 2, 1}, out["td_error"], hand, "td_error (absolute)")
	near(t, []float64{0, (2 - y0) / 2, 0.25, 0, 0, (2.5 - y0) / 2, 0.5, 0}, out["grad.action_value"], hand, "grad.action_value")
	var gz []float64
	for b := range p {
		for a := range p[b] {
			gz = append(gz, p[b][a]*(g[b][a]-gbar[b])/2)
		}
	}
	near(t, gz, out["grad.logits"], hand, "grad.logits")
	near(t, []float64{-(plp[0] + plp[1] + 2*te) / 2}, out["grad.log_alpha"], hand, "grad.log_alpha")
	for _, k := range []string{"grad.next.action_value", "grad.next.logits"} {
		_, ok := out[k]
		require.False(t, ok, "%s: targets get no gradient", k)
	}

	// skip_done_states: V' = 0 where done (the second row), log p' = log_softmax.
	in["next.done"] = []float64{0, 1}
	out = eval(t, head+"loss: {type: discrete_sac, action_dim: A, action_space: categorical, skip_done_states: true, reduction: none}\n", in)
	near(t, []float64{y0, -1}, out["value_target"], hand, "value_target skip_done_states")
	near(t, gbar, out["loss_actor"], hand, "loss_actor none")
	_, ok := out["entropy"]
	require.False(t, ok, "reduction none drops entropy")
}

// REDQLoss by hand (SEMANTICS.md §15.4): N = 3 members, B = 2, α = 0.5 (inside the default
// clamp [0.1, 10]), the subset {0, 2}: member 1's smaller next value (1 < 2) must not reach
// the target; the second transition is terminated. V' = (2, 40.5), y = (2.98, −1); every
// member enters loss_actor and loss_qvalue, and the means run over N·B (and 2·B) elements.
func TestREDQHandValues(t *testing.T) {
	const head = "package: p\ndtype: float64\nparam_dtype: float64\ndims: {Q: 3, B: 2}\nbatch: [B]\n"
	in := func(logAlpha float64) map[string][]float64 {
		return map[string][]float64{
			"log_prob": {-1, -0.5}, "next.log_prob": {-2, -1}, "log_alpha": {logAlpha},
			"next.state_action_value":  {1, 40, 0, 50, 2, 60},
			"state_action_value":       {3.0, -0.5, 2.5, 0.0, 2.0, -2.0},
			"state_action_value_actor": {0.5, 1, -1, 2, 0, 0},
			"selected_models":          {1, 0, 1},
			"next.reward":              {1, -1}, "next.terminated": {0, 1},
		}
	}
	out := evalGrad(t, head+"loss: {type: redq, action_dim: 1}\n", in(math.Log(0.5)))
	near(t, []float64{2, 40.5}, out["next_state_value"], hand, "next_state_value: the subset's minimum")
	near(t, []float64{2.98, -1}, out["value_target"], hand, "value_target")
	near(t, []float64{0}, out["empty_model_subset"], hand, "empty_model_subset")
	near(t, []float64{1.7206 / 6}, out["loss_qvalue"], hand, "loss_qvalue")
	near(t, []float64{-4.75 / 6}, out["loss_actor"], hand, "loss_actor")
	near(t, []float64{1.0625}, out["loss_alpha"], hand, "loss_alpha")
	near(t, []float64{1.125}, out["entropy"], hand, "entropy over both samples")
	near(t, []float64{0.5}, out["alpha"], hand, "alpha")
	near(t, []float64{0.9604, 1}, out["td_error"], hand, "td_error (squared)")
	near(t, []float64{0.02 / 6, 0.5 / 6, -0.48 / 6, 1.0 / 6, -0.98 / 6, -1.0 / 6}, out["grad.state_action_value"], hand, "grad.state_action_value")
	near(t, []float64{-1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6}, out["grad.state_action_value_actor"], hand, "grad.state_action_value_actor")
	near(t, []float64{0.25, 0.25}, out["grad.log_prob"], hand, "grad.log_prob: N·α/n")
	near(t, []float64{1.0625}, out["grad.log_alpha"], hand, "grad.log_alpha")
	for _, k := range []string{"grad.next.state_action_value", "grad.next.log_prob"} {
		_, ok := out[k]
		require.False(t, ok, "%s: targets get no gradient", k)
	}

	// log α = ln 20 is clamped to ln 10: α = 10 in every term, the gradient straight through;
	// reduction none keeps [Q, B] and sums loss_alpha's two samples per transition.
	out = evalGrad(t, head+"loss: {type: redq, action_dim: 1, reduction: none}\n", in(math.Log(20)))
	near(t, []float64{-10 * -5, -10 * -3.5}, out["loss_alpha"], hand, "loss_alpha none at the clamped α")
	near(t, []float64{-10.5, -6, -9, -7, -10, -5}, out["loss_actor"], hand, "loss_actor none [Q, B]")
	near(t, []float64{10 * 8.5}, out["grad.log_alpha"], hand, "grad.log_alpha straight through")
	_, ok := out["alpha"]
	require.False(t, ok, "reduction none drops alpha")

	bad := in(math.Log(0.5))
	bad["selected_models"] = []float64{0, 0, 0}
	out = eval(t, head+"loss: {type: redq, action_dim: 1}\n", bad)
	near(t, []float64{1}, out["empty_model_subset"], hand, "an empty subset is a data error")
}
