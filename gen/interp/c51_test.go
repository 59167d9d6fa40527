package interp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

// C51 inputs of SEMANTICS.md §16.1: B = 2, K = 3 atoms on [−1, 1] (Δz = 1), A = 2, γ = 0.5.
// Every input is given as logits whose softmax over the atoms is a chosen distribution
// (logits ln p), laid out [B, K, A]. The online net prefers action 1 in row 0 (expected
// value 0.25 against 0) and action 0 in row 1; the target's distribution at the other action
// differs, so the choice shows.
func c51Inputs() map[string][]float64 {
	ln := math.Log
	// layout builds [B=2, K=3, A=2] from per-(row, action) distributions.
	layout := func(d [2][2][3]float64) []float64 {
		out := make([]float64, 12)
		for b := range 2 {
			for a := range 2 {
				for k := range 3 {
					out[b*6+k*2+a] = ln(d[b][a][k])
				}
			}
		}
		return out
	}
	u := 1.0 / 3
	return map[string][]float64{
		"action_value": layout([2][2][3]float64{
			{{0.2, 0.4, 0.4}, {u, u, u}},     // row 0 stores action 0
			{{u, u, u}, {0.5, 0.25, 0.25}}}), // row 1 stores action 1
		"action": {0, 1},
		"next.action_value_online": layout([2][2][3]float64{
			{{u, u, u}, {0.25, 0.25, 0.5}},
			{{0.25, 0.25, 0.5}, {0.5, 0.25, 0.25}}}),
		"next.action_value": layout([2][2][3]float64{
			{{0.6, 0.2, 0.2}, {0.2, 0.3, 0.5}},
			{{0.1, 0.6, 0.3}, {0.7, 0.2, 0.1}}}),
		"next.reward":     {0.5, -0.25},
		"next.terminated": {0, 1},
	}
}

func c51Spec(params string) string {
	return "package: p\ndtype: float64\nparam_dtype: float64\ndims: {B: 2, K: 3, A: 2}\nbatch: [B]\n" +
		"loss: {type: distributional_dqn, gamma: 0.5, action_dim: A, atom_dim: K, support: [-1, 0, 1]" + params + "}\n"
}

// DistributionalDQNLoss by hand. Row 0: Tz = 0.5 + 0.5·z = (0, 0.5, 1), b = (1, 1.5, 2): the
// atoms at b = 1 and b = 2 land on an atom (TorchRL's l == u fix: all their mass there), the
// middle one splits evenly, so m = (0, 0.2 + 0.15, 0.15 + 0.5). Row 1 is terminated: Tz =
// −0.25 for every atom, b = 0.75, m = (0.25, 0.75, 0). The loss is the cross-entropy with the
// current distribution at the stored action, and its gradient (softmax − m)/B there.
func TestDistributionalDQNHandValues(t *testing.T) {
	ce0 := -(0.35*math.Log(0.4) + 0.65*math.Log(0.4))
	ce1 := -(0.25*math.Log(0.5) + 0.75*math.Log(0.25))
	for _, space := range []string{"categorical", "one_hot"} {
		in := c51Inputs()
		if space == "one_hot" {
			in = with(in, "action", []float64{1, 0, 0, 1})
		}
		out := evalGrad(t, c51Spec(", action_space: "+space), in)
		near(t, []float64{0, 0.35, 0.65, 0.25, 0.75, 0}, out["target_distribution"], 1e-15, space+" target_distribution")
		near(t, []float64{(ce0 + ce1) / 2}, out["loss"], 1e-15, space+" loss")
		near(t, []float64{ce0, ce1}, out["td_error"], 1e-15, space+" td_error")
		near(t, []float64{
			0.1, 0, 0.025, 0, -0.125, 0,
			0, 0.125, 0, -0.25, 0, 0.125}, out["grad.action_value"], 1e-15, space+" grad.action_value")
		for _, k := range []string{"grad.next.action_value", "grad.next.action_value_online"} {
			_, ok := out[k]
			require.False(t, ok, "%s: the next distributions get no gradient", k)
		}
	}
}

// The projection's edges: a shifted atom on v_min (b = 0: TorchRL moves u up, all mass on
// atom 0) and beyond v_max (clamped: all mass on the last atom); delay_value false lets the
// target net choose the next action;
// make_log_softmax false reads log-probabilities (the logits ln p are those) and reports
// values above 0; a NaN reward is a data error, as TorchRL's RuntimeError.
func TestDistributionalDQNEdges(t *testing.T) {
	in := with(with(c51Inputs(), "next.reward", []float64{5, -1}), "next.terminated", []float64{0, 1})
	out := eval(t, c51Spec(", action_space: categorical, reduction: none"), in)
	near(t, []float64{0, 0, 1, 1, 0, 0}, out["target_distribution"], 1e-15, "clamped at v_max; b = 0 on atom 0")
	near(t, []float64{-math.Log(0.4), -math.Log(0.5)}, out["loss"], 1e-15, "loss with reduction none")

	// Row 0's target distribution at action 0 becomes (0.1, 0.1, 0.8): expected 0.7, above
	// action 1's 0.3, so the target's own choice is action 0, m = (0, 0.1 + 0.05, 0.05 + 0.8).
	tgt := append([]float64(nil), c51Inputs()["next.action_value"]...)
	tgt[0], tgt[2], tgt[4] = math.Log(0.1), math.Log(0.1), math.Log(0.8)
	in = with(c51Inputs(), "next.action_value", tgt)
	out = eval(t, c51Spec(", action_space: categorical, delay_value: false"), without(in, "next.action_value_online"))
	near(t, []float64{0, 0.15, 0.85, 0.25, 0.75, 0}, out["target_distribution"], 1e-15, "delay_value false: the target chooses")
	out = eval(t, c51Spec(", action_space: categorical"), in)
	near(t, []float64{0, 0.35, 0.65, 0.25, 0.75, 0}, out["target_distribution"], 1e-15, "delay_value true: the online net chooses")

	out = eval(t, c51Spec(", action_space: categorical, make_log_softmax: false"), c51Inputs())
	near(t, []float64{0, 0.35, 0.65, 0.25, 0.75, 0}, out["target_distribution"], 1e-15, "log-probabilities as given")
	near(t, []float64{0}, out["invalid_action_value"], 0, "no value above 0")
	bad := c51Inputs()
	bad["action_value"][3] = 0.5
	out = eval(t, c51Spec(", action_space: categorical, make_log_softmax: false"), bad)
	near(t, []float64{1}, out["invalid_action_value"], 0, "one value above 0")

	out = eval(t, c51Spec(", action_space: categorical"), with(c51Inputs(), "next.reward", []float64{math.NaN(), 0}))
	near(t, []float64{3}, out["invalid_target"], 0, "a NaN reward makes its row's Tz NaN")
}

// A support of no width is a spec error: the projection divides by Δz = 0 and every output
// would be NaN (TorchRL's too), with no data error to say why.
func TestDistributionalDQNFlatSupport(t *testing.T) {
	for _, sup := range []string{"[1, 1, 1]", "{vmin: 2, vmax: 2, n_atoms: 3}"} {
		src := strings.Replace(c51Spec(""), "support: [-1, 0, 1]", "support: "+sup, 1)
		_, err := spec.Parse("t.yaml", []byte(src), lower.Registry())
		require.ErrorContains(t, err, "loss.support: spans no width", sup)
	}
}
