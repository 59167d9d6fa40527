package cases

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/golden"
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
	require.EqualError(t, err, `"next.reward" has dtype int64, want float32`)
}
