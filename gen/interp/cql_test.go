package interp_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

// CQL inputs (SEMANTICS.md §16.2): Q = 2, B = 2, R = 2, D = 1, α = 0.5; the second
// transition is terminated and its huge next values must not reach y. The sampled actions'
// log-probs are log 0.5 = ρ and the three sources are equal, so every source of a sample is
// x = V + ln 2 and logsumexp(x/T) = x/T + ln 3.
const cqlHead = "package: p\ndtype: float64\nparam_dtype: float64\ndims: {Q: 2, B: 2, R: 2}\nbatch: [B]\n"

var cqlV = []float64{1, 3, 0, 2, 2, 2, -1, 1} // V_k[b, r], [Q, B, R]

// cqlInputs are the inputs of the default configuration, with extra ones (next.log_prob,
// log_alpha_prime) added.
func cqlInputs(extra map[string][]float64) map[string][]float64 {
	h := math.Log(0.5)
	in := map[string][]float64{
		"state_action_value": {1, 0.5, 0.8, 0.9}, "state_action_value_actor": {0.3, -0.2, 0.4, -0.5},
		"next.state_action_value": {1, 50, 1.5, 60},
		"log_prob":                {-1.2, -0.4}, "bc_sample_log_prob": {-1, -2}, "bc_log_prob": {-0.5, -1.5},
		"q_random": cqlV, "q_new": cqlV, "q_curr": cqlV,
		"new_log_pis": {h, h, h, h}, "curr_log_pis": {h, h, h, h},
		"log_alpha":   {math.Log(0.5)},
		"next.reward": {1, -1}, "next.terminated": {0, 1},
	}
	for k, v := range extra {
		in[k] = v
	}
	return in
}

// CQLLoss by hand, w = T = 1: lse_k[b, r] = V_k[b, r] + ln 6; the rows' Σ_k mean_r V are
// (4, 1) and Σ_k Q_k(s, a) = (1.8, 1.4), so loss_cql = ((2.2 + 2 ln 6) + (−0.4 + 2 ln 6))/2.
// The target is deterministic: y = (1 + 0.99·min(1, 1.5), −1) = (1.99, −1).
func TestCQLHandValues(t *testing.T) {
	ln6 := math.Log(6)
	out := evalGrad(t, cqlHead+"loss: {type: cql, action_dim: 1}\n", cqlInputs(nil))
	near(t, []float64{1.99, -1}, out["value_target"], hand, "value_target (deterministic backup)")
	near(t, []float64{(0.49005 + 0.69 + 1.0 + 1.4) / 2}, out["loss_qvalue"], hand, "loss_qvalue")
	near(t, []float64{0.9 + 2*ln6}, out["loss_cql"], hand, "loss_cql")
	near(t, []float64{0.25}, out["loss_actor_bc"], hand, "loss_actor_bc")
	near(t, []float64{-0.3}, out["loss_actor"], hand, "loss_actor")
	near(t, []float64{math.Ln2 * -1.8}, out["loss_alpha"], hand, "loss_alpha (target_entropy −1)")
	near(t, []float64{0.5}, out["alpha"], hand, "alpha")
	near(t, []float64{0.8}, out["entropy"], hand, "entropy")
	near(t, []float64{1.4161, 3.61}, out["td_error"], hand, "td_error (squared)")
	_, ok := out["loss_alpha_prime"]
	require.False(t, ok, "loss_alpha_prime only with with_lagrange")
	// loss_cql sends w/(3·R·n) = 1/12 to every sampled Q-value and −w/n to Q(s, a).
	twelfth := []float64{1.0 / 12, 1.0 / 12, 1.0 / 12, 1.0 / 12, 1.0 / 12, 1.0 / 12, 1.0 / 12, 1.0 / 12}
	for _, k := range []string{"q_random", "q_new", "q_curr"} {
		near(t, twelfth, out["grad."+k], hand, "grad."+k)
	}
	near(t, []float64{-0.99/2 - 0.5, 0, -0.5 - 0.5, 0}, out["grad.state_action_value"], hand, "grad.state_action_value")
	near(t, []float64{-0.5, 0, 0, -0.5}, out["grad.state_action_value_actor"], hand, "grad.state_action_value_actor")
	near(t, []float64{0.25, 0.25}, out["grad.log_prob"], hand, "grad.log_prob")
	near(t, []float64{0.25, 0.25}, out["grad.bc_sample_log_prob"], hand, "grad.bc_sample_log_prob")
	near(t, []float64{-0.5, -0.5}, out["grad.bc_log_prob"], hand, "grad.bc_log_prob")
	near(t, []float64{1.8}, out["grad.log_alpha"], hand, "grad.log_alpha")
	for _, k := range []string{"grad.next.state_action_value", "grad.new_log_pis", "grad.curr_log_pis", "grad.log_alpha_prime"} {
		_, ok := out[k]
		require.False(t, ok, "%s: no gradient", k)
	}
}

// CQL's options: w and T (w·T·(x/T + ln 3)), reduction none (each row its own R samples),
// the entropy backup, the max backup, and with_lagrange's loss_alpha_prime with its clamp.
func TestCQLOptions(t *testing.T) {
	ln2, ln3 := math.Ln2, math.Log(3)
	out := eval(t, cqlHead+"loss: {type: cql, action_dim: 1, temperature: 2, min_q_weight: 0.5, reduction: none}\n", cqlInputs(nil))
	// row_b = Σ_k mean_r 0.5·(V + ln 2 + 2 ln 3) − 0.5·Σ_k Q_k(s_b, a_b).
	near(t, []float64{0.5*4 + ln2 + 2*ln3 - 0.9, 0.5*1 + ln2 + 2*ln3 - 0.7}, out["loss_cql"], hand, "loss_cql none, w 0.5, T 2")
	_, ok := out["alpha"]
	require.False(t, ok, "reduction none drops alpha")

	out = eval(t, cqlHead+"loss: {type: cql, action_dim: 1, deterministic_backup: false}\n", cqlInputs(map[string][]float64{"next.log_prob": {-1, -2}}))
	near(t, []float64{1 + 0.99*1.5, -1}, out["value_target"], hand, "value_target with −α·log π'")

	in := cqlInputs(nil)
	in["next.state_action_value"] = []float64{1, 2, 50, 70, 1.5, 0.5, 60, 80} // [Q, B, R]
	out = eval(t, cqlHead+"loss: {type: cql, action_dim: 1, max_q_backup: true}\n", in)
	near(t, []float64{1 + 0.99*1.5, -1}, out["value_target"], hand, "value_target min_k max_r")

	// α' = 1: loss_alpha_prime = −(loss_cql/2 − τ); its Q gradients are −½ of loss_cql's.
	out = evalGrad(t, cqlHead+"loss: {type: cql, action_dim: 1, with_lagrange: true, lagrange_thresh: 0.5}\n", cqlInputs(map[string][]float64{"log_alpha_prime": {0}}))
	lap := -((0.9+2*math.Log(6))/2 - 0.5)
	near(t, []float64{lap}, out["loss_alpha_prime"], hand, "loss_alpha_prime")
	near(t, []float64{lap}, out["grad.log_alpha_prime"], hand, "grad.log_alpha_prime")
	near(t, []float64{1.0 / 24, 1.0 / 24, 1.0 / 24, 1.0 / 24, 1.0 / 24, 1.0 / 24, 1.0 / 24, 1.0 / 24}, out["grad.q_random"], hand, "grad.q_random with α'")
	near(t, []float64{-0.99/2 - 0.25, 0.5 - 0.25, -0.5 - 0.25, 0.5 - 0.25}, out["grad.state_action_value"], hand, "grad.state_action_value with α'")
	near(t, []float64{0.9 + 2*math.Log(6)}, out["loss_cql"], hand, "loss_cql is not scaled by α'")
	// exp(20) is clamped to 1e6: the value is capped and log α' gets no gradient.
	in = cqlInputs(map[string][]float64{"log_alpha_prime": {20}})
	out = evalGrad(t, cqlHead+"loss: {type: cql, action_dim: 1, with_lagrange: true, reduction: sum}\n", in)
	near(t, []float64{-1e6 * (0.9 + 2*math.Log(6)) / 2}, out["loss_alpha_prime"], 1e-9, "loss_alpha_prime at α' = 1e6, a mean under sum")
	near(t, []float64{0}, out["grad.log_alpha_prime"], hand, "grad.log_alpha_prime above the clamp")
}

// TorchRL's own arithmetic (cql.py:874-913), written out on its flat layout [Q, B·R] with row
// b·R + r: every row's conservative term is the batch-wide mean of the logsumexp terms minus
// its own w·Q. Its mean equals lossgen's per-row value (D8) on arbitrary inputs, with T and w
// other than 1 and a softmax that is not uniform.
func TestCQLAgreesWithTorchRLUnderMean(t *testing.T) {
	const B, R, D = 3, 4, 2
	w, T := 2.5, 0.7
	rho := math.Log(math.Pow(0.5, D))
	val := func(i int, s float64) float64 { return math.Sin(float64(i)*1.7+s) * 3 }
	in := map[string][]float64{"log_alpha": {0}, "next.reward": {0, 0, 0}, "next.terminated": {0, 0, 0}}
	for _, k := range []string{"q_random", "q_new", "q_curr"} {
		in[k] = make([]float64, 2*B*R)
		for i := range in[k] {
			in[k][i] = val(i, float64(len(k)))
		}
	}
	for _, k := range []string{"new_log_pis", "curr_log_pis"} {
		in[k] = make([]float64, B*R)
		for i := range in[k] {
			in[k][i] = -1 - math.Abs(val(i, float64(len(k))))
		}
	}
	in["state_action_value"] = []float64{0.3, -1, 2, 1.5, 0.2, -0.7}
	for _, k := range []string{"state_action_value_actor", "next.state_action_value"} {
		in[k] = make([]float64, 2*B)
	}
	for _, k := range []string{"log_prob", "bc_sample_log_prob", "bc_log_prob"} {
		in[k] = make([]float64, B)
	}
	// cat_q = [q_random − ρ, q_new − new_log_pis, q_curr − curr_log_pis]; min_qf = lse(cat/T)·w·T;
	// cql_q = min_qf.flatten() − pred_q·w, [B, B·R]; (cql_q1 + cql_q2).mean(−1), then the mean.
	var want float64
	for b := 0; b < B; b++ {
		var row float64
		for k := 0; k < 2; k++ {
			for j := 0; j < B*R; j++ {
				i := k*B*R + j
				x := []float64{(in["q_random"][i] - rho) / T, (in["q_new"][i] - in["new_log_pis"][j]) / T, (in["q_curr"][i] - in["curr_log_pis"][j]) / T}
				m := math.Max(x[0], math.Max(x[1], x[2]))
				lse := m + math.Log(math.Exp(x[0]-m)+math.Exp(x[1]-m)+math.Exp(x[2]-m))
				row += lse*w*T - in["state_action_value"][k*B+b]*w
			}
		}
		want += row / (B * R) / B
	}
	src := "package: p\ndtype: float64\nparam_dtype: float64\ndims: {Q: 2, B: 3, R: 4}\nbatch: [B]\nloss: {type: cql, action_dim: 2, temperature: 0.7, min_q_weight: 2.5}\n"
	out := eval(t, src, in)
	near(t, []float64{want}, out["loss_cql"], 1e-12, "loss_cql against TorchRL's [B, B·R] broadcast, mean")
}

// What TorchRL refuses, or lossgen cannot take, is a spec error that says why.
func TestCQLSpecChecks(t *testing.T) {
	for _, c := range []struct{ src, err string }{
		{"dims: {Q: 2, B: 4}\nbatch: [B]\nloss: {type: cql}", "loss.action_dim: required: the number of action elements D"},
		{"dims: {Q: 3, B: 4}\nbatch: [B]\nloss: {type: cql, action_dim: 1}", "loss.ensemble_dim: dims.Q has 3 members; CQLLoss's ensemble is always 2"},
		{"dims: {B: 4}\nbatch: [B]\nloss: {type: cql, action_dim: 1, num_qvalue_nets: 3}", "loss.num_qvalue_nets: must be in"},
		{"dims: {B: 4}\nbatch: [B]\nloss: {type: cql, action_dim: 1, with_lagrange: true, reduction: none}", "loss.with_lagrange: does not go with reduction none: TorchRL raises"},
		{"dims: {B: 4}\nbatch: [B]\nloss: {type: cql, action_dim: 1, gamma: 0.9}", "loss.gamma: not taken: TorchRL's losses raise TypeError"},
		{"dims: {B: 4}\nbatch: [B]\nloss: {type: cql, action_dim: 1, temperature: 0}", "loss.temperature: must be in"},
		{"dims: {B: 4, S: 5}\nbatch: [B]\nloss: {type: cql, action_dim: 1, random_dim: S, num_random: 4}", "loss.num_random: is 4 but the sample dim S has 5 samples"},
		{"dims: {R: 5, B: 4}\nbatch: [B]\nloss: {type: cql, action_dim: 1}", "loss.random_dim: dims.R must be declared after every batch dim"},
		{"dims: {B: 4}\nbatch: [B]\nestimator: {type: gae}\nloss: {type: cql, action_dim: 1}", "estimator.type: gae is not supported by cql"},
	} {
		_, err := spec.Parse("t.yaml", []byte("package: p\n"+c.src+"\n"), lower.Registry())
		require.ErrorContains(t, err, c.err, c.src)
	}
	// The default dims: Q with 2 members before the batch, R with num_random samples after it.
	s, err := spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: cql, action_dim: 3, num_random: 5, max_q_backup: true, deterministic_backup: false}\n"), lower.Registry())
	require.NoError(t, err)
	require.Equal(t, []spec.Dim{{Name: "Q", Size: 2}, {Name: "B", Size: 4}, {Name: "R", Size: 5}}, dimsOf(s))
	require.Len(t, s.Warnings, 1)
	require.Contains(t, s.Warnings[0].Msg, "deterministic_backup: is ignored with max_q_backup")
}

func dimsOf(s *spec.Spec) []spec.Dim {
	var out []spec.Dim
	for _, d := range s.Dims {
		out = append(out, spec.Dim{Name: d.Name, Size: d.Size})
	}
	return out
}
