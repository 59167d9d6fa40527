package gen_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/ptxgen"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/runtime/ptxsim"
)

// compileSrc compiles a spec given as text.
func compileSrc(t *testing.T, src string) *gen.Compiled {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	c, err := gen.Compile(path)
	require.NoError(t, err)
	return c
}

// runAll runs ForwardBackward (Forward when the package has no gradients) of the pure-Go
// kernel, the default build's (AVX2 where the CPU has it) and the PTX in the simulator on
// each input set, returning each backend's outputs and gradients, and the data error each
// build reported.
func runAll(t *testing.T, c *gen.Compiled, ins []map[string]golden.Array) (outs []map[string]map[string]golden.Array, dataErrs []map[string]error) {
	t.Helper()
	m, err := runner.NewModule(c)
	require.NoError(t, err)
	defer m.Close()
	mod, err := ptxgen.Emit(c.Plan, c.Backward, gogen.Meta{Package: "p", GenVersion: runtime.GenVersion})
	require.NoError(t, err)
	table := mod.Launch
	if c.Backward != nil {
		table = *mod.Backward
	}
	bins := map[string]string{}
	for name, tags := range map[string]string{"go": "purego", "default": ""} {
		bins[name], err = m.Build(tags)
		require.NoError(t, err)
	}
	for _, in := range ins {
		out, errs := map[string]map[string]golden.Array{}, map[string]error{}
		for name, bin := range bins {
			run := m.Run
			if c.Backward != nil {
				run = m.RunBackward
			}
			o, err := run(bin, in)
			var de *runner.DataError
			if errors.As(err, &de) {
				errs[name], err = de, nil
			}
			require.NoError(t, err)
			out[name] = o
		}
		out["ptx"], _, err = ptxsim.RunTable(string(mod.PTX), table, in)
		require.NoError(t, err)
		outs, dataErrs = append(outs, out), append(dataErrs, errs)
	}
	return outs, dataErrs
}

// compareAll holds every backend's every output and gradient to the interpreter's under the
// generated tests' tolerances.
func compareAll(t *testing.T, c *gen.Compiled, what string, want map[string]golden.Array, outs map[string]map[string]golden.Array) {
	t.Helper()
	g := c.Reference()
	for backend, out := range outs {
		for _, o := range g.Outputs {
			d := golden.Compare(want[o.Name].Float64s(), out[o.Name].Float64s(), gen.OutputTolerance(g.DType, o))
			if d.Bad > 0 {
				t.Errorf("%s, %s, %s: %d bad, first at %d: got %v, want %v", backend, what, o.Name, d.Bad, d.First,
					out[o.Name].Float64s()[d.First], want[o.Name].Float64s()[d.First])
			}
		}
	}
}

// TestValueBasedStagesOnEveryBackend runs IQL, discrete IQL, DQN, the discrete CQL, the
// Q-value modules and the KL reward on every backend against the interpreter, outputs and gradients, on configurations
// the example packages do not have: two batch dims with a TD(λ) target, reduction none and
// sum, a categorical discrete action, masked categorical and mult_one_hot Q-value heads, a
// masked distributional head, a masked KL reward, SAC, TD3 and DDPG (masked, clamped α,
// TD(1) and TD(λ) targets, reduction none and sum), and CQL (the Lagrange term, the max and
// entropy backups); with the golden cases' random and
// extreme inputs (ties along the action dim, all-masked rows, rewards and Q-values of ±1e3
// that reach the advantage weight's cap of 100).
//
// The default run checks IQL (two batch dims, TD(λ), reduction none), discrete IQL (a
// categorical action, sum), a masked double DQN along time (TD(1), categorical, smooth_l1),
// a masked mult_one_hot Q-value head (gathers of flags through the mask), the masked KL
// reward, masked SAC with TD(λ) and masked CQL with the Lagrange term: each stage family, both dtypes, masks; LOSSGEN_FULL=1
// checks every configuration.
func TestValueBasedStagesOnEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, c := range []struct {
		name, src string
		def       bool // in the default run
	}{
		{"iql_td_lambda_none_f64", "dtype: float64\ndims: {Q: 3, N: 3, T: 7}\nbatch: [N, T]\nestimator: {type: td_lambda, gamma: 0.9, lmbda: 0.8}\nloss: {type: iql, reduction: none, loss_function: l1, expectile: 0.9, temperature: 2.0}\n", true},
		{"discrete_iql_categorical_sum_f32", "dims: {Q: 2, B: 37, A: 5}\nbatch: [B]\nloss: {type: discrete_iql, action_space: categorical, action_dim: A, reduction: sum, temperature: 2.0}\n", true},
		{"qvalue_categorical_mask_f64", "dtype: float64\ndims: {N: 3, T: 11, A: 5}\nbatch: [N, T]\ntransforms: [{type: qvalue, action_space: categorical, action_dim: A}]\nkeys: {action_mask: action_mask}\n", false},
		{"qvalue_mult_one_hot_mask_f32", "dims: {B: 23, A: 5}\nbatch: [B]\ntransforms: [{type: qvalue, action_space: mult_one_hot, var_nums: [2, 3], action_dim: A}]\nkeys: {action_mask: action_mask}\n", true},
		{"distributional_one_hot_mask_f64", "dtype: float64\ndims: {B: 19, K: 5, A: 3}\nbatch: [B]\ntransforms: [{type: distributional_qvalue, action_dim: A, atom_dim: K, support: [-2, -1, 0, 1.5, 3]}]\nkeys: {action_mask: action_mask}\n", false},
		{"dqn_double_categorical_td1_mask_f32", "dims: {N: 3, T: 9, A: 5}\nbatch: [N, T]\nestimator: {type: td1, gamma: 0.9}\nloss: {type: dqn, action_space: categorical, action_dim: A, double_dqn: true, loss_function: smooth_l1}\nkeys: {mask: mask}\n", true},
		{"discrete_cql_categorical_none_f64", "dtype: float64\ndims: {B: 29, A: 6}\nbatch: [B]\nloss: {type: discrete_cql, action_space: categorical, action_dim: A, reduction: none, loss_function: l1}\n", false},
		{"distributional_dqn_one_hot_mask_f32", "dims: {N: 2, T: 7, K: 11, A: 3}\nbatch: [N, T]\nloss: {type: distributional_dqn, gamma: 0.95, action_dim: A, atom_dim: K, action_space: one_hot, support: {vmin: -5, vmax: 5, n_atoms: 11}}\nkeys: {mask: mask}\n", true},
		{"kl_reward_td0_mask_f64", "dtype: float64\ndims: {B: 3, L: 9}\nbatch: [B, L]\ntransforms: [{type: kl_reward, coef: 0.3}]\nestimator: {type: td0, gamma: 0.9}\nkeys: {mask: mask}\n", true},
		{"sac_td_lambda_none_mask_clamped_f64", "dtype: float64\ndims: {Q: 2, N: 3, T: 7}\nbatch: [N, T]\nestimator: {type: td_lambda}\nloss: {type: sac, reduction: none, action_dim: 3, min_alpha: 0.8, max_alpha: 1.3, skip_done_states: true}\nkeys: {mask: mask}\n", true},
		{"sac_sum_l2_fixed_f32", "dims: {Q: 3, B: 41}\nbatch: [B]\nloss: {type: sac, reduction: sum, loss_function: l2, fixed_alpha: true, target_entropy: -2}\n", false},
		{"td3_td1_sum_mask_f32", "dims: {Q: 3, N: 2, T: 13}\nbatch: [N, T]\nestimator: {type: td1}\nloss: {type: td3, reduction: sum, loss_function: l1}\nkeys: {mask: mask}\n", false},
		{"a2c_categorical_clipped_mask_f32", "dims: {N: 3, T: 9, A: 5}\nbatch: [N, T]\nloss: {type: a2c, distribution: categorical, action_dim: A, clip_value: 0.2, critic_coeff: 0.5}\nkeys: {mask: mask}\n", true},
		{"reinforce_td_lambda_none_f64", "dtype: float64\ndims: {N: 2, T: 11}\nbatch: [N, T]\nestimator: {type: td_lambda, gamma: 0.9}\nloss: {type: reinforce, reduction: none, loss_critic_type: l2}\n", false},
		{"discrete_sac_one_hot_td_lambda_mask_f32", "dims: {Q: 2, N: 3, T: 9, A: 5}\nbatch: [N, T]\nestimator: {type: td_lambda}\nloss: {type: discrete_sac, action_space: one_hot, action_dim: A, max_alpha: 2}\nkeys: {mask: mask}\n", true},
		{"discrete_sac_categorical_none_f64", "dtype: float64\ndims: {Q: 3, B: 29, A: 4}\nbatch: [B]\nloss: {type: discrete_sac, action_space: categorical, action_dim: A, reduction: none, loss_function: l1, skip_done_states: true}\n", false},
		{"redq_td_lambda_mask_f64", "dtype: float64\ndims: {Q: 5, N: 3, T: 7}\nbatch: [N, T]\nestimator: {type: td_lambda}\nloss: {type: redq, action_dim: 3}\nkeys: {mask: mask}\n", true},
		{"redq_none_l2_f32", "dims: {Q: 4, B: 37}\nbatch: [B]\nloss: {type: redq, reduction: none, loss_function: l2, target_entropy: -2, min_alpha: 0}\n", false},
		{"cql_lagrange_td_lambda_mask_f32", "dims: {Q: 2, N: 3, T: 7, R: 5}\nbatch: [N, T]\nestimator: {type: td_lambda}\nloss: {type: cql, action_dim: 3, with_lagrange: true, lagrange_thresh: 0.5, temperature: 2, min_q_weight: 5}\nkeys: {mask: mask}\n", true},
		{"cql_none_max_backup_l2_f64", "dtype: float64\ndims: {Q: 2, B: 29, R: 4}\nbatch: [B]\nloss: {type: cql, action_dim: 2, reduction: none, loss_function: l2, max_q_backup: true, min_alpha: 0.8}\n", false},
		{"cql_sum_entropy_backup_fixed_f32", "dims: {Q: 2, B: 37, R: 3}\nbatch: [B]\nloss: {type: cql, action_dim: 6, reduction: sum, deterministic_backup: false, fixed_alpha: true}\n", false},
		{"ddpg_none_mask_f64", "dtype: float64\ndims: {N: 3, T: 5}\nbatch: [N, T]\nloss: {type: ddpg, reduction: none, loss_function: smooth_l1}\nkeys: {mask: mask}\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.def {
				sweepOnly(t)
			}
			t.Parallel()
			comp := compileSrc(t, "package: p\n"+c.src)
			cs, err := cases.Build(comp.Graph, "p", "")
			require.NoError(t, err)
			var ins []map[string]golden.Array
			for i := range cs {
				require.NoError(t, cases.Want(comp.Reference(), &cs[i]))
				ins = append(ins, cs[i].Inputs)
			}
			outs, _ := runAll(t, comp, ins)
			for i := range cs {
				compareAll(t, comp, cs[i].Name, cs[i].Want, outs[i])
			}
		})
	}
}

// A positive log-softmax value is a data error on every backend: the fault output counts it,
// the Go and AVX2 Forward return a *runtime.DataError (the runner reports it), and every other
// output is still what the interpreter computes.
func TestDistributionalDataError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	comp := compileSrc(t, "package: p\ndims: {B: 9, K: 3, A: 2}\nbatch: [B]\ntransforms: [{type: distributional_qvalue, action_dim: A, atom_dim: K, support: [-1, 0, 1]}]\n")
	g := comp.Graph
	cs, err := cases.Build(g, "p", "")
	require.NoError(t, err)
	good := cs[0]
	bad := golden.Case{Name: "bad", Inputs: map[string]golden.Array{}}
	for name, a := range good.Inputs {
		bad.Inputs[name] = a
	}
	v := append([]float32(nil), good.Inputs["action_value"].Data.([]float32)...)
	v[4], v[50] = 0.25, 1e-30
	bad.Inputs["action_value"] = golden.Array{Shape: good.Inputs["action_value"].Shape, Data: v}
	for _, c := range []*golden.Case{&good, &bad} {
		require.NoError(t, cases.Want(g, c))
	}
	require.Equal(t, []float64{0}, good.Want["invalid_action_value"].Float64s())
	require.Equal(t, []float64{2}, bad.Want["invalid_action_value"].Float64s())
	outs, errs := runAll(t, comp, []map[string]golden.Array{good.Inputs, bad.Inputs})
	compareAll(t, comp, "good", good.Want, outs[0])
	compareAll(t, comp, "bad", bad.Want, outs[1])
	require.Empty(t, errs[0])
	for _, build := range []string{"go", "default"} {
		require.ErrorContains(t, errs[1][build], "p: out.InvalidActionValue = 2: the number of (unmasked) action_value elements above 0", build)
	}
	for _, o := range g.Outputs {
		if o.Role == ir.Fault {
			require.Equal(t, "invalid_action_value", o.Name)
		}
	}
}
