package gen_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"

	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/runtime/vmath"
)

// expm1MinusXInputs are the points of the accuracy sweep: ±10^−k down to the smallest
// subnormals, a dense grid over [−1, 1] (both sides of exp's n = 0 edge at ±ln2/2), a coarse
// one over exp's whole range and past it, and the specials.
func expm1MinusXInputs() []float64 {
	var xs []float64
	for k := 1; k <= 44; k++ {
		v := math.Pow(10, -float64(k))
		xs = append(xs, v, -v)
	}
	for i := -2000; i <= 2000; i++ {
		xs = append(xs, float64(i)/2000)
	}
	for i := -230; i <= 200; i++ {
		xs = append(xs, float64(i)/2+0.123)
	}
	h := math.Ln2 / 2
	for i := range 1000 { // just past the edge, where the subtraction cancels most
		d := h * (1 + float64(i)/4000)
		xs = append(xs, d, -d)
	}
	return append(xs, h, -h, math.Nextafter(h, 1), math.Nextafter(-h, -1), 0, math.Copysign(0, -1),
		88.7, 89, 709.7, 709.782712893384, -745, math.Inf(1), math.Inf(-1), math.NaN(), 0x1p-149, 0x1p-1074)
}

// TestExpM1MinusXEveryBackend holds e^x − 1 − x (the k3 KL estimator's op) on the pure-Go,
// AVX2 and PTX kernels to the float64 reference (vmath.ExpM1MinusX, itself checked against
// math.Expm1 where that does not cancel and against x²/2 at tiny x), in units in the last
// place of the element type. AVX2 and PTX evaluate exp's polynomial, whose error the
// subtraction (e^x − 1) − x magnifies up to 7-fold at |x| just above ln2/2 (where the
// series branch ends), and agree to the bit.
func TestExpM1MinusXEveryBackend(t *testing.T) {
	xs := expm1MinusXInputs()
	for _, x := range []float64{1e-9, -1e-9, 1e-5} {
		require.InEpsilon(t, x*x/2*(1+x/3+x*x/12), vmath.ExpM1MinusX(x), 1e-15)
	}
	// Where math.Expm1 overflows early: e^x is still finite (vmath.Exp).
	require.Equal(t, vmath.Exp(709.782712893384), vmath.ExpM1MinusX(709.782712893384))
	require.False(t, math.IsInf(vmath.ExpM1MinusX(709.782712893384), 0))
	for _, x := range []float64{0.75, -3, 20} {
		require.InEpsilon(t, math.Expm1(x)-x, vmath.ExpM1MinusX(x), 1e-15)
	}
	require.InEpsilon(t, 1.2710963760240396975e-3, vmath.ExpM1MinusX(0.05), 1e-15) // e^0.05 − 1.05 to 20 digits (Python decimal)
	if testing.Short() {
		return
	}
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		t.Run(dt.String(), func(t *testing.T) {
			t.Parallel()
			b := ir.NewBuilder(dt, []ir.Dim{{Name: "N", Size: len(xs)}}, []string{"N"})
			x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("N")})
			b.Output("k3", b.ExpM1MinusX(x), ir.Metric, "", "")
			g := b.Graph()
			in := map[string]golden.Array{"x": cases.Stored(dt, g.Inputs[0], xs)}
			outs := everyBackend(t, compiledGraph(t, g, "k3"))(in)
			stored := in["x"].Float64s()
			maxULP := map[string]float64{"go": 0.5, "default": 24, "ptx": 24} // measured: 13 (float32), 19 (float64)
			for backend, out := range outs {
				got := out["k3"].Float64s()
				worst, at := 0.0, 0
				for i, xi := range stored {
					want := vmath.ExpM1MinusX(xi)
					var u float64
					if dt == ir.F32 {
						u = vmath.ULP32(float32(got[i]), float32(want))
					} else {
						u = vmath.ULP64(got[i], want)
					}
					if u > worst {
						worst, at = u, i
					}
				}
				t.Logf("%s %s: at most %.0f ulp (x = %v)", dt, backend, worst, stored[at])
				require.LessOrEqual(t, worst, maxULP[backend], "%s at x = %v: got %v, want %v", backend, stored[at], got[at], vmath.ExpM1MinusX(stored[at]))
			}
			if cpu.X86.HasAVX2 && cpu.X86.HasFMA { // the same operations in the same order
				p, d := outs["ptx"]["k3"].Float64s(), outs["default"]["k3"].Float64s()
				for i := range p {
					if math.Float64bits(p[i]) != math.Float64bits(d[i]) && !(math.IsNaN(p[i]) && math.IsNaN(d[i])) {
						t.Errorf("x = %v: AVX2 %v, PTX %v", stored[i], d[i], p[i])
					}
				}
			}
		})
	}
}
