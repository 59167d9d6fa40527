package gen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
)

// TestExtremeValidSpecsCompile generates a package (tests included) for each spec of a table
// of valid specs at the edges of what the schema accepts — coefficients at the float32 limits
// and near zero, discounts of 0 and 1, unbounded thresholds, the deepest batch, the longest
// names — and compiles and vets them all: a valid spec never yields code that does not build
// (issue 8: a constant beyond float32 once printed float32(-Inf) into kernels_generic.go).
func TestExtremeValidSpecsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles generated code")
	}
	t.Parallel()
	long := strings.Repeat("x", 63)
	specs := []string{
		"dtype: float32\ndims: {B: 5}\nbatch: [B]\nloss: {type: clip_ppo, entropy_coeff: 3.4e38, critic_coeff: 1.0e-45, clip_epsilon: 1.0e-7, clip_value: 3.0e38, normalize_advantage: true}",
		"dtype: float32\ndims: {B: 3}\nbatch: [B]\nloss: {type: clip_ppo, clip_epsilon: [0.999999, 1.0e-30], reduction: sum, loss_critic_type: l1, entropy_bonus: false}",
		"dtype: float64\nparam_dtype: float64\ndims: {B: 2, A: 1}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: categorical, action_dim: A, beta: 1.0e300, dtarg: 1.0e-300, increment: 1.0e300, decrement: 1.0e-300}",
		"dtype: float32\ndims: {B: 3, D: 1}\nbatch: [B]\nloss: {type: ppo, distribution: tanh_normal, action_dim: D, low: -3.0e38, high: 3.0e38}",
		"dtype: float32\ndims: {N: 1, T: 1}\nbatch: [N, T]\nestimator: {type: gae, gamma: 1, lmbda: 0, average_gae: false}\nloss: {type: ppo, distribution: none}",
		"dtype: float64\nparam_dtype: float64\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: vtrace, gamma: 0, rho_thresh: 1.0e300, c_thresh: 1.0e-300}",
		"dtype: float32\ndims: {A1: 1, B2: 2, C1: 1, D3: 3, E1: 1, F2: 2}\nbatch: [A1, B2, C1, D3, E1, F2]\nloss: {type: ppo, reduction: none, normalize_advantage: true, normalize_advantage_exclude_dims: [0], log_explained_variance: false}",
		fmt.Sprintf("dtype: float32\ndims: {X%s: 2, T: 2}\nbatch: [X%s, T]\nestimator: {type: td_lambda, gamma: 0.5, lmbda: 1}\nkeys: {reward: [n1, n2, n3, %s]}", long, long, long[:60]),
		// Batches just over gen.LargeBatch, whose tests take the large-batch paths (shared input
		// buffers, the pure-Go kernel on one case): with gradients and a golden directory, with
		// kernel state, without gradients.
		"dtype: float32\ndims: {N: 1024, T: 4097}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\nloss: {type: clip_ppo, normalize_advantage: true}",
		"dtype: float32\ndims: {B: 4194305, D: 1}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: normal, action_dim: D}",
		"dtype: float64\ndims: {N: 1025, T: 4096}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}",
	}
	golden := map[int]bool{len(specs) - 3: true, len(specs) - 2: true, len(specs) - 1: true}
	mod := t.TempDir()
	for i, body := range specs {
		name := fmt.Sprintf("p%d", i)
		path := filepath.Join(t.TempDir(), name+".yaml")
		require.NoError(t, os.WriteFile(path, []byte("package: "+name+"\n"+body+"\n"), 0o644))
		dir := filepath.Join(mod, name)
		opts := gen.Options{OutDir: dir}
		if golden[i] {
			opts.GoldenDir = filepath.Join(mod, "testdata", name) // the test loads it: compiled, not run
		}
		_, files, err := gen.Generate(path, opts)
		require.NoError(t, err, "spec %d:\n%s", i, body)
		require.NoError(t, gen.Write(dir, files))
	}
	scratchModule(t, mod, "extremes")
	out, err := goIn(mod, "vet", "./...")
	require.NoError(t, err, "%s", out)
}
