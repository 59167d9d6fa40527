package ptxgen

import (
	"math"

	"github.com/lossgen/lossgen/runtime/vmath"
)

// The PTX versions of lossgen's exp, log and log1p: the same range reductions and polynomials
// as the AVX2 kernels (runtime/vmath), one lane per thread, with fma.rn for the polynomial steps.
// They avoid ex2.approx/lg2.approx, whose relative error grows with |x·log2 e|.

// exp32 is e^x for a float32 register.
func (k *kernel) exp32(x string) string {
	p, _ := k.exp32q(x, "")
	return p
}

// exp32q is exp32, also returning n (x's integral multiple of ln2, a float32 register) and
// setting small (when not "") to e^r − 1 − r (expm1MinusXEl).
func (k *kernel) exp32q(x, small string) (p, n string) {
	xc, n, r, r2 := k.f32(), k.f32(), k.f32(), k.f32()
	k.op("max.NaN.f32 %s, %s, %s", xc, x, immF32(vmath.Exp32Lo))
	k.op("min.NaN.f32 %s, %s, %s", xc, xc, immF32(vmath.Exp32Hi))
	k.op("mul.rn.f32 %s, %s, %s", n, xc, immF32(float32(math.Log2E)))
	k.op("cvt.rni.f32.f32 %s, %s", n, n)
	k.op("neg.f32 %s, %s", r, n)
	k.op("fma.rn.f32 %s, %s, %s, %s", r, r, immF32(vmath.Exp32C1), xc) // x − n·C1, exact
	t := k.f32()
	k.op("neg.f32 %s, %s", t, n)
	k.op("fma.rn.f32 %s, %s, %s, %s", r, t, immF32(vmath.Exp32C2), r)
	k.op("mul.rn.f32 %s, %s, %s", r2, r, r)
	p = k.poly2("f32", len(vmath.Exp32P), r, r2, func(i int) string { return immF32(vmath.Exp32P[i]) })
	if small != "" {
		k.op("mul.rn.f32 %s, %s, %s", small, p, r2)
	}
	k.op("fma.rn.f32 %s, %s, %s, %s", p, p, r2, r)
	k.op("add.rn.f32 %s, %s, %s", p, p, immF32(1))
	k.scale32(p, n)
	return p, n
}

// poly2 is the polynomial with the n coefficients coef(i) (immediates, highest power first)
// at r, in vmath.Poly2's order (r2 = r·r), in a new register of type t (f32 or f64).
func (k *kernel) poly2(t string, n int, r, r2 string, coef func(i int) string) string {
	reg := func() string {
		if t == "f32" {
			return k.f32()
		}
		return k.fd()
	}
	return vmath.Poly2(n, r2, func(hi, lo int) string {
		p := reg()
		k.op("fma.rn.%s %s, %s, %s, %s", t, p, r, coef(hi), coef(lo)) // c_hi·r + c_lo
		return p
	}, func(i int) string {
		p := reg()
		k.op("mov.%s %s, %s", t, p, coef(i))
		return p
	}, func(x, y, z string) string {
		k.op("fma.rn.%s %s, %s, %s, %s", t, x, x, y, z) // x·y + z
		return x
	})
}

// scale32 multiplies p by 2^n (n an integral float32) in two halves (runtime/vmath's
// package doc).
func (k *kernel) scale32(p, n string) {
	for _, e := range k.expHalves("f32", n, 127) {
		f := k.f32()
		k.op("shl.b32 %s, %s, 23", e, e)
		k.op("mov.b32 %s, %s", f, e)
		k.op("mul.rn.f32 %s, %s, %s", p, p, f)
	}
}

// expHalves converts n (an integral float of type t) to the biased exponents h + bias and
// n − h + bias of exp's two scalings, h = ⌊n/2⌋ (runtime/vmath's package doc).
func (k *kernel) expHalves(t, n string, bias int) [2]string {
	a, h, g := k.r32(), k.r32(), k.r32()
	k.op("cvt.rni.s32.%s %s, %s", t, a, n)
	k.op("add.s32 %s, %s, %d", a, a, 2*bias)
	k.op("shr.u32 %s, %s, 1", h, a)
	k.op("sub.s32 %s, %s, %s", g, a, h)
	return [2]string{h, g}
}

// exp64 is e^x for a float64 register.
func (k *kernel) exp64(x string) string {
	p, _ := k.exp64q(x, "")
	return p
}

// exp64q is exp64 with exp32q's n and small.
func (k *kernel) exp64q(x, small string) (p, n string) {
	xc, n, r := k.fd(), k.fd(), k.fd()
	k.minmax64("max", xc, x, immF64(vmath.Exp64Lo))
	k.minmax64("min", xc, xc, immF64(vmath.Exp64Hi))
	k.op("mul.rn.f64 %s, %s, %s", n, xc, immF64(math.Log2E))
	k.op("cvt.rni.f64.f64 %s, %s", n, n)
	t := k.fd()
	k.op("neg.f64 %s, %s", t, n)
	k.op("fma.rn.f64 %s, %s, %s, %s", r, t, immF64(vmath.Exp64Ln2Hi), xc)
	k.op("fma.rn.f64 %s, %s, %s, %s", r, t, immF64(vmath.Exp64Ln2Lo), r)
	coef := vmath.Exp64P()
	r2 := k.fd()
	k.op("mul.rn.f64 %s, %s, %s", r2, r, r)
	p = k.poly2("f64", len(coef), r, r2, func(i int) string { return immF64(coef[i]) })
	if small != "" { // the terms from r²/2! up: r²·Σ r^k/(k+2)!
		q := k.poly2("f64", len(coef)-2, r, r2, func(i int) string { return immF64(coef[i]) })
		k.op("mul.rn.f64 %s, %s, %s", small, q, r2)
	}
	// 2^n in two halves (runtime/vmath's package doc), as scale32 with the bias 1023.
	for _, e := range k.expHalves("f64", n, 1023) {
		w, f := k.r64(), k.fd()
		k.op("cvt.s64.s32 %s, %s", w, e) // e ≥ 0
		k.op("shl.b64 %s, %s, 52", w, w)
		k.op("mov.b64 %s, %s", f, w)
		k.op("mul.rn.f64 %s, %s, %s", p, p, f)
	}
	return p, n
}

// log32 is the natural logarithm of a float32 register.
func (k *kernel) log32(x string) string {
	sub, xs, bits, e, m, big := k.pred(), k.f32(), k.r32(), k.r32(), k.r32(), k.pred()
	k.op("setp.lt.f32 %s, %s, %s", sub, x, immF32(0x1p-126))
	k.op("mul.rn.f32 %s, %s, %s", xs, x, immF32(0x1p23))
	k.op("selp.f32 %s, %s, %s, %s", xs, xs, x, sub)
	k.op("mov.b32 %s, %s", bits, xs)
	k.op("shr.u32 %s, %s, 23", e, bits)
	k.op("sub.s32 %s, %s, 127", e, e)
	adj := k.r32()
	k.op("selp.s32 %s, -23, 0, %s", adj, sub)
	k.op("add.s32 %s, %s, %s", e, e, adj)
	k.op("and.b32 %s, %s, 8388607", m, bits)
	k.op("or.b32 %s, %s, 1065353216", m, m) // m ∈ [1, 2)
	mf, half := k.f32(), k.f32()
	k.op("mov.b32 %s, %s", mf, m)
	k.op("setp.gt.f32 %s, %s, %s", big, mf, immF32(float32(vmath.Sqrt2)))
	k.op("mul.rn.f32 %s, %s, %s", half, mf, immF32(0.5))
	k.op("selp.f32 %s, %s, %s, %s", mf, half, mf, big)
	inc := k.r32()
	k.op("selp.s32 %s, 1, 0, %s", inc, big)
	k.op("add.s32 %s, %s, %s", e, e, inc)
	f, z, p, ef := k.f32(), k.f32(), k.f32(), k.f32()
	k.op("sub.rn.f32 %s, %s, %s", f, mf, immF32(1))
	k.op("mul.rn.f32 %s, %s, %s", z, f, f)
	k.op("mov.f32 %s, %s", p, immF32(vmath.Log32P[0]))
	for _, c := range vmath.Log32P[1:] {
		k.op("fma.rn.f32 %s, %s, %s, %s", p, p, f, immF32(c))
	}
	k.op("mul.rn.f32 %s, %s, %s", p, p, f)
	k.op("mul.rn.f32 %s, %s, %s", p, p, z)
	k.op("cvt.rn.f32.s32 %s, %s", ef, e)
	k.op("fma.rn.f32 %s, %s, %s, %s", p, ef, immF32(vmath.Log32C2), p)
	nz := k.f32()
	k.op("neg.f32 %s, %s", nz, z)
	k.op("fma.rn.f32 %s, %s, %s, %s", p, nz, immF32(0.5), p)
	k.op("add.rn.f32 %s, %s, %s", p, f, p)
	k.op("fma.rn.f32 %s, %s, %s, %s", p, ef, immF32(vmath.Log32C1), p)
	k.logSpecials(x, p, "f32", immF32f)
	return p
}

// logSpecials fixes log at 0 (−inf), below 0 (NaN), +inf (+inf) and NaN (NaN).
func (k *kernel) logSpecials(x, r, t string, imm func(float64) string) {
	q := k.pred()
	k.op("setp.eq.%s %s, %s, %s", t, q, x, imm(0))
	k.op("selp.%s %s, %s, %s, %s", t, r, imm(math.Inf(-1)), r, q)
	k.op("setp.lt.%s %s, %s, %s", t, q, x, imm(0))
	k.op("selp.%s %s, %s, %s, %s", t, r, imm(math.NaN()), r, q)
	k.op("setp.eq.%s %s, %s, %s", t, q, x, imm(math.Inf(1)))
	k.op("selp.%s %s, %s, %s, %s", t, r, imm(math.Inf(1)), r, q)
	k.op("setp.nan.%s %s, %s, %s", t, q, x, x)
	k.op("selp.%s %s, %s, %s, %s", t, r, x, r, q)
}

func immF32f(v float64) string { return immF32(float32(v)) }

// log64 is the natural logarithm of a float64 register (FreeBSD e_log.c).
func (k *kernel) log64(x string) string {
	sub, xs, bits, kk, m := k.pred(), k.fd(), k.r64(), k.r64(), k.r64()
	k.op("setp.lt.f64 %s, %s, %s", sub, x, immF64(0x1p-1022))
	k.op("mul.rn.f64 %s, %s, %s", xs, x, immF64(0x1p54))
	k.op("selp.f64 %s, %s, %s, %s", xs, xs, x, sub)
	k.op("mov.b64 %s, %s", bits, xs)
	k.op("shr.u64 %s, %s, 52", kk, bits)
	k.op("sub.s64 %s, %s, 1023", kk, kk)
	adj := k.r64()
	k.op("selp.s64 %s, -54, 0, %s", adj, sub)
	k.op("add.s64 %s, %s, %s", kk, kk, adj)
	k.op("and.b64 %s, %s, 4503599627370495", m, bits)
	k.op("or.b64 %s, %s, 4607182418800017408", m, m) // m ∈ [1, 2)
	mf, half, big := k.fd(), k.fd(), k.pred()
	k.op("mov.b64 %s, %s", mf, m)
	k.op("setp.gt.f64 %s, %s, %s", big, mf, immF64(vmath.Sqrt2))
	k.op("mul.rn.f64 %s, %s, %s", half, mf, immF64(0.5))
	k.op("selp.f64 %s, %s, %s, %s", mf, half, mf, big)
	inc := k.r64()
	k.op("selp.s64 %s, 1, 0, %s", inc, big)
	k.op("add.s64 %s, %s, %s", kk, kk, inc)
	f, s, z, w, t1, t2 := k.fd(), k.fd(), k.fd(), k.fd(), k.fd(), k.fd()
	k.op("sub.rn.f64 %s, %s, %s", f, mf, immF64(1))
	k.op("add.rn.f64 %s, %s, %s", s, f, immF64(2))
	k.op("div.rn.f64 %s, %s, %s", s, f, s)
	k.op("mul.rn.f64 %s, %s, %s", z, s, s)
	k.op("mul.rn.f64 %s, %s, %s", w, z, z)
	lg := vmath.Log64Lg
	k.op("mov.f64 %s, %s", t1, immF64(lg[5]))
	k.op("fma.rn.f64 %s, %s, %s, %s", t1, t1, w, immF64(lg[3]))
	k.op("fma.rn.f64 %s, %s, %s, %s", t1, t1, w, immF64(lg[1]))
	k.op("mul.rn.f64 %s, %s, %s", t1, t1, w)
	k.op("mov.f64 %s, %s", t2, immF64(lg[6]))
	k.op("fma.rn.f64 %s, %s, %s, %s", t2, t2, w, immF64(lg[4]))
	k.op("fma.rn.f64 %s, %s, %s, %s", t2, t2, w, immF64(lg[2]))
	k.op("fma.rn.f64 %s, %s, %s, %s", t2, t2, w, immF64(lg[0]))
	k.op("mul.rn.f64 %s, %s, %s", t2, t2, z)
	k.op("add.rn.f64 %s, %s, %s", t2, t2, t1) // R
	hfsq, dk, t, r := k.fd(), k.fd(), k.fd(), k.fd()
	k.op("mul.rn.f64 %s, %s, %s", hfsq, f, f)
	k.op("mul.rn.f64 %s, %s, %s", hfsq, hfsq, immF64(0.5))
	k.op("cvt.rn.f64.s64 %s, %s", dk, kk)
	// r = dk·ln2_hi − ((hfsq − (s·(hfsq + R) + dk·ln2_lo)) − f)
	k.op("add.rn.f64 %s, %s, %s", t, hfsq, t2)
	k.op("mul.rn.f64 %s, %s, %s", t, s, t)
	k.op("fma.rn.f64 %s, %s, %s, %s", t, dk, immF64(vmath.Log64Ln2[1]), t)
	k.op("sub.rn.f64 %s, %s, %s", t, hfsq, t)
	k.op("sub.rn.f64 %s, %s, %s", t, t, f)
	k.op("mul.rn.f64 %s, %s, %s", r, dk, immF64(vmath.Log64Ln2[0]))
	k.op("sub.rn.f64 %s, %s, %s", r, r, t)
	k.logSpecials(x, r, "f64", immF64)
	return r
}

// expEl and logEl are exp and log of the kernel's element type.
func (k *kernel) expEl(x string) string {
	if k.f64 {
		return k.exp64(x)
	}
	return k.exp32(x)
}

func (k *kernel) logEl(x string) string {
	if k.f64 {
		return k.log64(x)
	}
	return k.log32(x)
}

// expm1MinusXEl is e^x − 1 − x of the element type, as the AVX2 kernels compute it (asmgen's
// expm1MinusX): r²·q(r) from exp's polynomial where n = 0, (e^x − 1) − x elsewhere.
func (k *kernel) expm1MinusXEl(x string) string {
	t, small := k.t(), k.el()
	var e, n string
	if k.f64 {
		e, n = k.exp64q(x, small)
	} else {
		e, n = k.exp32q(x, small)
	}
	r, q := k.el(), k.pred()
	k.op("sub.rn.%s %s, %s, %s", t, r, e, k.imm(1))
	k.op("sub.rn.%s %s, %s, %s", t, r, r, x)
	k.op("setp.eq.%s %s, %s, %s", t, q, n, k.imm(0))
	k.op("selp.%s %s, %s, %s, %s", t, r, small, r, q)
	return r
}

// log1pEl is log(u) − ((u − 1) − x)/u with u = 1 + x, and the special cases.
func (k *kernel) log1pEl(x string) string {
	t := k.t()
	u := k.el()
	k.op("add.rn.%s %s, %s, %s", t, u, x, k.imm(1))
	lu := k.logEl(u)
	c, r := k.el(), k.el()
	k.op("sub.rn.%s %s, %s, %s", t, c, u, k.imm(1))
	k.op("sub.rn.%s %s, %s, %s", t, c, c, x)
	k.op("div.rn.%s %s, %s, %s", t, c, c, u)
	k.op("sub.rn.%s %s, %s, %s", t, r, lu, c)
	q := k.pred()
	k.op("setp.eq.%s %s, %s, %s", t, q, u, k.imm(1))
	k.op("selp.%s %s, %s, %s, %s", t, r, x, r, q)
	k.op("setp.eq.%s %s, %s, %s", t, q, u, k.imm(0))
	k.op("selp.%s %s, %s, %s, %s", t, r, k.imm(math.Inf(-1)), r, q)
	k.op("setp.eq.%s %s, %s, %s", t, q, x, k.imm(math.Inf(1)))
	k.op("selp.%s %s, %s, %s, %s", t, r, k.imm(math.Inf(1)), r, q)
	return r
}
