package lower_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/interp"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

// A stage registered by one file (teststage_test.go) parses, lowers, feeds the estimator after
// it through the reward key, and generates a package, with no other change anywhere.
func TestStageFromOneFile(t *testing.T) {
	src := `
package: scaled
dtype: float64
param_dtype: float64
dims: {N: 2, T: 3}
batch: [N, T]
transforms: [{type: test_reward_scale, scale: 3}]
estimator: {type: td0, gamma: 0.5}
`
	path := filepath.Join(t.TempDir(), "scaled.yaml")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	c, err := gen.Compile(path)
	require.NoError(t, err)
	in := map[string]*tensor.Dense{}
	vals := map[string][]float64{
		"next.reward": {1, 2, 3, 4, 5, 6}, "bonus": {0.5, 0, 0, 0, 0, 1},
		"next.terminated": {0, 0, 1, 0, 0, 0}, "state_value": {0, 0, 0, 0, 0, 0}, "next.state_value": {2, 2, 2, 2, 2, 2},
	}
	for _, x := range c.Graph.Inputs {
		in[x.Name] = interp.New(x.Shape, vals[x.Name])
	}
	out, err := interp.Run(c.Graph, in)
	require.NoError(t, err)
	// TD(0) on the transformed reward 3R + bonus: G = 3R + b + 0.5·(1 − τ)·2.
	require.Equal(t, []float64{4.5, 7, 9, 13, 16, 20}, interp.Data(out["value_target"]))
	require.Equal(t, []float64{3.5, 6, 9, 12, 15, 19}, interp.Data(out["next.reward"]), "the transform's output")
	files, err := gen.Emit(c, gen.Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	require.Contains(t, string(files["scaled.go"]), "Scale = 3")
}

func lowerSrc(t *testing.T, src string) (*spec.Spec, []lower.Hyper) {
	t.Helper()
	s, err := spec.Parse("t.yaml", []byte(src), lower.Registry())
	require.NoError(t, err)
	_, hypers, err := lower.Lower(s)
	require.NoError(t, err)
	return s, hypers
}

func hyper(hs []lower.Hyper, name string) float64 {
	for _, h := range hs {
		if h.Name == name {
			return h.Value
		}
	}
	return math.NaN()
}

// Hyper-parameter precision (SEMANTICS.md §11.14): by default coefficients are held where and
// as TorchRL holds them, float32-rounded even in a float64 kernel (those in float32 buffers);
// param_dtype float64 keeps them in double.
func TestHyperParameterPrecision(t *testing.T) {
	const src = "package: p\ndtype: float64\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae}\nloss: {type: clip_ppo, clip_value: 0.3}\n"
	_, hs := lowerSrc(t, src)
	f32 := func(x float64) float64 { return float64(float32(x)) }
	require.Equal(t, f32(0.99), hyper(hs, "gamma"))
	require.Equal(t, f32(0.99*0.95), hyper(hs, "lmbda*gamma"), "λ·γ formed in double, then held as float32")
	require.Equal(t, -0.2231435477733612, hyper(hs, "log1p(-clip_epsilon)"), "correctly rounded float32 log1p of float32(−0.2)")
	require.Equal(t, f32(math.Log1p(f32(0.2))), hyper(hs, "log1p(clip_epsilon)"))
	require.Equal(t, f32(0.01), hyper(hs, "entropy_coeff"))
	require.Equal(t, f32(0.3), hyper(hs, "clip_value"))

	_, hs = lowerSrc(t, "package: p\ndtype: float64\nparam_dtype: float64\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae}\nloss: {type: clip_ppo}\n")
	require.Equal(t, 0.99, hyper(hs, "gamma"))
	require.Equal(t, 0.99*0.95, hyper(hs, "lmbda*gamma"))
	require.Equal(t, math.Log1p(-0.2), hyper(hs, "log1p(-clip_epsilon)"))
	require.Equal(t, 0.01, hyper(hs, "entropy_coeff"))

	// Per-head entropy coefficients and KLPEN's dtarg are Python floats in TorchRL (ppo.py
	// as_tensor(coeff, dtype=entropy.dtype); kl.mean() > self.dtarg * 1.5): never rounded to
	// float32 beside a critic_coeff that is (the TorchRL-numerics review).
	_, hs = lowerSrc(t, "package: p\ndtype: float64\ndims: {B: 4}\nbatch: [B]\nloss: {type: ppo, heads: [move, turn], entropy_coeff: {move: 0.013, turn: 0.051}, critic_coeff: 0.7}\n")
	require.Equal(t, 0.013, hyper(hs, "entropy_coeff.move"))
	require.Equal(t, 0.051, hyper(hs, "entropy_coeff.turn"))
	require.Equal(t, f32(0.7), hyper(hs, "critic_coeff"))
	_, hs = lowerSrc(t, "package: p\ndtype: float64\ndims: {B: 4, A: 3}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: categorical, action_dim: A, dtarg: 0.01}\n")
	require.Equal(t, 0.01, hyper(hs, "dtarg"))

	// TD(1) and TD(λ) fill tensors of the data's dtype with γ, λ: doubles in a float64 kernel.
	_, hs = lowerSrc(t, "package: p\ndtype: float64\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: td_lambda, gamma: 0.99, lmbda: 0.9}\n")
	require.Equal(t, 0.99, hyper(hs, "gamma"))
	require.Equal(t, 0.9, hyper(hs, "lmbda"))
	// TD(0) and V-trace's γ·(1 − flag) is a float32 tensor.
	for _, typ := range []string{"td0", "vtrace"} {
		_, hs = lowerSrc(t, "package: p\ndtype: float64\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: "+typ+", gamma: 0.99}\n")
		require.Equal(t, f32(0.99), hyper(hs, "gamma"), typ)
	}
}

// Lowering reports what the spec's keys get wrong at the key.
func TestKeyErrors(t *testing.T) {
	for _, c := range []struct{ src, err string }{
		{"keys: {sample_log_prob: null}", "t.yaml:6:25: keys.sample_log_prob: clip_ppo reads \"sample_log_prob\" but the key is mapped to null (absent from the data); map it to an array name"},
		{"keys: {log_prob: lp, sample_log_prob: lp}", "t.yaml:6:39: keys.sample_log_prob: maps to \"lp\", the array keys.log_prob already reads"},
		{"estimator: {type: gae}\nkeys: {advantage: state_value}", "t.yaml:7:19: keys.advantage: maps to \"state_value\", which would name both an input and an output of this spec; choose another name"},
		{"estimator: {type: gae}\nkeys: {value_target: sample_log_prob}", "t.yaml:7:22: keys.value_target: maps to \"sample_log_prob\", which would name both an input and an output of this spec; choose another name"},
	} {
		s, err := spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo}\n\n"+c.src+"\n"), lower.Registry())
		require.NoError(t, err)
		_, _, err = lower.Lower(s)
		require.EqualError(t, err, c.err)
	}
	// A clip_epsilon in (0, 1) that rounds to 1 in TorchRL's float32 buffer: log1p(−1) = −inf.
	s, err := spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo, clip_epsilon: 0.99999999}\n"), lower.Registry())
	require.NoError(t, err)
	_, _, err = lower.Lower(s)
	require.ErrorContains(t, err, "t.yaml:4:38: loss.clip_epsilon: ε_low 0.99999999 rounds to 1 in float32")
}

// MCAdvantage's group statistics have no mask: with group_dim the last batch dim, every
// element is a sample and a mapped mask would mask samples, not tokens.
func TestGroupDimBeforeTokens(t *testing.T) {
	src := "package: p\ndims: {G: 2, N: 4, L: 8}\nbatch: [G, N, L]\nestimator: {type: mc_advantage, group_dim: %s, trajectory_return: sum}\nloss: {type: grpo}\nkeys: {mask: mask}\n"
	s, err := spec.Parse("t.yaml", fmt.Appendf(nil, src, "L"), lower.Registry())
	require.NoError(t, err)
	_, _, err = lower.Lower(s)
	require.ErrorContains(t, err, `t.yaml:4:44: estimator.group_dim: "L" is the last batch dim, so keys.mask would mask whole samples`)
	s, err = spec.Parse("t.yaml", fmt.Appendf(nil, src, "N"), lower.Registry())
	require.NoError(t, err)
	_, _, err = lower.Lower(s)
	require.NoError(t, err)
}

// GRPO's kl_to_inference_coeff: null is TorchRL's default None, no KL-to-inference term, as
// leaving it out; a number adds the term.
func TestGRPOKLToInferenceNull(t *testing.T) {
	outs := func(extra string) []string {
		s, err := spec.Parse("t.yaml", []byte("package: p\ndims: {B: 2, L: 4}\nbatch: [B, L]\nloss: {type: grpo"+extra+"}\n"), lower.Registry())
		require.NoError(t, err)
		g, _, err := lower.Lower(s)
		require.NoError(t, err)
		var names []string
		for _, o := range g.Outputs {
			names = append(names, o.Name)
		}
		return names
	}
	require.Equal(t, outs(""), outs(", kl_to_inference_coeff: null"))
	require.NotContains(t, outs(""), "loss_kl_to_inference")
	require.Contains(t, outs(", kl_to_inference_coeff: 0.1"), "loss_kl_to_inference")
}

// A standalone estimator does not read keys.mask, but the mapping cuts its recursion at done
// steps (the multi-agent review: the warning said the mask was ignored, yet removing it
// changed the advantages): the warning says what it does; TD(0), which has no recursion,
// ignores it.
func TestMaskOnAStandaloneEstimatorWarnsWhatItDoes(t *testing.T) {
	s, _ := lowerSrc(t, "package: p\ndims: {N: 1, T: 3}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\nkeys: {mask: mask}\n")
	require.Len(t, s.Warnings, 1)
	require.Contains(t, s.Warnings[0].Msg, "keys.mask is not read by this spec's estimator gae (the kernel takes no mask), but with it mapped the estimator's recursion is cut at done steps")
	s, _ = lowerSrc(t, "package: p\ndims: {N: 1, T: 3}\nbatch: [N, T]\nestimator: {type: td0, gamma: 0.99}\nkeys: {mask: mask}\n")
	require.Len(t, s.Warnings, 1)
	require.Contains(t, s.Warnings[0].Msg, "keys.mask is neither read nor written by this spec's estimator td0; it is ignored")
}
