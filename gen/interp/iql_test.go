package interp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

// IQL inputs of SEMANTICS.md §9.4: B = 3, N = 2 members, the same ensemble online and target.
var iql94 = map[string][]float64{
	"state_action_value":        {1.0, 0.5, 2.0, 0.8, 0.9, 2.5}, // [Q=2, B=3]
	"target_state_action_value": {1.0, 0.5, 2.0, 0.8, 0.9, 2.5},
	"state_value":               {0.5, 1.0, 0.0},
	"log_prob":                  {-1.0, -2.0, -0.5},
	"next.reward":               {1.0, 0.0, -1.0},
	"next.state_value":          {0.6, 1.2, 3.0},
	"next.terminated":           {0, 0, 1},
}

const iql94Spec = `
package: p
dtype: float64
param_dtype: float64
dims: {Q: 2, B: 3}
batch: [B]
loss: {type: iql, expectile: 0.7, temperature: 3.0}
`

// IQLLoss on §9.4's hand-computed values: the AWR weight capped at 100 on the third sample,
// the expectile weights, the member-summed smooth_l1 and the squared-error priority, and
// each gradient.
func TestIQLHandValues(t *testing.T) {
	out := evalGrad(t, iql94Spec, iql94)
	near(t, []float64{17.6352878105}, out["loss_actor"], 1e-10, "loss_actor")
	near(t, []float64{0.9793333333}, out["loss_value"], 1e-10, "loss_value")
	near(t, []float64{2.0899266667}, out["loss_qvalue"], 1e-10, "loss_qvalue")
	near(t, []float64{1.1666666667}, out["entropy"], 1e-10, "entropy")
	near(t, []float64{0.630436, 0.473344, 12.25}, out["td_error"], hand, "td_error")
	near(t, []float64{1.594, 1.188, -1.0}, out["value_target"], hand, "value_target (TD(0), γ 0.99)")
	near(t, []float64{-0.8198677037, -0.0743767200, -100.0 / 3}, out["grad.log_prob"], 1e-10, "grad.log_prob")
	near(t, []float64{-0.14, 0.1, -0.9333333333}, out["grad.state_value"], 1e-10, "grad.state_value")
	// smooth_l1: clamp(Q − y, −1, 1)/3 per member.
	near(t, []float64{-0.594 / 3, -0.688 / 3, 1.0 / 3, -0.794 / 3, -0.288 / 3, 1.0 / 3}, out["grad.state_action_value"], hand, "grad.state_action_value")
	_, ok := out["grad.target_state_action_value"]
	require.False(t, ok, "the target ensemble gets no gradient")
}

// The reductions, loss functions and the cap: reduction none keeps the batch; l2 and l1
// distances; the weight is exactly 100 where exp(β(m − V)) exceeds it.
func TestIQLOptions(t *testing.T) {
	out := eval(t, iql94Spec[:len(iql94Spec)-2]+", reduction: none, loss_function: l2}\n", iql94)
	near(t, []float64{2.4596031112, 0.4462603203, 50.0}, out["loss_actor"], 1e-10, "loss_actor none")
	near(t, []float64{0.063, 0.075, 2.8}, out["loss_value"], hand, "loss_value none")
	// l2: (Q − y)² summed over members.
	near(t, []float64{0.594*0.594 + 0.794*0.794, 0.688*0.688 + 0.288*0.288, 9 + 12.25}, out["loss_qvalue"], hand, "loss_qvalue l2")
	out = eval(t, iql94Spec[:len(iql94Spec)-2]+", reduction: sum, loss_function: l1}\n", iql94)
	near(t, []float64{0.594 + 0.794 + 0.688 + 0.288 + 3 + 3.5}, out["loss_qvalue"], hand, "loss_qvalue l1 sum")
	near(t, []float64{3 * 0.9793333333}, out["loss_value"], 1e-10, "loss_value sum")
	// expectile 0.5 weighs both signs by 0.5.
	out = eval(t, strings.Replace(iql94Spec, "expectile: 0.7", "expectile: 0.5", 1), iql94)
	near(t, []float64{0.5 * (0.09 + 0.25 + 4) / 3}, out["loss_value"], hand, "loss_value τ = 0.5")
}

// With param_dtype float32 (the default) γ, τ and 1 − τ are float32 values, as TorchRL holds
// them; the temperature is a Python float and stays exact (SEMANTICS.md §11.14).
func TestIQLParamPrecision(t *testing.T) {
	src := "package: p\ndtype: float64\ndims: {Q: 2, B: 3}\nbatch: [B]\nloss: {type: iql, expectile: 0.7, temperature: 0.1}\n"
	out := eval(t, src, iql94)
	g := float64(float32(0.99))
	near(t, []float64{1 + g*0.6, g * 1.2, -1}, out["value_target"], hand, "value_target")
	hi, lo := float64(float32(0.7)), float64(float32(1-0.7))
	near(t, []float64{(hi*0.09 + lo*0.25 + hi*4) / 3}, out["loss_value"], hand, "loss_value")
	w := []float64{math.Exp(0.1 * 0.3), math.Exp(0.1 * -0.5), math.Exp(0.1 * 2)}
	near(t, []float64{(w[0]*1 + w[1]*2 + w[2]*0.5) / 3}, out["loss_actor"], hand, "loss_actor")
}

// DiscreteIQLLoss: the same numbers when the ensemble's values at the stored action are
// §9.4's, whether the action is an index (categorical) or a one-hot vector; the Q gradient
// lands on the stored action only.
func TestDiscreteIQLMatchesContinuous(t *testing.T) {
	const A = 3
	action := []int{2, 0, 1}
	full := func(chosen []float64) []float64 { // [Q=2, B=3, A=3], other actions at −7
		out := make([]float64, 0, 2*3*A)
		for q := range 2 {
			for b := range 3 {
				for a := range A {
					v := -7.0 + float64(a)
					if a == action[b] {
						v = chosen[q*3+b]
					}
					out = append(out, v)
				}
			}
		}
		return out
	}
	in := map[string][]float64{}
	for k, v := range iql94 {
		in[k] = v
	}
	in["state_action_value"] = full(iql94["state_action_value"])
	in["target_state_action_value"] = full(iql94["target_state_action_value"])
	cont := evalGrad(t, iql94Spec, iql94)
	for _, space := range []string{"categorical", "one_hot"} {
		if space == "categorical" {
			in["action"] = []float64{2, 0, 1}
		} else {
			in["action"] = []float64{0, 0, 1, 1, 0, 0, 0, 1, 0}
		}
		src := "package: p\ndtype: float64\nparam_dtype: float64\ndims: {Q: 2, B: 3, A: 3}\nbatch: [B]\nloss: {type: discrete_iql, expectile: 0.7, temperature: 3.0, action_dim: A, action_space: " + space + "}\n"
		out := evalGrad(t, src, in)
		for _, k := range []string{"loss_actor", "loss_value", "loss_qvalue", "entropy", "td_error", "grad.log_prob", "grad.state_value"} {
			near(t, cont[k], out[k], hand, space+" "+k)
		}
		near(t, full(cont["grad.state_action_value"]), addOffset(out["grad.state_action_value"], in["action"], space), hand, space+" grad.state_action_value")
	}
}

// addOffset puts −7 + a at every entry but the stored action's, so a gradient that is 0 off
// the action compares equal with full(...)'s layout.
func addOffset(g, action []float64, space string) []float64 {
	out := append([]float64(nil), g...)
	for i := range out {
		b, a := (i/3)%3, i%3
		stored := false
		if space == "categorical" {
			stored = int(action[b]) == a
		} else {
			stored = action[b*3+a] == 1
		}
		if !stored {
			if out[i] != 0 {
				return g // a gradient off the stored action: fail the comparison
			}
			out[i] = -7 + float64(a)
		}
	}
	return out
}

// The spec checks IQL adds: the ensemble dim (added when absent, before the batch dims,
// agreeing with num_qvalue_nets), the discrete action dim and space, the estimators TorchRL
// refuses.
func TestIQLSpecChecks(t *testing.T) {
	parse := func(body string) (*spec.Spec, error) {
		return spec.Parse("t.yaml", []byte("package: p\n"+body), lower.Registry())
	}
	s, err := parse("dims: {B: 4}\nbatch: [B]\nloss: {type: iql, num_qvalue_nets: 3}\n")
	require.NoError(t, err)
	require.Equal(t, "Q", s.Dims[0].Name, "the ensemble dim is added first")
	require.Equal(t, 3, s.Dims[0].Size)
	require.Equal(t, "td0", s.Estimator.Type)
	require.Equal(t, 0.99, s.Estimator.Float("gamma"))
	s, err = parse("dims: {E: 5, B: 4}\nbatch: [B]\nloss: {type: iql, ensemble_dim: E}\n")
	require.NoError(t, err)
	require.Equal(t, 5, s.Loss.Int("num_qvalue_nets"))
	s, err = parse("dims: {B: 4, A: 3}\nbatch: [B]\nloss: {type: discrete_iql, action_dim: A}\n")
	require.NoError(t, err)
	require.Equal(t, "one_hot", s.Loss.String("action_space"))
	require.Contains(t, s.Warnings[0].Error(), "loss.action_space: not given: one_hot is used")
	for _, c := range []struct{ body, err string }{
		{"dims: {B: 4, Q: 2}\nbatch: [B]\nloss: {type: iql}\n", "t.yaml:4:7: loss.ensemble_dim: dims.Q must be declared before every batch dim"},
		{"dims: {Q: 2, B: 4}\nbatch: [B]\nloss: {type: iql, num_qvalue_nets: 3}\n", "t.yaml:4:36: loss.num_qvalue_nets: is 3 but the ensemble dim Q has 2 members"},
		{"dims: {Q: 2, B: 4}\nbatch: [B, Q]\nloss: {type: iql}\n", "loss.ensemble_dim: \"Q\" is a batch dim"},
		{"dims: {B: 4}\nbatch: [B]\nloss: {type: iql, ensemble_dim: E}\n", "t.yaml:4:33: loss.ensemble_dim: \"E\" is not a dim declared under dims"},
		{"dims: {B: 4}\nbatch: [B]\nestimator: {type: gae}\nloss: {type: iql}\n", "estimator.type: gae is not supported by iql"},
		{"dims: {B: 4}\nbatch: [B]\nloss: {type: iql, expectile: 1.0}\n", "loss.expectile: must be in (0, 1)"},
		{"dims: {B: 4}\nbatch: [B]\nloss: {type: discrete_iql}\n", "loss.action_dim: required"},
		{"dims: {A: 3, B: 4}\nbatch: [B]\nloss: {type: discrete_iql, action_dim: A}\n", "loss.action_dim: dims.A must be declared after every batch dim"},
	} {
		_, err := parse(c.body)
		require.ErrorContains(t, err, c.err, c.body)
	}
}
