package golden

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/runtime"
	rtgolden "github.com/lossgen/lossgen/runtime/golden"
)

// The writer's files read back with the runtime's reader (runtime/golden tests the reader on
// hand-made and hostile files).

func TestNPZRoundTrip(t *testing.T) {
	dir := t.TempDir()
	arrays := map[string]rtgolden.Array{
		"a":           {Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}},
		"next.reward": {Shape: []int{4}, Data: []float64{1, -2, math.Inf(1), 0.5}},
		"next.done":   {Shape: []int{2, 2}, Data: []bool{true, false, false, true}},
		"action":      {Shape: []int{3}, Data: []int64{0, 2, 1}},
		"loss":        {Shape: []int{}, Data: []float64{0.25}},
	}
	p := filepath.Join(dir, "x.npz")
	require.NoError(t, WriteNPZ(p, arrays))
	got, err := rtgolden.ReadNPZ(p)
	require.NoError(t, err)
	require.Equal(t, arrays, got)

	// Byte-stable: the same arrays give the same file.
	p2 := filepath.Join(dir, "y.npz")
	require.NoError(t, WriteNPZ(p2, arrays))
	b1, _ := os.ReadFile(p)
	b2, _ := os.ReadFile(p2)
	require.Equal(t, b1, b2)
}

// TestNPZLarge round-trips a [64, 421] array: beyond 32 KiB, where a deflate stream returns
// short reads (npyio v0.6.0 alone corrupts the data from element 8171 on).
func TestNPZLarge(t *testing.T) {
	x := make([]float32, 64*421)
	for i := range x {
		x[i] = float32(i)
	}
	p := filepath.Join(t.TempDir(), "big.npz")
	require.NoError(t, WriteNPZ(p, map[string]rtgolden.Array{"a": {Shape: []int{64, 421}, Data: x}}))
	got, err := rtgolden.ReadNPZ(p)
	require.NoError(t, err)
	require.Equal(t, []int{64, 421}, got["a"].Shape)
	require.Equal(t, x, got["a"].Data)
}

// A case whose inputs were removed is an error that names it, not a case silently skipped.
func TestOpenCasesOrphanWant(t *testing.T) {
	dir := t.TempDir()
	c := rtgolden.Case{Name: "mine", Inputs: map[string]rtgolden.Array{"x": {Shape: []int{2}, Data: []float64{1, 2}}},
		Want: map[string]rtgolden.Array{"y": {Shape: []int{2}, Data: []float64{3, 4}}}}
	require.NoError(t, WriteCase(dir, c))
	cs, err := rtgolden.OpenCases(dir)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	require.NoError(t, os.Remove(filepath.Join(dir, "mine"+rtgolden.InSuffix)))
	_, err = rtgolden.OpenCases(dir)
	require.ErrorContains(t, err, "case mine has expected outputs but no inputs")
}

// A seeded case round-trips through its files: the recipe, whole small outputs and
// summaries; the inputs are drawn again, bit for bit.
func TestSeededCaseRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rec := &runtime.CaseRecipe{Format: runtime.GoldenFormat, Generator: runtime.GeneratorName, Case: "random", Seed: 9, DType: "float32",
		Inputs: []runtime.InputRecipe{{Name: "x", Key: "x", Kind: "float", Shape: []int{64, 100}, Sample: runtime.Sample{Dist: "normal", Std: 1}}}}
	vals, sums, err := rec.Draw()
	require.NoError(t, err)
	rec.Inputs[0].Checksum = sums[0]
	big := make([]float64, 64*100)
	for i := range big {
		big[i] = float64(i%97) - 40.5
	}
	s := rtgolden.Summarize("big", []int{64, 100}, big)
	c := rtgolden.Case{Name: "random", Recipe: rec, Inputs: map[string]rtgolden.Array{"x": {Shape: []int{64, 100}, Data: vals["x"]}},
		Want: map[string]rtgolden.Array{"big": {Shape: []int{64, 100}, Data: big}, "loss": {Shape: []int{}, Data: []float64{0.5}}}}
	require.NoError(t, WriteCase(dir, c))
	_, err = os.Stat(filepath.Join(dir, "random.in.npz"))
	require.True(t, os.IsNotExist(err), "a seeded case stores no inputs")
	cs, err := rtgolden.OpenCases(dir)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	got := cs[0]
	require.Nil(t, got.Inputs)
	require.NoError(t, got.LoadInputs())
	require.Equal(t, vals["x"], got.Inputs["x"].Data)
	require.Equal(t, []float64{0.5}, got.Want["loss"].Data)
	require.Empty(t, s.Equal(got.Summary["big"], rtgolden.Tol{Rel: 0}))
	r, err := got.Check("big", big, rtgolden.Tol{Abs: 1e-6, Rel: 5e-6})
	require.NoError(t, err)
	require.Zero(t, r.Bad)
	require.Contains(t, r.Checked, "1024 samples, 64 row and 100 column segments")
	stale, err := StaleFormat(dir)
	require.NoError(t, err)
	require.Empty(t, stale)
}
