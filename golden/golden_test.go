package golden

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNPZRoundTrip(t *testing.T) {
	dir := t.TempDir()
	arrays := map[string]Array{
		"a":           {Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}},
		"next.reward": {Shape: []int{4}, Data: []float64{1, -2, math.Inf(1), 0.5}},
		"next.done":   {Shape: []int{2, 2}, Data: []bool{true, false, false, true}},
		"action":      {Shape: []int{3}, Data: []int64{0, 2, 1}},
		"loss":        {Shape: []int{}, Data: []float64{0.25}},
	}
	p := filepath.Join(dir, "x.npz")
	require.NoError(t, WriteNPZ(p, arrays))
	got, err := ReadNPZ(p)
	require.NoError(t, err)
	require.Equal(t, arrays, got)

	// Byte-stable: the same arrays give the same file.
	p2 := filepath.Join(dir, "y.npz")
	require.NoError(t, WriteNPZ(p2, arrays))
	b1, _ := os.ReadFile(p)
	b2, _ := os.ReadFile(p2)
	require.Equal(t, b1, b2)
}

func TestCompare(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	d := Compare([]float64{1, 2, nan, inf, 0}, []float64{1.001, 2, nan, inf, 0}, Tol{Rel: 1e-2})
	require.Equal(t, 0, d.Bad)
	require.InDelta(t, 0.001, d.MaxAbs, 1e-12)
	d = Compare([]float64{1, nan, inf, 5}, []float64{1.1, 0, -inf, 5}, Tol{Rel: 1e-2})
	require.Equal(t, 3, d.Bad)
	require.Equal(t, 0, d.First)
	d = Compare([]float64{0}, []float64{1e-9}, Tol{Abs: 1e-8})
	require.Equal(t, 0, d.Bad)
}
