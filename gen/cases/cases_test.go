package cases

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	goldenw "github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/spec"
)

// float64 data narrows into a float32 kernel as TorchRL's .to(torch.float32) does: each value
// rounded to the nearest float32 (ties to even), out-of-range values to ±inf, NaN kept.
func TestConvertNarrowsFloat64(t *testing.T) {
	in := &ir.Input{Name: "next.reward", Kind: ir.Float, Shape: ir.Shape{{Name: "B", Size: 7}}}
	tie := 1 + math.Ldexp(1, -24) // halfway between 1 and the next float32: rounds to even, 1
	above := math.Nextafter(tie, 2)
	a := golden.Array{Shape: []int{7}, Data: []float64{0.1, tie, above, 1e40, -1e40, math.NaN(), 5e-46}}
	got, err := Convert(ir.F32, in, a)
	require.NoError(t, err)
	require.Equal(t, []int{7}, got.Shape)
	x := got.Data.([]float32)
	require.Equal(t, math.Float32bits(0.1), math.Float32bits(x[0]), "0.1 rounds to float32(0.1)")
	require.Equal(t, float32(1), x[1], "a tie rounds to even")
	require.Equal(t, math.Nextafter32(1, 2), x[2], "just above the tie rounds up")
	require.Equal(t, float32(math.Inf(1)), x[3])
	require.Equal(t, float32(math.Inf(-1)), x[4])
	require.True(t, math.IsNaN(float64(x[5])))
	require.Equal(t, float32(0), x[6], "below half the smallest subnormal rounds to 0")

	// Widening is exact, and the same dtype passes through.
	got, err = Convert(ir.F64, in, golden.Array{Shape: []int{7}, Data: x})
	require.NoError(t, err)
	require.Equal(t, float64(x[0]), got.Data.([]float64)[0])
	got, err = Convert(ir.F32, in, golden.Array{Shape: []int{7}, Data: x})
	require.NoError(t, err)
	require.Equal(t, x, got.Data)

	// Other dtypes are still refused.
	_, err = Convert(ir.F32, in, golden.Array{Shape: []int{7}, Data: make([]int64, 7)})
	require.EqualError(t, err, `"next.reward" has an integer dtype, want float32; convert it with .astype(np.float32)`)
}

// clipPPOGAE compiles a small ClipPPO+GAE graph.
func clipPPOGAE(t *testing.T) *ir.Graph {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte("package: p\ndims: {N: 6, T: 13}\nbatch: [N, T]\n"+
		"estimator: {type: gae, gamma: 0.99, lmbda: 0.95}\nloss: {type: clip_ppo}\n"), 0o644))
	s, err := spec.ParseFile(path, lower.Registry())
	require.NoError(t, err)
	g, _, err := lower.Lower(s)
	require.NoError(t, err)
	return g
}

// Build draws the seeded cases with the runtime generator from their recipes: the recipe
// alone gives the same inputs back, the flag patterns are in the flags case, terminated is
// within done, and log_prob is sample_log_prob plus an offset.
func TestBuildRecipes(t *testing.T) {
	g := clipPPOGAE(t)
	cs, err := Build(g, "p", "")
	require.NoError(t, err)
	require.Len(t, cs, 3)
	for _, c := range cs {
		require.NotNil(t, c.Recipe, c.Name)
		again, err := c.Recipe.Generate() // checks the stored checksums too
		require.NoError(t, err)
		for name, a := range c.Inputs {
			require.Equal(t, a.Data, again[name], "%s %s", c.Name, name)
		}
		done, term := c.Inputs["next.done"].Data.([]bool), c.Inputs["next.terminated"].Data.([]bool)
		for i := range done {
			require.False(t, term[i] && !done[i], "%s: terminated without done at %d", c.Name, i)
		}
	}
	flags := cs[1]
	require.Equal(t, "flags", flags.Name)
	done := flags.Inputs["next.done"].Data.([]bool)
	require.True(t, done[1*13+6], "row 1: done in the middle")
	require.True(t, done[4*13+12], "row 4: done on the last step")
	rec := cs[0].Recipe.Inputs
	byName := map[string]int{}
	for i, in := range rec {
		byName[in.Name] = i
	}
	require.Equal(t, "sample_log_prob", rec[byName["log_prob"]].Sample.Offset)
}

// Update migrates a directory in golden format 1: it writes recipes, removes the seeded
// cases' stored inputs and leaves a user's own case alone; Check reports the old format
// before, and nothing after.
func TestUpdateMigratesFormat1(t *testing.T) {
	g := clipPPOGAE(t)
	dir := t.TempDir()
	cs, err := Build(g, "p", "")
	require.NoError(t, err)
	for i := range cs {
		require.NoError(t, Want(g, &cs[i]))
		old := cs[i]
		old.Recipe = nil // format 1: inputs and whole outputs
		require.NoError(t, goldenw.WriteCase(dir, old))
	}
	mine := golden.Case{Name: "mine", Inputs: cs[0].Inputs, Want: cs[0].Want}
	require.NoError(t, goldenw.WriteCase(dir, mine))
	diffs, err := Check(dir, cs)
	require.NoError(t, err)
	require.Len(t, diffs, 3)
	for _, d := range diffs {
		require.Contains(t, d.Text, "golden format 1")
	}
	require.NoError(t, Update(dir, cs))
	for _, name := range []string{"random", "flags", "extreme"} {
		require.NoFileExists(t, filepath.Join(dir, name+golden.InSuffix))
		require.FileExists(t, filepath.Join(dir, name+golden.RecipeSuffix))
	}
	require.FileExists(t, filepath.Join(dir, "mine"+golden.InSuffix))
	diffs, err = Check(dir, cs)
	require.NoError(t, err)
	require.Empty(t, diffs)
	// Another seed is a recipe difference.
	cs[0].Recipe.Seed++
	diffs, err = Check(dir, cs)
	require.NoError(t, err)
	require.Equal(t, []Difference{{Case: "random", Text: dir + ": case random: the recipe (seed, samples, shapes or checksums of the inputs) differs"}}, diffs)
}

// A data file makes a case, or is named with why it makes none, one file at a time: a
// trailing singleton dim (TorchRL's [*batch, 1]) is read as eval reads it; an action index
// outside its axis at a valid element (Forward's IndexError) names the input and element,
// not an interpreter node; one at padding (−100) is never read; an unreadable file is
// named.
func TestRealCasesFromData(t *testing.T) {
	s, err := spec.Parse("s.yaml", []byte("package: p\ndims: {B: 3, A: 4}\nbatch: [B]\nloss: {type: dqn, action_space: categorical, action_dim: A}\nkeys: {mask: mask}\n"), lower.Registry())
	require.NoError(t, err)
	g, _, err := lower.Lower(s)
	require.NoError(t, err)
	dir := t.TempDir()
	arrays := func(action []int64, mask []bool, trailing bool) map[string]golden.Array {
		out := map[string]golden.Array{}
		for _, in := range g.Inputs {
			shape := in.Shape.Sizes()
			n := in.Shape.Numel()
			switch in.Kind {
			case ir.Bool:
				out[in.Name] = golden.Array{Shape: shape, Data: append([]bool(nil), mask[:n]...)}
			case ir.Index:
				out[in.Name] = golden.Array{Shape: shape, Data: action}
			default:
				if trailing && len(shape) == 1 {
					shape = append(shape, 1)
				}
				out[in.Name] = golden.Array{Shape: shape, Data: make([]float32, n)}
			}
		}
		return out
	}
	valid := []bool{true, false, true, true, true, true, true, true, true, true, true, true}
	require.NoError(t, goldenw.WriteNPZ(filepath.Join(dir, "a_trailing.npz"), arrays([]int64{0, -100, 3}, valid, true)))
	require.NoError(t, goldenw.WriteNPZ(filepath.Join(dir, "b_range.npz"), arrays([]int64{0, 1, 9}, valid, false)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c_corrupt.npz"), []byte("not a zip"), 0o644))
	cs, skips, err := realCases(g, dir)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	require.Equal(t, "real_a_trailing", cs[0].Name)
	require.Len(t, skips, 2)
	require.Contains(t, skips[0].Why, `"action" holds 9 at element 2, outside [0, 4)`)
	require.Contains(t, skips[1].Why, "unreadable: ")
}
