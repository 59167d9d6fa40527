package gen_test

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/runtime/golden"
)

// backends builds the compiled spec twice: the pure-Go kernel and the default build (AVX2
// where the CPU has it). It returns a function running both on the same inputs.
func backends(t *testing.T, c *gen.Compiled) func(in map[string]golden.Array) map[string]map[string]golden.Array {
	m, err := runner.NewModule(c)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	bins := map[string]string{}
	for name, tags := range map[string]string{"go": "purego", "default": ""} {
		bin, err := m.Build(tags)
		require.NoError(t, err)
		bins[name] = bin
	}
	return func(in map[string]golden.Array) map[string]map[string]golden.Array {
		out := map[string]map[string]golden.Array{}
		for name, bin := range bins {
			o, err := m.Run(bin, in)
			require.NoError(t, err)
			out[name] = o
		}
		return out
	}
}

// perturb builds a random case for g and lets edit change its float64 values by logical key.
func perturb(g *ir.Graph, edit func(key string, v []float64)) (map[string]golden.Array, golden.Case) {
	cs, err := cases.Build(g, "extreme", "")
	if err != nil {
		panic(err)
	}
	in := map[string]golden.Array{}
	for _, x := range g.Inputs {
		v := cs[0].Inputs[x.Name].Float64s()
		edit(x.Key, v)
		in[x.Name] = cases.Stored(g.DType, x, v)
	}
	c := golden.Case{Name: "x", Inputs: in}
	if err := cases.Want(g, &c); err != nil {
		panic(err)
	}
	return in, c
}

// sameSpecials asserts NaN where want has NaN, the same infinities, and finite values
// within tol.
func sameSpecials(t *testing.T, what string, want, got []float64, tol golden.Tol) {
	t.Helper()
	d := golden.Compare(want, got, tol)
	if d.Bad > 0 {
		t.Errorf("%s: %d elements differ; first at %d: got %v, want %v", what, d.Bad, d.First, got[d.First], want[d.First])
	}
}

// TestExtremeInputs runs the ClipPPO+GAE example on inputs pushed to the edges, on every
// backend, against the interpreter: what propagates must be what TorchRL's float semantics
// give, and where values stay finite they must agree.
func TestExtremeInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	c, err := gen.Compile("../spec/examples/clip_ppo_gae.yaml")
	require.NoError(t, err)
	run := backends(t, c)
	g := c.Graph
	T := 421
	tol := golden.Tol{Abs: 1e-6, Rel: 5e-5, Norm: 1e-5}

	t.Run("log_ratio_80", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 1))
		in, want := perturb(g, func(key string, v []float64) {
			if key == "log_prob" {
				for i := range v {
					if i%3 == 0 {
						v[i] += 80 * float64(2*r.IntN(2)-1)
					}
				}
			}
		})
		for name, out := range run(in) {
			for _, o := range g.Outputs {
				sameSpecials(t, name+" "+o.Name, want.Want[o.Name].Float64s(), out[o.Name].Float64s(), tol)
			}
		}
	})

	t.Run("inf_log_prob", func(t *testing.T) {
		// ±inf log-probs: ratios of +inf and 0. A +inf ratio times a negative advantage is
		// −inf in the surrogate (and its mean), times a positive one the clipped branch wins;
		// logsumexp (ESS) leaves its fast path for the exact one.
		in, want := perturb(g, func(key string, v []float64) {
			if key == "log_prob" {
				v[7], v[1000] = math.Inf(1), math.Inf(-1)
			}
		})
		for name, out := range run(in) {
			for _, o := range g.Outputs {
				sameSpecials(t, name+" "+o.Name, want.Want[o.Name].Float64s(), out[o.Name].Float64s(), tol)
			}
		}
	})

	t.Run("nan_reward", func(t *testing.T) {
		// A NaN reward at (n=3, t=200) poisons δ there, hence the advantage and value target
		// at t ≤ 200 of row 3 (the recursion carries it back, across done flags too since
		// 0·NaN is NaN), every mean over the batch that reads them, and the explained
		// variance of columns t ≤ 200. The policy-only logs stay finite.
		in, want := perturb(g, func(key string, v []float64) {
			if key == "reward" {
				v[3*T+200] = math.NaN()
			}
		})
		adv := want.Want["advantage"].Float64s()
		for i, x := range adv {
			n, tt := i/T, i%T
			require.Equal(t, n == 3 && tt <= 200, math.IsNaN(x), "interpreter advantage[%d,%d] = %v", n, tt, x)
		}
		ev := want.Want["explained_variance"].Float64s()
		for tt, x := range ev {
			require.Equal(t, tt <= 200, math.IsNaN(x), "explained_variance[%d]", tt)
		}
		for _, name := range []string{"loss_objective", "loss_critic"} {
			require.True(t, math.IsNaN(want.Want[name].Float64s()[0]), name)
		}
		for _, name := range []string{"clip_fraction", "kl_approx", "entropy", "loss_entropy", "ESS"} {
			require.False(t, math.IsNaN(want.Want[name].Float64s()[0]), name)
		}
		for name, out := range run(in) {
			for _, o := range g.Outputs {
				sameSpecials(t, name+" "+o.Name, want.Want[o.Name].Float64s(), out[o.Name].Float64s(), tol)
			}
		}
	})

	t.Run("nan_log_prob", func(t *testing.T) {
		// A NaN log-prob: NaN surrogate, kl_approx and ESS; the element counts as clipped
		// (NaN ≠ NaN), so clip_fraction stays finite.
		in, want := perturb(g, func(key string, v []float64) {
			if key == "log_prob" {
				v[5] = math.NaN()
			}
		})
		for _, name := range []string{"loss_objective", "kl_approx", "ESS"} {
			require.True(t, math.IsNaN(want.Want[name].Float64s()[0]), name)
		}
		require.False(t, math.IsNaN(want.Want["clip_fraction"].Float64s()[0]))
		for name, out := range run(in) {
			for _, o := range g.Outputs {
				sameSpecials(t, name+" "+o.Name, want.Want[o.Name].Float64s(), out[o.Name].Float64s(), tol)
			}
		}
	})
}

// TestExtremeNormalisation covers the flat-minibatch example: advantages of 1e30 (finite
// normalised advantages, as torch.std's) and all-equal advantages, whose unbiased std is 0 so the 1e-6 floor applies and every
// normalised advantage is exactly 0 (a float32 mean of equal values is that value).
func TestExtremeNormalisation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	c, err := gen.Compile("../spec/examples/clip_ppo.yaml")
	require.NoError(t, err)
	run := backends(t, c)
	g := c.Graph
	tol := golden.Tol{Abs: 1e-6, Rel: 5e-5, Norm: 1e-5}

	t.Run("equal_advantage", func(t *testing.T) {
		in, want := perturb(g, func(key string, v []float64) {
			if key == "advantage" {
				for i := range v {
					v[i] = 0.25
				}
			}
		})
		require.Equal(t, 0.0, want.Want["loss_objective"].Float64s()[0])
		for b, out := range run(in) {
			for _, o := range g.Outputs {
				sameSpecials(t, b+" "+o.Name, want.Want[o.Name].Float64s(), out[o.Name].Float64s(), tol)
			}
		}
	})

	t.Run("huge_advantage", func(t *testing.T) {
		// Advantages of 1e30: their variance (~1e58) is beyond float32, but torch.std
		// accumulates it in double and rounds only the root (~1e29), so TorchRL's float32
		// normalised advantages are finite; so are lossgen's (OpStd: the root of the float64
		// variance). Every output of every backend agrees with the interpreter. (Until the
		// float32 review they were all 0, the variance rounded to +inf first.)
		in, want := perturb(g, func(key string, v []float64) {
			if key == "advantage" {
				for i := 0; i < len(v); i += 97 {
					v[i] = 1e30
				}
			}
		})
		require.NotEqual(t, 0.0, want.Want["loss_objective"].Float64s()[0])
		for b, out := range run(in) {
			for _, o := range g.Outputs {
				sameSpecials(t, b+" "+o.Name, want.Want[o.Name].Float64s(), out[o.Name].Float64s(), tol)
			}
		}
	})
}

// TestMeanOf16MElements: a float32 mean over 2^24 elements agrees with the float64
// interpreter to 1e-6 relative on every backend (positive values, so nothing cancels and
// every rounding counts).
func TestMeanOf16MElements(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "B", Size: 1 << 24}}, []string{"B"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Batch()})
	b.Output("mean", b.MeanAll(x), ir.Metric, "", "")
	b.Output("sum", b.SumAll(x), ir.Metric, "", "")
	g := b.Graph()
	c := compiledGraph(t, g, "mean16m")
	run := backends(t, c)
	r := rand.New(rand.NewPCG(9, 9))
	v := make([]float32, 1<<24)
	for i := range v {
		v[i] = float32(0.1 + 1.4*r.Float64())
	}
	in := map[string]golden.Array{"x": {Shape: []int{1 << 24}, Data: v}}
	want := golden.Case{Inputs: in}
	require.NoError(t, cases.Want(g, &want))
	for name, out := range run(in) {
		for _, o := range []string{"mean", "sum"} {
			w, got := want.Want[o].Float64s()[0], out[o].Float64s()[0]
			require.InEpsilon(t, w, got, 1e-6, "%s %s", name, o)
			t.Logf("%s %s: relative error %.2g", name, o, math.Abs(got-w)/w)
		}
	}
}

// TestChunkedOddShapes runs the generated tests of specs with awkward shapes — dims that
// fill no vector, a three-dim batch normalised over all but its middle dim, rows not a
// multiple of the chunk count, a flat batch with a tail — with their chunkable AVX2 passes
// split into 3 chunks of rows or of whole blocks (the generated TestChunkedAVX2), against the
// AVX2 kernels unchunked on random and extreme inputs, which TestImplementationsAgree
// compares with the pure-Go kernel.
//
// The default run checks the float32 three-dim batch (a normalisation over all but its middle
// dim), the float64 GAE + ClipPPO on 7 rows (3 chunks of uneven rows, a scan, 4-lane
// vectors) and a flat float32 batch of 43 (3 chunks of 1, 2 and 2 whole blocks, the last
// with the 3-element tail) and distillation's per-row sums on 7 rows; LOSSGEN_FULL=1 all six.
// The Go kernels' chunked run (TestChunkedGo) is checked too.
func TestChunkedOddShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for name, src := range map[string]string{
		"gae_3x5": "dims: {N: 3, T: 5}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.9, lmbda: 0.8, average_gae: true}\n",
		"clip_ppo_gae_4x13": "dims: {N: 4, T: 13}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\n" +
			"loss: {type: clip_ppo, normalize_advantage: true, clip_value: 0.1}\n",
		"clip_ppo_3d": "dims: {A: 5, B: 3, C: 37}\nbatch: [A, B, C]\n" +
			"loss: {type: clip_ppo, normalize_advantage: true, normalize_advantage_exclude_dims: [1], loss_critic_type: l1}\n",
		"clip_ppo_flat_43": "dims: {B: 43}\nbatch: [B]\nloss: {type: clip_ppo, normalize_advantage: true, clip_value: 0.1}\n",
		"clip_ppo_gae_7x9_f64": "dtype: float64\ndims: {N: 7, T: 9}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\n" +
			"loss: {type: clip_ppo, entropy_coeff: 0.02}\n",
		// Per-row sums over the tokens (each row's state in one chunk only) beside the mean
		// over every token, 3 chunks of 7 rows of 37.
		"distillation_7x37": "dims: {B: 7, L: 37}\nbatch: [B, L]\nloss: {type: distillation}\nkeys: {mask: mask}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if name != "clip_ppo_3d" && name != "clip_ppo_gae_7x9_f64" && name != "clip_ppo_flat_43" && name != "distillation_7x37" {
				sweepOnly(t)
			}
			t.Parallel()
			path := filepath.Join(t.TempDir(), "s.yaml")
			require.NoError(t, os.WriteFile(path, []byte("package: p\n"+src), 0o644))
			c, err := gen.Compile(path)
			require.NoError(t, err)
			m, err := runner.NewTestModule(c)
			require.NoError(t, err)
			defer m.Close()
			out, err := m.Test("TestChunkedAVX2|TestChunkedGo|TestImplementationsAgree")
			require.NoError(t, err)
			require.Contains(t, out, "--- PASS: TestChunkedGo")
			if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
				for _, kind := range []string{"random", "big", "inf", "nan", "equal"} {
					require.Contains(t, out, "--- PASS: TestChunkedAVX2/"+kind)
				}
				require.Contains(t, out, "--- PASS: TestImplementationsAgree/nan")
			}
		})
	}
}
