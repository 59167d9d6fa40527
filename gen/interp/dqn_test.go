package interp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

// DQN inputs of SEMANTICS.md §13.3: B = 2, A = 3, γ = 0.9. Row 0 has a tie in the target's
// next values (4, 4); row 1 is terminated and its next values hold 1e300, which must not
// reach the target.
var dqn123 = map[string][]float64{
	"action_value":      {1, 2, 3, 0.5, -1, 2},
	"next.action_value": {2, 4, 4, 1e300, 3, 0},
	"next.reward":       {1, -1},
	"next.terminated":   {0, 1},
}

// dqnSpec is a float64 DQN spec over dqn123's dims with γ = 0.9 exact and the loss's extra
// parameters.
func dqnSpec(typ, params string) string {
	return "package: p\ndtype: float64\nparam_dtype: float64\ndims: {B: 2, A: 3}\nbatch: [B]\nestimator: {type: td0, gamma: 0.9}\nloss: {type: " +
		typ + ", action_dim: A" + params + "}\n"
}

// categorical and oneHot are the stored actions 0 and 2 in each action space.
var (
	categorical = []float64{0, 2}
	oneHot      = []float64{1, 0, 0, 0, 0, 1}
)

// DQNLoss by hand: Q(s, a) = [1, 2]; the target's next value is the maximum [4, ·] for
// categorical and 2·4 for one_hot (the tie counts twice, TorchRL's chosen_action_value);
// the terminated row bootstraps nothing. l2 mean, td_error and the gradient at the stored
// action only.
func TestDQNHandValues(t *testing.T) {
	out := evalGrad(t, dqnSpec("dqn", ", action_space: categorical"), with(dqn123, "action", categorical))
	near(t, []float64{4.6, -1}, out["value_target"], hand, "value_target")
	near(t, []float64{(3.6*3.6 + 9) / 2}, out["loss"], hand, "loss")
	near(t, []float64{12.96, 9}, out["td_error"], hand, "td_error")
	near(t, []float64{-3.6, 0, 0, 0, 0, 3}, out["grad.action_value"], hand, "grad.action_value")
	near(t, []float64{3.6, -3}, out["advantage"], hand, "advantage y − Q(s, a)")
	_, ok := out["grad.next.action_value"]
	require.False(t, ok, "the target net gets no gradient")

	out = evalGrad(t, dqnSpec("dqn", ", action_space: one_hot"), with(dqn123, "action", oneHot))
	near(t, []float64{1 + 0.9*8, -1}, out["value_target"], hand, "one_hot value_target: 2·max on the tie")
	near(t, []float64{(7.2*7.2 + 9) / 2}, out["loss"], hand, "one_hot loss")
	near(t, []float64{-7.2, 0, 0, 0, 0, 3}, out["grad.action_value"], hand, "one_hot grad.action_value")
}

// The distances and reductions: smooth_l1 is Huber with β 1 (|x| − 0.5 beyond 1, gradient
// clamp(x, −1, 1)), l1 the absolute error; sum and none.
func TestDQNLossFunctions(t *testing.T) {
	in := with(dqn123, "action", categorical)
	out := evalGrad(t, dqnSpec("dqn", ", action_space: categorical, loss_function: smooth_l1"), in)
	near(t, []float64{(3.1 + 2.5) / 2}, out["loss"], hand, "smooth_l1 mean")
	near(t, []float64{-0.5, 0, 0, 0, 0, 0.5}, out["grad.action_value"], hand, "smooth_l1 gradient")
	out = evalGrad(t, dqnSpec("dqn", ", action_space: categorical, loss_function: l1, reduction: sum"), in)
	near(t, []float64{6.6}, out["loss"], hand, "l1 sum")
	near(t, []float64{-1, 0, 0, 0, 0, 1}, out["grad.action_value"], hand, "l1 sum gradient")
	out = eval(t, dqnSpec("dqn", ", action_space: categorical, reduction: none"), in)
	near(t, []float64{12.96, 9}, out["loss"], hand, "l2 none")
	// |x| < 1: smooth_l1 is 0.5·x².
	small := with(in, "next.action_value", []float64{0.2, 0.3, 0.1, 0, 0, 0})
	out = eval(t, dqnSpec("dqn", ", action_space: categorical, loss_function: smooth_l1, reduction: none"), small)
	near(t, []float64{0.5 * 0.27 * 0.27, 2.5}, out["loss"], hand, "smooth_l1 inside the quadratic zone")
}

// Double DQN: the current net's next values [5, 1, 5] and [0, 2, 9] choose the next action,
// the target's values it. Categorical takes the first maximum (action 0: Q' = 2); one_hot
// sums the target at both tied maxima (2 + 4).
func TestDoubleDQNHandValues(t *testing.T) {
	in := with(dqn123, "next.action_value_online", []float64{5, 1, 5, 0, 2, 9})
	out := evalGrad(t, dqnSpec("dqn", ", action_space: categorical, double_dqn: true"), with(in, "action", categorical))
	near(t, []float64{1 + 0.9*2, -1}, out["value_target"], hand, "categorical value_target")
	near(t, []float64{(1.8*1.8 + 9) / 2}, out["loss"], hand, "categorical loss")
	near(t, []float64{-1.8, 0, 0, 0, 0, 3}, out["grad.action_value"], hand, "categorical grad.action_value")
	_, ok := out["grad.next.action_value_online"]
	require.False(t, ok, "the online next values are detached")

	out = eval(t, dqnSpec("dqn", ", action_space: one_hot, double_dqn: true"), with(in, "action", oneHot))
	near(t, []float64{1 + 0.9*6, -1}, out["value_target"], hand, "one_hot value_target: Σ Q' at the tied online maxima")
	near(t, []float64{(5.4*5.4 + 9) / 2}, out["loss"], hand, "one_hot loss")
}

// keys.mask: the masked-out row (all NaN) reaches no output and no gradient; the mean runs
// over the one valid row.
func TestDQNMask(t *testing.T) {
	nan := math.NaN()
	in := with(dqn123, "action", categorical)
	in = with(in, "action_value", []float64{1, 2, 3, nan, nan, nan})
	in = with(in, "next.action_value", []float64{2, 4, 4, nan, nan, nan})
	in = with(in, "next.reward", []float64{1, nan})
	in = with(in, "mask", []float64{1, 0})
	src := strings.Replace(dqnSpec("dqn", ", action_space: categorical"), "loss:", "keys: {mask: mask}\nloss:", 1)
	out := evalGrad(t, src, in)
	near(t, []float64{12.96}, out["loss"], hand, "masked loss")
	near(t, []float64{1}, out["num_valid"], hand, "num_valid")
	near(t, []float64{12.96, 0}, out["td_error"], hand, "masked td_error")
	near(t, []float64{-7.2, 0, 0, 0, 0, 0}, out["grad.action_value"], hand, "masked gradient")
}

// The estimator bootstraps from the chosen next value: TD(λ) along a row of T = 3 equals the
// td_lambda estimator fed next.state_value = max_a Q'(s') (categorical).
func TestDQNTDLambdaTarget(t *testing.T) {
	const head = "package: p\ndtype: float64\nparam_dtype: float64\ndims: {T: 3, A: 2}\nbatch: [T]\n"
	in := map[string][]float64{
		"action_value":      {1, 2, 0, -1, 3, 0.5},
		"next.action_value": {0.5, 2, 3, -1, 0, 0.25},
		"action":            {1, 0, 0},
		"next.reward":       {1, -0.5, 2},
		"next.done":         {0, 1, 0},
		"next.terminated":   {0, 1, 0},
	}
	out := eval(t, head+"estimator: {type: td_lambda, gamma: 0.9, lmbda: 0.8}\nloss: {type: dqn, action_dim: A, action_space: categorical}\n", in)
	ref := eval(t, head+"estimator: {type: td_lambda, gamma: 0.9, lmbda: 0.8}\n", map[string][]float64{
		"state_value": {2, 0, 0.5}, "next.state_value": {2, 3, 0.25},
		"next.reward": in["next.reward"], "next.done": in["next.done"], "next.terminated": in["next.terminated"]})
	near(t, ref["value_target"], out["value_target"], hand, "value_target")
	// By hand: row end bootstraps 2 + 0.9·0.25; the terminated step is −0.5; then
	// G_0 = 1 + 0.9·((1 − 0.8)·2 + 0.8·G_1).
	g2 := 2 + 0.9*0.25
	g0 := 1 + 0.9*(0.2*2+0.8*-0.5)
	near(t, []float64{g0, -0.5, g2}, out["value_target"], hand, "value_target by hand")
}

// DiscreteCQLLoss by hand on the same data (TorchRL bootstraps it from the current net: here
// the values of next.action_value): loss_qvalue is half DQN's; loss_cql the mean of
// logsumexp_a Q − Q(s, a); pred_value the mean of all six action values; the gradient sums
// both terms' (softmax − onehot)/n.
func TestDiscreteCQLHandValues(t *testing.T) {
	out := evalGrad(t, dqnSpec("discrete_cql", ", action_space: categorical"), with(dqn123, "action", categorical))
	near(t, []float64{0.5 * (3.6*3.6 + 9) / 2}, out["loss_qvalue"], hand, "loss_qvalue")
	lse0, lse1 := 3.4076059644443806, 2.241311296657157
	near(t, []float64{((lse0 - 1) + (lse1 - 2)) / 2}, out["loss_cql"], hand, "loss_cql")
	near(t, []float64{12.96, 9}, out["td_error"], hand, "td_error")
	near(t, []float64{7.5 / 6}, out["pred_value"], hand, "pred_value")
	near(t, []float64{1.8}, out["target_value"], hand, "target_value")
	sm := []float64{0.09003057317038043, 0.24472847105479759, 0.6652409557748217, 0.1752903921400367, 0.03911257327068745, 0.7855970345892758}
	want := []float64{-3.6 / 2, 0, 0, 0, 0, 3.0 / 2}
	for i := range want {
		want[i] += sm[i] / 2
	}
	want[0] -= 0.5
	want[5] -= 0.5
	near(t, want, out["grad.action_value"], 1e-12, "grad.action_value")

	// one_hot: the same stored actions, and the tie's doubled next value as for DQN.
	out = eval(t, dqnSpec("discrete_cql", ", action_space: one_hot, reduction: none"), with(dqn123, "action", oneHot))
	near(t, []float64{0.5 * 7.2 * 7.2, 0.5 * 9}, out["loss_qvalue"], hand, "one_hot loss_qvalue none")
	near(t, []float64{lse0 - 1, lse1 - 2}, out["loss_cql"], hand, "one_hot loss_cql none")
}

// The checks DQN adds: double_dqn needs a target network; γ belongs to the estimator; GAE is
// refused; TorchRL's "one-hot" spelling; one_hot with a warning when action_space is absent.
func TestDQNSpecChecks(t *testing.T) {
	parse := func(body string) (*spec.Spec, error) {
		return spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4, A: 3}\nbatch: [B]\n"+body), lower.Registry())
	}
	s, err := parse("loss: {type: DQNLoss, action_dim: A, action_space: one-hot}\n")
	require.NoError(t, err)
	require.Equal(t, "one_hot", s.Loss.String("action_space"))
	require.Equal(t, "td0", s.Estimator.Type)
	require.Equal(t, 0.99, s.Estimator.Float("gamma"))
	s, err = parse("loss: {type: discrete_cql, action_dim: A}\n")
	require.NoError(t, err)
	require.Equal(t, "one_hot", s.Loss.String("action_space"))
	require.Contains(t, s.Warnings[0].Error(), "loss.action_space: not given: one_hot is used, as TorchRL's DiscreteCQLLoss does")
	s, err = parse("loss: {type: dqn}\n") // the one dim after the batch dims is the action dim
	require.NoError(t, err)
	require.Equal(t, "A", s.Loss.String("action_dim"))
	for _, c := range []struct{ body, err string }{
		{"loss: {type: dqn, action_dim: A, double_dqn: true, delay_value: false}\n", "t.yaml:4:46: loss.double_dqn: requires delay_value: true"},
		{"loss: {type: dqn, action_dim: A, gamma: 0.9}\n", "TorchRL's losses raise TypeError for gamma"},
		{"estimator: {type: gae, gamma: 0.9, lmbda: 0.9}\nloss: {type: discrete_cql, action_dim: A}\n", "estimator.type: gae is not supported by discrete_cql"},
		{"loss: {type: dqn, action_dim: A, action_space: mult_one_hot}\n", "loss.action_space"},
	} {
		_, err := parse(c.body)
		require.ErrorContains(t, err, c.err, c.body)
	}
}
