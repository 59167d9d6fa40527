package passes_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/interp"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/passes"
	"github.com/lossgen/lossgen/spec"
)

// compile lowers a spec and adds its gradients.
func compile(t *testing.T, src string) (fwd, fb *ir.Graph) {
	t.Helper()
	s, err := spec.Parse("t.yaml", []byte(src), lower.Registry())
	require.NoError(t, err)
	g, _, err := lower.Lower(s)
	require.NoError(t, err)
	fb, err = passes.Autodiff(g)
	require.NoError(t, err)
	return g, fb
}

func run(t *testing.T, g *ir.Graph, in map[string][]float64) map[string][]float64 {
	t.Helper()
	ts := map[string]*tensor.Dense{}
	for _, x := range g.Inputs {
		ts[x.Name] = interp.New(x.Shape, in[x.Name])
	}
	out, err := interp.Run(g, ts)
	require.NoError(t, err)
	res := map[string][]float64{}
	for k, v := range out {
		res[k] = interp.Data(v)
	}
	return res
}

// lossSum is what the gradients differentiate: every element of every loss_* output, summed.
func lossSum(g *ir.Graph, out map[string][]float64) float64 {
	s := 0.0
	for _, o := range g.Outputs {
		if o.Role == ir.LossTerm {
			for _, v := range out[o.Name] {
				s += v
			}
		}
	}
	return s
}

// randomInputs draws the golden "random" case for g, as float64 data.
func randomInputs(t *testing.T, g *ir.Graph) map[string][]float64 {
	cs, err := cases.Build(g, "fd", "")
	require.NoError(t, err)
	in := map[string][]float64{}
	for _, x := range g.Inputs {
		in[x.Name] = cs[0].Inputs[x.Name].Float64s()
	}
	return in
}

// frozen is fwd with every detached value (OpDetach) replaced by its constant value at the
// point in: finite differences of it move only what TorchRL differentiates (IQL's value
// enters loss_value with a gradient and the actor's weight detached).
func frozen(t *testing.T, fwd *ir.Graph, in map[string][]float64) *ir.Graph {
	t.Helper()
	probe := *fwd
	probe.Outputs = append([]*ir.Output(nil), fwd.Outputs...)
	for _, n := range fwd.Nodes {
		if n.Op == ir.OpDetach {
			probe.Outputs = append(probe.Outputs, &ir.Output{Name: fmt.Sprintf("detach.%d", n.ID), Node: n})
		}
	}
	vals := run(t, &probe, in)
	return ir.Rebuild(fwd, func(b *ir.Builder, n *ir.Node, args []*ir.Node) *ir.Node {
		if n.Op != ir.OpDetach {
			return nil
		}
		return b.ConstTensor(n.Shape, vals[fmt.Sprintf("detach.%d", n.ID)])
	})
}

// checkFD compares every gradient output with central differences of the forward graph's
// loss sum (detached values held at their values, frozen), element by element, in float64.
func checkFD(t *testing.T, fwd, fb *ir.Graph, in map[string][]float64) {
	t.Helper()
	grads := run(t, fb, in)
	fwd = frozen(t, fwd, in)
	n := 0
	for _, x := range fwd.Inputs {
		if !x.Differentiable {
			continue
		}
		got, ok := grads[passes.GradPrefix+x.Name]
		require.True(t, ok, "no gradient for %s", x.Name)
		for i := range in[x.Name] {
			orig := in[x.Name][i]
			h := 1e-6 * math.Max(1, math.Abs(orig))
			in[x.Name][i] = orig + h
			up := lossSum(fwd, run(t, fwd, in))
			in[x.Name][i] = orig - h
			down := lossSum(fwd, run(t, fwd, in))
			in[x.Name][i] = orig
			fd := (up - down) / (2 * h)
			require.InDelta(t, fd, got[i], 1e-6+1e-6*math.Abs(fd), "d loss / d %s[%d]", x.Name, i)
			n++
		}
	}
	require.Greater(t, n, 0)
}

// The gradient of every loss output with respect to every differentiable input agrees with
// central finite differences of the interpreter's forward, on random points (away from the
// kinks), for every loss configuration and estimator the losses run with.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	const head = "package: p\ndtype: float64\nparam_dtype: float64\n"
	flat := head + "dims: {B: 7}\nbatch: [B]\n"
	rows := head + "dims: {N: 3, T: 5}\nbatch: [N, T]\n"
	for name, src := range map[string]string{
		"clip_ppo mean":                                   flat + "loss: {type: clip_ppo}",
		"clip_ppo sum l1":                                 flat + "loss: {type: clip_ppo, reduction: sum, loss_critic_type: l1, entropy_coeff: 0.1}",
		"clip_ppo none l2 clipped":                        flat + "loss: {type: clip_ppo, reduction: none, loss_critic_type: l2, clip_value: 0.05}",
		"clip_ppo normalized":                             flat + "loss: {type: clip_ppo, normalize_advantage: true, critic_coeff: 0.5}",
		"clip_ppo asymmetric":                             flat + "loss: {type: clip_ppo, clip_epsilon: [0.1, 0.3]}",
		"clip_ppo no critic":                              flat + "loss: {type: clip_ppo, critic_coeff: 0, entropy_bonus: false}",
		"2-D clip_ppo none":                               rows + "loss: {type: clip_ppo, reduction: none}",
		"ppo":                                             flat + "loss: {type: ppo, loss_critic_type: l2}",
		"ppo categorical":                                 head + "dims: {B: 5, A: 4}\nbatch: [B]\nloss: {type: ppo, distribution: categorical, action_dim: A, entropy_coeff: 0.3}",
		"clip_ppo one-hot":                                head + "dims: {B: 5, A: 3}\nbatch: [B]\nloss: {type: clip_ppo, distribution: one_hot_categorical, action_dim: A, entropy_coeff: 0.2}",
		"clip_ppo normal":                                 head + "dims: {N: 2, T: 3, D: 2}\nbatch: [N, T]\nloss: {type: clip_ppo, distribution: normal, action_dim: D, entropy_coeff: 0.1}",
		"ppo tanh_normal":                                 head + "dims: {B: 4, D: 3}\nbatch: [B]\nloss: {type: ppo, distribution: tanh_normal, action_dim: D, low: -2, high: 1}",
		"klpen categorical":                               head + "dims: {B: 5, A: 4}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: categorical, action_dim: A, beta: 0.6}",
		"klpen normal sum":                                head + "dims: {B: 4, D: 2}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: normal, action_dim: D, reduction: sum}",
		"klpen tanh_normal none":                          head + "dims: {B: 3, D: 2}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: tanh_normal, action_dim: D, reduction: none}",
		"per-head entropy":                                flat + "loss: {type: clip_ppo, heads: [a, b], entropy_coeff: {a: 0.1, b: 0.4}}",
		"masked clip_ppo":                                 rows + "loss: {type: clip_ppo, normalize_advantage: true}\nkeys: {mask: mask}",
		"masked ppo sum":                                  rows + "loss: {type: ppo, reduction: sum}\nkeys: {mask: mask}",
		"masked klpen none":                               head + "dims: {N: 2, T: 3, A: 3}\nbatch: [N, T]\nloss: {type: klpen_ppo, distribution: categorical, action_dim: A, reduction: none}\nkeys: {mask: mask}",
		"masked grpo kl":                                  rows + "loss: {type: grpo, kl_to_ref_coeff: 0.3, kl_to_inference_coeff: 0.2, kl_mask_threshold: 0.05, entropy_coeff: 0.1}\nkeys: {mask: mask}",
		"masked grpo prompt_mean sum":                     rows + "loss: {type: grpo, aggregation: prompt_mean, reduction: sum, kl_to_ref_coeff: 0.1}\nkeys: {mask: mask}",
		"grpo prompt_mean unmasked":                       rows + "loss: {type: grpo, aggregation: prompt_mean, clip_epsilon: [0.1, 0.3], kl_to_ref_coeff: 0.2}",
		"masked dapo none":                                rows + "loss: {type: dapo, aggregation: none, kl_to_inference_coeff: 0.5}\nkeys: {mask: mask}",
		"masked cispo":                                    rows + "loss: {type: cispo, kl_to_ref_coeff: 0.1}\nkeys: {mask: mask}",
		"masked cispo stop_gradient":                      rows + "loss: {type: cispo, stop_gradient: true, aggregation: prompt_mean, kl_mask_threshold: 0.05}\nkeys: {mask: mask}",
		"masked gspo dapo":                                rows + "loss: {type: gspo, beta: 0.3, epsilon_high: 0.4}\nkeys: {mask: mask}",
		"masked gspo grpo delta":                          rows + "loss: {type: gspo, loss_type: grpo, beta: 0.2, delta: 1.5}\nkeys: {mask: mask}",
		"gspo token unmasked":                             rows + "loss: {type: gspo, variant: token, epsilon_low: 0.1, epsilon_high: 0.3}",
		"masked gspo token grpo":                          rows + "loss: {type: gspo, variant: token, loss_type: grpo, beta: 0.1}\nkeys: {mask: mask}",
		"masked distillation reverse":                     rows + "loss: {type: distillation}\nkeys: {mask: mask}",
		"distillation forward sum":                        rows + "loss: {type: distillation, kl_direction: forward, reduction: sum, normalize_by_seq_length: false}",
		"masked distillation none":                        rows + "loss: {type: distillation, kl_direction: forward, reduction: none}\nkeys: {mask: mask}",
		"mc_advantage grpo":                               head + "dims: {G: 2, N: 3, L: 4}\nbatch: [G, N, L]\nestimator: {type: mc_advantage, group_dim: N, trajectory_return: sum}\nloss: {type: grpo, kl_to_ref_coeff: 0.1}\nkeys: {mask: mask}",
		"iql mean":                                        flat + "loss: {type: iql, temperature: 3.0, expectile: 0.7}",
		"iql sum l2 3 members":                            flat + "loss: {type: iql, reduction: sum, loss_function: l2, num_qvalue_nets: 3, expectile: 0.9}",
		"2-D iql none l1 td1":                             rows + "estimator: {type: td1}\nloss: {type: iql, reduction: none, loss_function: l1}",
		"discrete_iql categorical":                        head + "dims: {Q: 2, B: 7, A: 4}\nbatch: [B]\nloss: {type: discrete_iql, action_dim: A, action_space: categorical, expectile: 0.6}",
		"iql normal actor":                                head + "dims: {B: 4, D: 2}\nbatch: [B]\nloss: {type: iql, distribution: normal, action_dim: D}",
		"iql tanh_normal actor":                           head + "dims: {B: 3, D: 2}\nbatch: [B]\nloss: {type: iql, distribution: tanh_normal, action_dim: D, reduction: sum}",
		"discrete_iql categorical actor":                  head + "dims: {Q: 2, B: 5, A: 3}\nbatch: [B]\nloss: {type: discrete_iql, action_dim: A, action_space: categorical, distribution: categorical}",
		"discrete_iql one_hot actor":                      head + "dims: {Q: 2, B: 4, A: 3}\nbatch: [B]\nloss: {type: discrete_iql, action_dim: A, action_space: one_hot, distribution: one_hot_categorical}",
		"discrete_iql one_hot sum":                        head + "dims: {Q: 3, B: 5, A: 3}\nbatch: [B]\nloss: {type: discrete_iql, action_dim: A, action_space: one_hot, reduction: sum}",
		"dqn categorical":                                 head + "dims: {B: 7, A: 4}\nbatch: [B]\nloss: {type: dqn, action_dim: A, action_space: categorical}",
		"dqn double one_hot smooth_l1":                    head + "dims: {B: 6, A: 3}\nbatch: [B]\nloss: {type: dqn, action_dim: A, action_space: one_hot, double_dqn: true, loss_function: smooth_l1, reduction: sum}",
		"2-D dqn td_lambda l1 masked":                     head + "dims: {N: 3, T: 5, A: 3}\nbatch: [N, T]\nestimator: {type: td_lambda, gamma: 0.9}\nloss: {type: dqn, action_dim: A, action_space: categorical, loss_function: l1, reduction: none}\nkeys: {mask: mask}",
		"discrete_cql one_hot":                            head + "dims: {B: 6, A: 4}\nbatch: [B]\nloss: {type: discrete_cql, action_dim: A, action_space: one_hot}",
		"discrete_cql categorical td1":                    head + "dims: {N: 2, T: 4, A: 3}\nbatch: [N, T]\nestimator: {type: td1}\nloss: {type: discrete_cql, action_dim: A, action_space: categorical, reduction: sum, loss_function: smooth_l1}",
		"distributional_dqn categorical":                  head + "dims: {B: 5, K: 4, A: 3}\nbatch: [B]\nloss: {type: distributional_dqn, gamma: 0.9, action_dim: A, atom_dim: K, action_space: categorical, support: {vmin: -2, vmax: 2, n_atoms: 4}}",
		"2-D distributional_dqn one_hot log-probs masked": head + "dims: {N: 2, T: 3, K: 5, A: 2}\nbatch: [N, T]\nloss: {type: distributional_dqn, gamma: 0.8, action_dim: A, atom_dim: K, action_space: one_hot, support: [-1, 0, 1, 2, 3], make_log_softmax: false, reduction: sum}\nkeys: {mask: mask}",
		"sac mean":                                        flat + "loss: {type: sac, action_dim: 2}",
		"sac sum l2 3 members clamped α":                  flat + "loss: {type: sac, reduction: sum, loss_function: l2, num_qvalue_nets: 3, target_entropy: -1.5, min_alpha: 0.9, max_alpha: 1.1}",
		"2-D sac none td_lambda masked":                   rows + "estimator: {type: td_lambda}\nloss: {type: sac, reduction: none, fixed_alpha: true, action_dim: 1, skip_done_states: true}\nkeys: {mask: mask}",
		"td3 mean":                                        flat + "loss: {type: td3}",
		"2-D td3 sum l2 td1 3 members":                    rows + "estimator: {type: td1}\nloss: {type: td3, reduction: sum, loss_function: l2, num_qvalue_nets: 3}",
		"masked td3 none":                                 rows + "loss: {type: td3, reduction: none}\nkeys: {mask: mask}",
		"ddpg mean":                                       flat + "loss: {type: ddpg}",
		"2-D ddpg none smooth_l1 td_λ":                    rows + "estimator: {type: td_lambda}\nloss: {type: ddpg, reduction: none, loss_function: smooth_l1}",
		"masked ddpg sum l1":                              rows + "loss: {type: ddpg, reduction: sum, loss_function: l1}\nkeys: {mask: mask}",
		"a2c mean":                                        flat + "loss: {type: a2c}",
		"2-D a2c categorical gae":                         head + "dims: {N: 2, T: 4, A: 3}\nbatch: [N, T]\nestimator: {type: gae}\nloss: {type: a2c, distribution: categorical, action_dim: A, critic_coeff: 0.5, reduction: sum}",
		"masked a2c normal none clipped":                  head + "dims: {B: 4, D: 2}\nbatch: [B]\nloss: {type: a2c, distribution: normal, action_dim: D, clip_value: 0.3, loss_critic_type: l2, reduction: none}\nkeys: {mask: mask}",
		"reinforce mean":                                  flat + "loss: {type: reinforce}",
		"masked reinforce td_lambda sum":                  rows + "estimator: {type: td_lambda}\nloss: {type: reinforce, reduction: sum, loss_critic_type: l1}\nkeys: {mask: mask}",
		"discrete_sac one_hot":                            head + "dims: {Q: 2, B: 5, A: 3}\nbatch: [B]\nloss: {type: discrete_sac, action_dim: A, action_space: one_hot}",
		"2-D discrete_sac categorical td1 masked":         head + "dims: {Q: 3, N: 2, T: 4, A: 3}\nbatch: [N, T]\nestimator: {type: td1}\nloss: {type: discrete_sac, action_dim: A, action_space: categorical, reduction: sum, loss_function: l2, min_alpha: 0.9, skip_done_states: true}\nkeys: {mask: mask}",
		"redq mean":                                       head + "dims: {Q: 4, B: 5}\nbatch: [B]\nloss: {type: redq, action_dim: 2}",
		"2-D redq none l2 td1 masked clamped":             head + "dims: {Q: 3, N: 2, T: 4}\nbatch: [N, T]\nestimator: {type: td1}\nloss: {type: redq, reduction: none, loss_function: l2, target_entropy: -1.5, min_alpha: 0.9, max_alpha: 1.1}\nkeys: {mask: mask}",
		"redq sum fixed":                                  head + "dims: {Q: 3, B: 6}\nbatch: [B]\nloss: {type: redq, reduction: sum, fixed_alpha: true, action_dim: 1}",
		"reinforce clipped none":                          flat + "loss: {type: reinforce, clip_value: 0.2, reduction: none}",
		"cql mean":                                        head + "dims: {Q: 2, B: 5, R: 3}\nbatch: [B]\nloss: {type: cql, action_dim: 2}",
		"2-D cql none l2 td1 masked T w entropy backup":   head + "dims: {Q: 2, N: 2, T: 3, R: 2}\nbatch: [N, T]\nestimator: {type: td1}\nloss: {type: cql, reduction: none, loss_function: l2, action_dim: 1, temperature: 0.5, min_q_weight: 2, deterministic_backup: false, min_alpha: 0.9, max_alpha: 1.1}\nkeys: {mask: mask}",
		"cql sum l1 lagrange max backup fixed":            head + "dims: {Q: 2, B: 4, R: 3}\nbatch: [B]\nloss: {type: cql, reduction: sum, loss_function: l1, action_dim: 3, with_lagrange: true, lagrange_thresh: 1, max_q_backup: true, fixed_alpha: true}",
		"2-D cql lagrange masked td_lambda":               head + "dims: {Q: 2, N: 2, T: 3, R: 4}\nbatch: [N, T]\nestimator: {type: td_lambda}\nloss: {type: cql, action_dim: 2, with_lagrange: true, temperature: 3}\nkeys: {mask: mask}",
	} {
		t.Run(name, func(t *testing.T) {
			fwd, fb := compile(t, src+"\n")
			checkFD(t, fwd, fb, randomInputs(t, fwd))
		})
	}
}

// Kinks, by hand (PyTorch's conventions): clamp passes the gradient at its bounds; on an exact
// tie of ClipPPO's gains it goes to the unclipped one (§11.5); torch.maximum splits a tie of
// the clipped and unclipped critic losses half and half; smooth_l1's derivative is
// clamp(x, −1, 1); a NaN input gives a NaN gradient.
func TestGradientKinks(t *testing.T) {
	const src = "package: p\ndtype: float64\nparam_dtype: float64\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo, reduction: sum, entropy_bonus: false%s}\n"
	hi, lo := math.Log1p(0.2), math.Log1p(-0.2)
	// Log-weights exactly at the bounds (lp − 0 is exact), and strictly outside them.
	in := map[string][]float64{
		"log_prob":        {hi, lo, hi + 0.01, lo - 0.01},
		"sample_log_prob": {0, 0, 0, 0},
		"advantage":       {2, -3, 2, -3},
		"state_value":     {0, 0, 0, 0},
		"value_target":    {0.5, 1, 3, -1},
	}
	_, fb := compile(t, fmt.Sprintf(src, ""))
	g := run(t, fb, in)
	// At a bound the gain is −A·e^lw either way; the gradient of −A·r is −A·r. Outside: 0.
	require.InDeltaSlice(t, []float64{-2 * math.Exp(hi), 3 * math.Exp(lo), 0, 0}, g["grad.log_prob"], 1e-15)
	// smooth_l1(y − V): ∂/∂V = −clamp(y − V, −1, 1) = −0.5, −1 (at |x| = 1), −1, 1.
	require.InDeltaSlice(t, []float64{-0.5, -1, -1, 1}, g["grad.state_value"], 1e-15)

	// Value clipping, l2: V = 1, V_old = −0.5, δ = 0.25 → V_c = −0.25; y = 0.375 makes
	// (y − V)² = (y − V_c)²: a tie of max(ℓu, ℓc). Half of ℓu's gradient 2(V − y) = 1.25 goes to
	// V; ℓc's half is stopped by the clamp (V − V_old = 1.5 is strictly outside ±δ).
	_, fb = compile(t, fmt.Sprintf(src, ", loss_critic_type: l2, clip_value: 0.25"))
	in2 := map[string][]float64{
		"log_prob": {0, 0, 0, 0}, "sample_log_prob": {0, 0, 0, 0}, "advantage": {0, 0, 0, 0},
		"state_value": {1, 1, 1, 1}, "old_state_value": {-0.5, -0.5, 1, 0.9}, "value_target": {0.375, 0.375, 0, 2},
	}
	g = run(t, fb, in2)
	require.InDelta(t, 0.625, g["grad.state_value"][0], 1e-15, "half of 1.25")
	// Row 2: V = V_old, no clipping: ℓu = ℓc, a tie whose halves are equal: 2(V − y) = 2.
	require.InDelta(t, 2.0, g["grad.state_value"][2], 1e-15)
	// Row 3: V − V_old = 0.1 inside ±δ: ℓu = ℓc again: 2(V − y) = −2.
	require.InDelta(t, -2.0, g["grad.state_value"][3], 1e-15)

	// NaN in.
	in["log_prob"][1] = math.NaN()
	in["state_value"][2] = math.NaN()
	_, fb = compile(t, fmt.Sprintf(src, ""))
	g = run(t, fb, in)
	require.True(t, math.IsNaN(g["grad.log_prob"][1]), "NaN log_prob")
	require.True(t, math.IsNaN(g["grad.state_value"][2]), "NaN state_value")
	require.False(t, math.IsNaN(g["grad.log_prob"][0]), "other elements stay finite")
}

// Every op has a gradient rule (a new op without one fails here, and the autodiff pass
// reports it at generation time).
func TestEveryOpHasARule(t *testing.T) {
	for _, op := range ir.AllOps() {
		require.True(t, ir.HasRule(op), "%s has no gradient rule", op)
	}
}

// Gradients through every differentiable op match finite differences on a graph that uses
// them all, with broadcasts and reductions over batch and non-batch dims.
func TestOpGradients(t *testing.T) {
	b := ir.NewBuilder(ir.F64, []ir.Dim{{Name: "B", Size: 3}, {Name: "A", Size: 4}}, []string{"B"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "A"), Differentiable: true})
	y := b.Input(ir.Input{Key: "y", Name: "y", Kind: ir.Float, Shape: b.Shape("B"), Differentiable: true})
	idx := b.Input(ir.Input{Key: "i", Name: "i", Kind: ir.Index, Shape: b.Shape("B")})
	pos := b.Add(b.Mul(x, x), b.Const(0.5))
	terms := []*ir.Node{
		b.Neg(x), b.Abs(x), b.Exp(x), b.Log(pos), b.Log1p(pos), b.Sqrt(pos), b.Broadcast(y, b.Shape("B", "A")),
		b.Sub(x, y), b.Mul(x, y), b.Div(x, b.Add(b.Abs(y), b.Const(1))), b.Min(x, y), b.Max(x, y),
		b.MinFirst(x, y), b.MaxFirst(x, b.Const(0.1)), b.Clamp(x, b.Const(-0.5), b.Const(0.5)),
		b.Where(b.Gt(x, y), b.Mul(x, x), b.Mul(y, x)),
		b.CustomGrad(b.Mul(x, b.Mul(x, x)), x, b.Mul(b.Const(3), b.Mul(x, x))),
		b.Sum(x, "A"), b.Mean(x, "B"), b.LogSumExp(x, "A"), b.ReduceMax(x, "A"), b.ReduceMin(x, "B"),
		b.Var(x, 1, "A"), b.Var(x, 0, "B", "A"), b.Std(x, 1, "A"), b.Std(x, 0, "B", "A"), b.Gather(b.Mul(x, x), idx, "A"),
	}
	loss := b.Const(0)
	for i, tm := range terms {
		loss = b.Add(loss, b.Mul(b.Const(float64(i+1)/10), b.SumAll(tm)))
	}
	b.Output("loss_all", loss, ir.LossTerm, "", "")
	fwd := b.Graph()
	fb, err := passes.Autodiff(fwd)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(3, 4))
	in := map[string][]float64{"x": make([]float64, 12), "y": make([]float64, 3), "i": {0, 3, 2}}
	for _, k := range []string{"x", "y"} {
		for j := range in[k] {
			in[k][j] = 2*r.Float64() - 1
		}
	}
	checkFD(t, fwd, fb, in)

	// Through a detach, nothing: the gradient of sum(x·detach(x)) is detach(x) = x.
	b = ir.NewBuilder(ir.F64, []ir.Dim{{Name: "B", Size: 3}}, []string{"B"})
	x = b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Batch(), Differentiable: true})
	b.Output("loss_d", b.SumAll(b.Mul(x, b.Detach(x))), ir.LossTerm, "", "")
	fb, err = passes.Autodiff(b.Graph())
	require.NoError(t, err)
	require.Equal(t, []float64{0.5, -2, 3}, run(t, fb, map[string][]float64{"x": {0.5, -2, 3}})["grad.x"])
}

// With an estimator in the kernel the gradients are those of the loss alone, fed the
// estimator's (detached) results as inputs: TorchRL's estimator runs on detached critic
// parameters, so no gradient flows through advantage or value_target (and, with value
// clipping, V_old = V is detached too).
func TestEstimatorResultsAreDetached(t *testing.T) {
	const rows = "package: p\ndtype: float64\nparam_dtype: float64\ndims: {N: 3, T: 5}\nbatch: [N, T]\n"
	for est, loss := range map[string]string{
		"gae":       "{type: clip_ppo, loss_critic_type: l2}",
		"td_lambda": "{type: clip_ppo, normalize_advantage: true}",
		"vtrace":    "{type: clip_ppo, loss_critic_type: smooth_l1}",
		"td0":       "{type: clip_ppo, reduction: sum, loss_critic_type: l1}",
	} {
		t.Run(est, func(t *testing.T) {
			fwd, fb := compile(t, rows+"estimator: {type: "+est+"}\nloss: "+loss+"\n")
			in := randomInputs(t, fwd)
			withEst := run(t, fb, in)
			lfwd, lfb := compile(t, rows+"loss: "+loss+"\n")
			lin := map[string][]float64{"advantage": withEst["advantage"], "value_target": withEst["value_target"]}
			for _, x := range lfwd.Inputs {
				if v, ok := in[x.Name]; ok {
					lin[x.Name] = v
				}
			}
			alone := run(t, lfb, lin)
			for _, x := range lfwd.Inputs {
				if x.Differentiable {
					require.InDeltaSlice(t, alone["grad."+x.Name], withEst["grad."+x.Name], 1e-12, x.Name)
				}
			}
			checkFD(t, lfwd, lfb, lin)
		})
	}
}

// The chain rule's zero guard (ir's gradMul: where(g ≠ 0, g·d, g)) is only against a local
// derivative d that can overflow in float32: one the value-range analysis bounds (a clamp,
// a polynomial of one: k3's small-x series) needs none, and the gradient is still exact at
// g = 0 and at a masked NaN, since the lowerings select by the mask before computing (x'
// = where(m, x, 0), SEMANTICS §11.16), as they must for an input's own derivative, which is
// never guarded. loss = Σ where(m, c·c, 0) with c = clamp(x', −0.1, 0.1) gets no comparison
// with 0; loss = Σ where(m, exp(x'), 0) keeps it.
func TestBoundedDerivativesNeedNoGuard(t *testing.T) {
	guards := func(bounded bool) (int, *ir.Graph) {
		b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "B", Size: 4}}, []string{"B"})
		x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B"), Differentiable: true})
		m := b.Input(ir.Input{Key: "m", Name: "m", Kind: ir.Bool, Shape: b.Shape("B")})
		x = b.Where(m, x, b.Const(0))
		v := b.Exp(x)
		if bounded {
			c := b.Min(b.Max(x, b.Const(-0.1)), b.Const(0.1))
			v = b.Mul(c, c)
		}
		b.Output("loss", b.Sum(b.Where(m, v, b.Const(0)), "B"), ir.LossTerm, "", "")
		g, err := passes.Autodiff(b.Graph())
		require.NoError(t, err)
		n := 0
		for _, x := range g.Nodes {
			if x.Op == ir.OpNe {
				n++
			}
		}
		return n, g
	}
	n, g := guards(true)
	require.Zero(t, n, "a bounded derivative is guarded")
	// At x = 0.05 the gradient is 2·0.05; clamped (x = 3) 0; masked (NaN) 0.
	out := run(t, g, map[string][]float64{"x": {0.05, 3, math.NaN(), -0.02}, "m": {1, 1, 0, 1}})
	require.InDeltaSlice(t, []float64{0.1, 0, 0, -0.04}, out["grad.x"], 1e-7)
	n, _ = guards(false)
	require.NotZero(t, n, "exp(x) can overflow: its derivative keeps the guard")
}

// A custom derivative replaces the formula's: the gradient of custom_grad(x², x, 7 − x)
// is g·(7 − x), nothing of 2x flows through the square, and its value is x².
func TestCustomGradUsesItsDerivative(t *testing.T) {
	b := ir.NewBuilder(ir.F64, []ir.Dim{{Name: "B", Size: 3}}, []string{"B"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B"), Differentiable: true})
	y := b.CustomGrad(b.Mul(x, x), x, b.Sub(b.Const(7), x))
	b.Output("loss", b.SumAll(b.Mul(b.Const(2), y)), ir.LossTerm, "", "")
	b.Output("y", y, ir.Metric, "", "")
	fb, err := passes.Autodiff(b.Graph())
	require.NoError(t, err)
	got := run(t, fb, map[string][]float64{"x": {1, -2, 0.5}})
	require.Equal(t, []float64{12, 18, 13}, got["grad.x"])
	require.Equal(t, []float64{1, 4, 0.25}, got["y"])
	require.Equal(t, []float64{10.5}, got["loss"])

	// A constant x carries no gradient: the node is y, detached.
	c := b.CustomGrad(b.Exp(x), b.Const(2), x)
	require.Equal(t, ir.OpDetach, c.Op)
}
