package gen_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/plan"
)

// TestThreeDimBatchEveryBackend runs specs on a three-dim batch [A, B, T] whose reductions
// keep different dims: the explained variance over A keeps B and T (TorchRL's dim 0), the
// normalisation excluding dim 0 keeps A. The planner moves each reduction the GPU threads
// of its pass cannot run to a pass of its own (raiseUnmappedReductions); every backend,
// Forward and ForwardBackward, must still agree with the interpreter. (Masked specs are
// planned in TestThreeDimBatchPlansReductionsApart: their estimator reads padding up to the
// next done, SEMANTICS §11.18, which the random golden cases do not set, so the
// garbage-padding comparison of checkAllBackends does not apply.)
func TestThreeDimBatchEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, c := range []struct {
		name, dtype, dims, est, loss, keys string
		def                                bool // in the default run
	}{
		// Columns of two values over A: explained_variance's tolerance for so few (up to
		// 1.3e-2 apart in the extreme cases, against 2e-3 over four or more).
		{"gae_clip_ppo", "float32", "{A: 2, B: 64, T: 421}", "{type: gae, gamma: 0.99, lmbda: 0.95}", "{type: clip_ppo}", "", true},
		{"vtrace_normalise_excluding_dim0", "float64", "{A: 2, B: 3, T: 11}", "{type: vtrace, gamma: 0.9}", "{type: clip_ppo, normalize_advantage: true, normalize_advantage_exclude_dims: [0]}", "", true},
		{"td_lambda_ppo_normalise_excluding_dim0", "float32", "{A: 3, B: 4, T: 9}", "{type: td_lambda, gamma: 0.9, lmbda: 0.7}", "{type: ppo, normalize_advantage: true, normalize_advantage_exclude_dims: [0]}", "", false},
		{"td1_normalise_excluding_dim1", "float64", "{A: 2, B: 3, T: 11}", "{type: td1, gamma: 0.95}", "{type: clip_ppo, normalize_advantage: true, normalize_advantage_exclude_dims: [1]}", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.def {
				sweepOnly(t)
			}
			t.Parallel()
			src := fmt.Sprintf("package: p\ndtype: %s\ndims: %s\nbatch: [A, B, T]\nestimator: %s\nloss: %s\n%s", c.dtype, c.dims, c.est, c.loss, c.keys)
			checkAllBackends(t, src)
		})
	}
}

// TestThreeDimBatchPlansReductionsApart: on a batch [A, B, T], no scan pass reduces some of
// its lines (GAE's explained variance over A keeps B: it runs after the scan's pass), and no
// pass of Forward's or ForwardBackward's plan has reductions its GPU threads cannot run.
// Each spec was an error at its batch ("the PTX kernels cannot run this batch yet").
func TestThreeDimBatchPlansReductionsApart(t *testing.T) {
	for _, src := range []string{
		"estimator: {type: gae, gamma: 0.99, lmbda: 0.9}\nloss: {type: clip_ppo}\n",
		"estimator: {type: vtrace, gamma: 0.9}\nloss: {type: clip_ppo, normalize_advantage: true, normalize_advantage_exclude_dims: [0]}\n",
		"estimator: {type: td0, gamma: 0.9}\nloss: {type: clip_ppo, normalize_advantage: true, normalize_advantage_exclude_dims: [0]}\nkeys: {mask: mask}\n",
		"estimator: {type: gae, gamma: 0.9, lmbda: 0.9}\nloss: {type: clip_ppo, normalize_advantage: true, normalize_advantage_exclude_dims: [0]}\nkeys: {mask: mask}\n",
	} {
		c, err := gen.CompileSource("g3.yaml", []byte("package: g3\ndims: {A: 2, B: 3, T: 11}\nbatch: [A, B, T]\n"+src))
		require.NoError(t, err, src)
		for _, p := range []*plan.Plan{c.Plan, c.Backward} {
			for _, ps := range p.Passes {
				if ps.Scan != nil {
					for _, r := range ps.Reduces {
						require.False(t, slices.Contains(r.Axes, "A") && !slices.Contains(r.Axes, "B"),
							"%s: pass %d scans along T and reduces %s", src, ps.Index, r)
					}
				}
				require.Nil(t, ps.Schedule.GPU.Unmapped, "%s: pass %d", src, ps.Index)
			}
		}
	}
}
