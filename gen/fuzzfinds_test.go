package gen_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
)

// TestPipelineFindings holds what FuzzSpec and the writing of its seeds turned up (each input
// is also a seed in testdata/fuzz/FuzzSpec): the error each input must give now, positioned
// at the key at fault, where it used to panic, report an internal error, give an
// unpositioned or misplaced error, or compile and then fail to emit (or, with no error
// given, that it now compiles and emits).
func TestPipelineFindings(t *testing.T) {
	for _, tc := range []struct {
		name, src, err string
	}{{
		// Compiled, then Emit failed in the PTX backend without a position; then an error
		// at batch ("pass 0 computes a var over A that reduces only some of the thread dims
		// [A B]"). The plan now computes the explained variance in a pass after the scan's
		// (raiseUnmappedReductions): it compiles, emits, and runs on every backend
		// (TestThreeDimBatchEveryBackend).
		name: "ptx_unmapped_3d_gae",
		src:  "package: g3\ndims: {A: 2, B: 3, T: 11}\nbatch: [A, B, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.9}\nloss: {type: clip_ppo}\n",
	}, {
		// Was "the PTX kernels cannot run this batch yet: pass 0 computes a logsumexp over A
		// that keeps loop dims [B] that are not the outermost loops [A B]". The plan now sinks
		// the ESS's logsumexp into the pass after the per-row normalisation, whose threads
		// loop B > A: it compiles, emits, and its PTX agrees with the interpreter.
		name: "ptx_unmapped_3d_normalise_excluding_dim0",
		src:  "package: n3\ndims: {A: 2, B: 3, C: 11}\nbatch: [A, B, C]\nloss: {type: clip_ppo, normalize_advantage: true, normalize_advantage_exclude_dims: [0], log_explained_variance: false}\n",
	}, {
		// Positioned at 1:1, the file's start: a list item's path had no recorded position.
		name: "transform_error_at_its_item",
		src:  "package: tr\ndims: {B: 8}\nbatch: [B]\ntransforms:\n  - {type: qvalue, action_space: categorical}\n",
		err:  "fuzz.yaml:5:5: transforms[0].action_dim: required",
	}, {
		// Positioned at 1:1: a key the spec leaves at its default has no position of its own,
		// so the error points at the stage that writes it.
		name: "default_key_error_at_its_stage",
		src:  "package: tr\ndims: {B: 8}\nbatch: [B]\ntransforms:\n  - {type: kl_reward, coef: 0.1}\n  - {type: kl_reward, coef: 0.1}\n",
		err:  "fuzz.yaml:6:5: keys.reward: the output name \"next.reward\" is also an output of kl_reward; choose another",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gen.CompileSource(fuzzFile, []byte(tc.src))
			if tc.err == "" { // runs now
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.err)
			}
			checkPipeline(t, []byte(tc.src))
		})
	}
}
