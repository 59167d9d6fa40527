package vmath

import "math"

// The float64 exp, log and log1p that every Go-side computation of lossgen uses (the
// reference interpreter, constant folding, the pure-Go kernels of float64 specs) and that
// the accuracy tests of every backend's exp, log and log1p compare against (the AVX2 test in
// each generated package, the PTX test in gen/ptxgen), with the sweeps those tests share.

// Exp is e^x: math.Exp, except just below the overflow threshold, in (709.436, ln
// MaxFloat64 ≈ 709.783], where the amd64 assembly of math.Exp returns +Inf for a finite e^x:
// there e^x = e^(x/2)·e^(x/2) (within an ulp or two; a float32 rounding of the result is
// unaffected). Above 710 every e^x overflows.
func Exp(x float64) float64 {
	y := math.Exp(x)
	if math.IsInf(y, 1) && x < 710 {
		h := math.Exp(x / 2)
		return h * h
	}
	return y
}

// Log is the natural logarithm: math.Log, except for subnormal x, which the amd64 assembly of
// math.Log mishandles (it gives −709.09 for the smallest, whose log is −744.44): there
// log(x) = log(x·2^54) − 54·ln 2, the scaling exact.
func Log(x float64) float64 {
	if x > 0 && x < 0x1p-1022 {
		return math.Log(x*0x1p54) - 54*math.Ln2
	}
	return math.Log(x)
}

// Log1p is log(1 + x), math.Log1p (right for every float64 on amd64 too).
func Log1p(x float64) float64 { return math.Log1p(x) }

// ULP32 is the distance from got to want in float32 units in the last place: 0 when both
// are NaN or equal, +Inf when exactly one is NaN.
func ULP32(got, want float32) float64 {
	return ulp(float64(got), float64(want), ord32(got)-ord32(want))
}

// ULP64 is ULP32 for float64.
func ULP64(got, want float64) float64 { return ulp(got, want, ord64(got)-ord64(want)) }

func ulp(got, want float64, d int64) float64 {
	switch {
	case math.IsNaN(got) && math.IsNaN(want):
		return 0
	case math.IsNaN(got) || math.IsNaN(want):
		return math.Inf(1)
	case got == want:
		return 0
	}
	return math.Abs(float64(d))
}

// ord32 maps a float's bits to integers in the order of the floats (−0 and +0 both 0).
func ord32(x float32) int64 {
	b := int64(math.Float32bits(x))
	if b&(1<<31) != 0 {
		return -(b & 0x7fffffff)
	}
	return b
}

func ord64(x float64) int64 {
	b := int64(math.Float64bits(x))
	if b < 0 {
		return -(b & 0x7fffffffffffffff)
	}
	return b
}

// Sweep32 is every step-th float32 bit pattern followed by the special values: ±0, ±inf,
// NaN, the smallest and largest subnormals and normals, the overflow and underflow edges of
// exp, and −1 and its neighbour for log1p.
func Sweep32(step uint64) []float32 {
	var xs []float32
	for b := uint64(0); b < 1<<32; b += step {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	return append(xs, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(1), math.Float32frombits(0x007fffff), math.Float32frombits(0x00800000), math.MaxFloat32,
		88.72283, 88.72284, -87.33655, -103.27893, -103.972076, -104, -1, math.Nextafter32(-1, 0))
}

// Sweep64 is n pseudo-random float64 inputs (a third uniform over bit patterns, a third
// uniform on [−800, 800], a third on [−1, 3]) followed by the special values as in Sweep32.
func Sweep64(n int) []float64 {
	var xs []float64
	r := uint64(0x9E3779B97F4A7C15)
	for i := 0; i < n; i++ {
		r ^= r << 13
		r ^= r >> 7
		r ^= r << 17
		switch i % 3 {
		case 0:
			xs = append(xs, math.Float64frombits(r))
		case 1:
			xs = append(xs, (float64(r>>11)/(1<<53)*2-1)*800)
		default:
			xs = append(xs, float64(r>>11)/(1<<53)*4-1)
		}
	}
	return append(xs, 0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		math.Float64frombits(1), math.Float64frombits(0x000fffffffffffff), 0x1p-1022, math.MaxFloat64,
		709.78, 709.79, -708.39, -744.44, -745.14, -746, -1, math.Nextafter(-1, 0))
}

// ExpM1MinusX is e^x − 1 − x (the k3 KL estimator's core; lossgen's IR op expm1_minus_x):
// for |x| < 1/2 the series x²·Σ_{k=0}^{15} x^k/(k+2)! (the first term left out is below
// 1e-19 of the value), Horner's rule in float64; elsewhere math.Expm1(x) − x, which cancels
// at most a factor 4.4 there (Exp(x) − 1 − x above 709, where math.Expm1 overflows early).
// NaN at +inf (∞ − ∞, as torch's expm1(x) − x), +inf at −inf.
func ExpM1MinusX(x float64) float64 {
	if math.Abs(x) < 0.5 {
		s := 0.0
		for k := 15; k >= 0; k-- {
			s = s*x + invFact[k+2]
		}
		return x * x * s
	}
	if x > 709 { // math.Expm1 is +Inf from ln MaxFloat64 rounded, a finite e^x there; −1 − x is lost
		return Exp(x) - 1 - x
	}
	return math.Expm1(x) - x
}

// invFact[k] is 1/k! rounded, for k ≤ 17.
var invFact = func() [18]float64 {
	var f [18]float64
	p := 1.0
	for k := range f {
		if k > 0 {
			p *= float64(k)
		}
		f[k] = 1 / p
	}
	return f
}()

// RefExp, RefLog and RefLog1p are Exp, Log and Log1p under the names that the accuracy tests
// of packages generated before those became the runtime's own functions call.
//
// Deprecated: use Exp, Log and Log1p.
func RefExp(x float64) float64 { return Exp(x) }

// RefLog is Log (see RefExp).
//
// Deprecated: use Log.
func RefLog(x float64) float64 { return Log(x) }

// RefLog1p is Log1p (see RefExp).
//
// Deprecated: use Log1p.
func RefLog1p(x float64) float64 { return Log1p(x) }
