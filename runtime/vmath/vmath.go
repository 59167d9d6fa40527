// Package vmath holds the constants of lossgen's vector exp, log and log1p, shared by the
// backends that emit them (gen/asmgen for AVX2, gen/ptxgen for PTX), so both evaluate the
// same polynomials in the same order and agree to the last bit where their arithmetic does.
// It also holds the float64 Exp, Log and Log1p that the interpreter and the pure-Go float64
// kernels call (math's, corrected where its amd64 assembly is wrong), and ExpM1MinusX,
// e^x − 1 − x without cancellation, the reference of the IR op expm1_minus_x (ref.go).
//
// exp: x = n·ln2 + r, |r| ≤ ln2/2, r formed by subtracting n·ln2 in two parts (Cody–Waite);
// e^r by a polynomial p in [0.7, 1.42], in Poly2's order of operations; then p·2^n as
// (p·2^h)·2^(n−h) with h = ⌊n/2⌋, each factor built in the exponent field (bias b = 127 or
// 1023: a = n + 2b, then h + b = a >> 1 and n − h + b = a − (a >> 1), shifted into place).
// The clamps keep n in [−150, 128] (float32) or [−1076, 1024] (float64), so both factors
// are normal, p·2^h is exact and the second product the only rounding: subnormal results
// round once, and n past the largest exponent overflows to +inf. A NaN's n converts to some
// integer, and p is NaN already.
//
// log: x = m·2^k with m ∈ [√½, √2) (subnormal x scaled first); log(m) by a polynomial in
// f = m − 1 (float32: Cephes logf) or a rational form in s = f/(2+f) (float64: FreeBSD e_log.c).
//
// log1p: u = 1 + x, log1p(x) = log(u) − ((u − 1) − x)/u.
package vmath

import "math"

// Float32 exp (Cephes expf).
var (
	Exp32Lo, Exp32Hi = float32(-104), float32(89) // clamp: below rounds to 0, above overflows
	Exp32C1          = float32(0.693359375)       // ln2, high part (9 bits: n·C1 is exact)
	Exp32C2          = float32(-2.12194440e-4)    // ln2 − C1
	// Exp32P is (e^r − 1 − r)/r² from the highest power down, then 0.5.
	Exp32P = []float32{1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}
)

// Poly2 is the order of operations in which every backend evaluates a polynomial of n
// coefficients c[0..n−1] (highest power first, as Exp32P) at r, given r² (r2): pairs
// pair(i, i+1) = c[i]·r + c[i+1] (the highest coefficient alone, single(0), when n is odd),
// combined from the highest down by Horner's rule in r², acc = fma(acc, r2, next) =
// acc·r² + next. The pairs are independent, so the longest chain of dependent operations is
// ⌈n/2⌉ fused multiply-adds instead of n − 1, for the same accuracy (the exp tests hold their
// bounds); every backend calling it evaluates the same operations in the same order.
func Poly2[V any](n int, r2 V, pair func(hi, lo int) V, single func(i int) V, fma func(x, y, z V) V) V {
	var acc V
	i := 0
	if n%2 == 1 {
		acc, i = single(0), 1
	} else {
		acc, i = pair(0, 1), 2
	}
	for ; i < n; i += 2 {
		acc = fma(acc, r2, pair(i, i+1))
	}
	return acc
}

// Float64 exp (Taylor to degree 13: the remainder is below 0.04 ulp on |r| ≤ ln2/2).
var (
	Exp64Lo, Exp64Hi = -746.0, 710.0
	Exp64Ln2Hi       = 6.93147180369123816490e-01
	Exp64Ln2Lo       = 1.90821492927058770002e-10
)

// Exp64P returns 1/k! for k = 13 down to 0: exp64's series, highest power first.
func Exp64P() []float64 {
	out := make([]float64, 14)
	f := 1.0
	for k := 1; k <= 13; k++ {
		f *= float64(k)
	}
	for k := 13; k >= 0; k-- {
		out[13-k] = 1 / f
		if k > 0 {
			f /= float64(k)
		}
	}
	return out
}

// Float32 log (Cephes logf): y = P(f)·f·f² + e·C2 − f²/2 + f + e·C1.
var (
	Log32P  = []float32{7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1}
	Log32C1 = float32(0.693359375)
	Log32C2 = float32(-2.12194440e-4)
)

// Float64 log (FreeBSD e_log.c): Lg1..Lg7 and ln2 split.
var (
	Log64Lg  = []float64{6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01, 2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01}
	Log64Ln2 = [2]float64{6.93147180369123816490e-01, 1.90821492927058770002e-10}
)

// Sqrt2 is the reduction threshold of log: m > √2 is halved.
const Sqrt2 = math.Sqrt2
