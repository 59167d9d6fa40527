package asmgen

import (
	"math"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime/vmath"
)

// Vector exp, log and log1p. Each is emitted inline where the IR uses it (one definition
// here serves every kernel; inlining keeps a kernel's live values in registers, where a CALL
// would have to spill them). Accuracy over the whole input range is measured by the tests
// of every generated package (maxULP below is what they assert).
//
// exp: x = n·ln2 + r, |r| ≤ ln2/2, with n·ln2 subtracted in two parts (Cody–Waite) so r is
// exact; e^r by a polynomial (float32: Cephes expf's degree-5 minimax for (e^r − 1 − r)/r²;
// float64: Taylor to degree 13, whose remainder is below 0.04 ulp); 2^n applied as two
// exponent-field scalings so results that are subnormal round once and results that overflow
// become +inf. NaN in gives NaN out.
//
// log: x = m·2^k with m ∈ [√½, √2) (subnormals scaled by 2^23 / 2^54 first); float32:
// Cephes logf's degree-8 polynomial in f = m − 1; float64: FreeBSD e_log.c's rational form
// in s = f/(2+f). log(0) = −inf, log(x<0) = NaN, log(+inf) = +inf.
//
// log1p: u = 1 + x rounded, log1p(x) = log(u) − ((u − 1) − x)/u, the second term the
// rounding error of u; x itself where u = 1; −inf at x = −1; +inf at +inf.

// MaxULP is the error bound, in units in the last place against math.Exp/Log/Log1p rounded
// to the element type, that the generated tests assert for each function.
var MaxULP = map[string]float64{"exp": 2, "log": 2, "log1p": 2}

func (a *asm) expf(x reg.VecVirtual) reg.VecVirtual {
	return a.expWithin(x, ir.Interval{Lo: math.Inf(-1), Hi: math.Inf(1)})
}

// expWithin is e^x for x within iv (NaN aside; passes.ValueRange): the clamp to the range
// where the polynomial and the scaling hold is kept only on a side iv leaves open (a
// softmax's e^(z − max z) needs none above). Each clamp keeps a NaN (x is VMAXPS's and
// VMINPS's second source, the one returned on NaN), which then passes through the
// polynomial and the scaling unchanged in value.
func (a *asm) expWithin(x reg.VecVirtual, iv ir.Interval) reg.VecVirtual {
	xc := a.expClamp(x, iv)
	if a.f64 {
		p, _ := a.exp64(xc, nil)
		return p
	}
	p, _ := a.exp32(xc, nil)
	return p
}

// expClamp is x clamped to exp's range on the sides iv leaves open (expWithin).
func (a *asm) expClamp(x reg.VecVirtual, iv ir.Interval) reg.VecVirtual {
	lo, hi := float64(vmath.Exp32Lo), float64(vmath.Exp32Hi)
	if a.f64 {
		lo, hi = vmath.Exp64Lo, vmath.Exp64Hi
	}
	xc := x
	clamp := func(op ir.Op, bound float64) {
		b, t := a.ymm(), a.ymm()
		a.mov(a.cf(bound), b)
		a.minmax(op, xc, b, t)
		xc = t
	}
	if iv.Lo < lo {
		clamp(ir.OpMax, lo)
	}
	if iv.Hi > hi {
		clamp(ir.OpMin, hi)
	}
	return xc
}

// expm1MinusX is e^x − 1 − x (ir.OpExpM1MinusX) for x within iv: exp's range reduction
// x = n·ln2 + r and polynomial, then, where n = 0 (|x| ≤ ln2/2: there r is x exactly),
// r²·q(r) with q = (e^r − 1 − r)/r², the part of exp's polynomial before its last two
// steps (float32: Cephes' q itself; float64: the Taylor coefficients from 1/2! up, whose
// remainder is below half an ulp), and (e^x − 1) − x elsewhere, where the subtraction
// cancels at most a factor 7 (at x = −ln2/2). NaN at NaN and +inf (∞ − ∞), +inf at −inf.
func (a *asm) expm1MinusX(x reg.VecVirtual, iv ir.Interval) reg.VecVirtual {
	xc := a.expClamp(x, iv)
	small := a.ymm()
	var e, n reg.VecVirtual
	if a.f64 {
		e, n = a.exp64(xc, small)
	} else {
		e, n = a.exp32(xc, small)
	}
	one := a.cf(1)
	a.sub(one, e, e) // e^x − 1
	a.sub(x, e, e)   // − x
	m := a.ymm()
	a.cmp(cmpEQ_OQ, a.cf(0), n, m)
	a.blend(m, small, e, e)
	return e
}

func (a *asm) logf(x reg.VecVirtual) reg.VecVirtual {
	if a.f64 {
		return a.log64(x)
	}
	return a.log32(x)
}

// log1pf is log(u) − ((u − 1) − x)/u with u = 1 + x, and the special cases.
func (a *asm) log1pf(x reg.VecVirtual) reg.VecVirtual {
	one := a.cf(1)
	u := a.ymm()
	a.add(one, x, u)
	lu := a.logf(u)
	c := a.ymm()
	a.sub(one, u, c) // u − 1
	a.sub(x, c, c)   // (u − 1) − x
	a.div(u, c, c)   // ((u − 1) − x)/u
	r := a.ymm()
	a.sub(c, lu, r)
	// u == 1: the result is x (tiny x, ±0).
	m := a.ymm()
	a.cmp(cmpEQ_OQ, one, u, m)
	a.blend(m, x, r, r)
	// u == 0 (x = −1): −inf.
	a.cmp(cmpEQ_OQ, a.cf(0), u, m)
	a.blend(m, a.cf(math.Inf(-1)), r, r)
	// x == +inf: +inf.
	a.cmp(cmpEQ_OQ, a.cf(math.Inf(1)), x, m)
	a.blend(m, a.cf(math.Inf(1)), r, r)
	return r
}

// exp32 is e^x for 8 (16) float32 lanes, x clamped to [Exp32Lo, Exp32Hi] or NaN (expWithin): below −104 the
// result rounds to 0, above 89 it overflows to +inf through the scaling. It also returns
// n, x's integral multiple of ln2 (a float vector), and sets small (when not nil) to
// e^r − 1 − r (expm1MinusX).
func (a *asm) exp32(xc, small reg.VecVirtual) (p, n reg.VecVirtual) {
	c := a.c
	n = a.ymm()
	c.VMULPS(a.cf32(float32(math.Log2E)), xc, n)
	a.roundEven(n)
	r := a.ymm()
	c.VMOVAPS(xc, r)
	c.VFNMADD231PS(a.cf32(vmath.Exp32C1), n, r) // r −= n·C1 (exact: C1 has 9 bits)
	c.VFNMADD231PS(a.cf32(vmath.Exp32C2), n, r) // r −= n·C2
	r2 := a.ymm()
	c.VMULPS(r, r, r2)
	p = a.poly2(len(vmath.Exp32P), r, r2, func(i int) operand.Op { return a.cf32(vmath.Exp32P[i]) })
	if small != nil {
		c.VMULPS(r2, p, small) // r²·q(r): e^r − 1 − r (expm1MinusX)
	}
	c.VFMADD213PS(r, r2, p) // p = p·r² + r
	c.VADDPS(a.cf32(1), p, p)
	ni := a.ymm()
	c.VCVTPS2DQ(n, ni)
	n1, n2 := a.expHalves(ni, 127, a.ymm)
	c.VPSLLD(operand.Imm(23), n1, n1)
	c.VPSLLD(operand.Imm(23), n2, n2)
	c.VMULPS(n1, p, p)
	c.VMULPS(n2, p, p) // NaN in, NaN out: n's NaN converts to an integer, p stays NaN
	return p, n
}

// expHalves turns the integer exponents n in ni's dword lanes (clobbered) into the biased
// exponents h + bias and n − h + bias of exp's two scalings, h = ⌊n/2⌋ (runtime/vmath's
// package doc: with a = n + 2·bias, they are a >> 1 and a − (a >> 1)), in new registers of
// ni's width.
func (a *asm) expHalves(ni reg.VecVirtual, bias int, newReg func() reg.VecVirtual) (h, g reg.VecVirtual) {
	c := a.c
	c.VPADDD(a.cd(int32(2*bias)), ni, ni)
	h, g = newReg(), newReg()
	c.VPSRLD(operand.Imm(1), ni, h)
	c.VPSUBD(h, ni, g)
	return h, g
}

// poly2 is the polynomial with the n coefficients coef(i) (highest power first) at r, in
// vmath.Poly2's order, r2 = r·r.
func (a *asm) poly2(n int, r, r2 reg.VecVirtual, coef func(i int) operand.Op) reg.VecVirtual {
	return vmath.Poly2(n, r2, func(hi, lo int) reg.VecVirtual {
		t := a.ymm()
		a.mov(coef(hi), t)
		a.fmadd213(coef(lo), r, t) // t = c_hi·r + c_lo
		return t
	}, func(i int) reg.VecVirtual {
		t := a.ymm()
		a.mov(coef(i), t)
		return t
	}, func(x, y, z reg.VecVirtual) reg.VecVirtual {
		a.fmadd213(z, y, x) // x = x·y + z
		return x
	})
}

// exp64 is e^x for 4 float64 lanes, x clamped to [Exp64Lo, Exp64Hi] or NaN, with n and
// small as exp32's.
func (a *asm) exp64(xc, small reg.VecVirtual) (p, n reg.VecVirtual) {
	c := a.c
	n = a.ymm()
	c.VMULPD(a.cf64(math.Log2E), xc, n)
	c.VROUNDPD(operand.Imm(0), n, n)
	r := a.ymm()
	c.VMOVAPD(xc, r)
	c.VFNMADD231PD(a.cf64(vmath.Exp64Ln2Hi), n, r) // ln2 high part: n·hi exact
	c.VFNMADD231PD(a.cf64(vmath.Exp64Ln2Lo), n, r) // ln2 low part
	// Taylor series of e^r to degree 13.
	coef := vmath.Exp64P()
	r2 := a.ymm()
	c.VMULPD(r, r, r2)
	p = a.poly2(len(coef), r, r2, func(i int) operand.Op { return a.cf64(coef[i]) })
	if small != nil { // the terms from r²/2! up: r²·Σ r^k/(k+2)!
		q := a.poly2(len(coef)-2, r, r2, func(i int) operand.Op { return a.cf64(coef[i]) })
		c.VMULPD(r2, q, small)
	}
	ni := a.c.XMM()
	c.VCVTPD2DQY(n, ni)
	n1, n2 := a.expHalves(ni, 1023, a.c.XMM)
	w1, w2 := a.ymm(), a.ymm()
	c.VPMOVZXDQ(n1, w1)
	c.VPMOVZXDQ(n2, w2)
	c.VPSLLQ(operand.Imm(52), w1, w1)
	c.VPSLLQ(operand.Imm(52), w2, w2)
	c.VMULPD(w1, p, p)
	c.VMULPD(w2, p, p) // NaN in, NaN out, as in exp32
	return p, n
}

// log32 is the natural logarithm for 8 (16) float32 lanes.
func (a *asm) log32(x reg.VecVirtual) reg.VecVirtual {
	c := a.c
	// Subnormals: scale by 2^23 and remember −23 in the exponent.
	sub := a.ymm()
	a.cmp(cmpLT_OQ, a.cf32(0x1p-126), x, sub)
	xs := a.ymm()
	c.VMULPS(a.cf32(0x1p23), x, xs)
	a.blend(sub, xs, x, xs)
	e := a.ymm()
	c.VPSRLD(operand.Imm(23), xs, e)
	c.VPSUBD(a.cd(127), e, e)
	adj := a.ymm()
	a.pand(a.cd(-23), sub, adj)
	c.VPADDD(adj, e, e)
	m := a.ymm()
	a.pand(a.cd(0x007fffff), xs, m)
	a.por(a.cd(0x3f800000), m, m) // m ∈ [1, 2)
	big := a.ymm()
	a.cmp(cmpGT_OQ, a.cf32(float32(vmath.Sqrt2)), m, big)
	half := a.ymm()
	c.VMULPS(a.cf32(0.5), m, half)
	a.blend(big, half, m, m)
	c.VPSUBD(big, e, e) // big is −1 where m was halved: e += 1
	f := a.ymm()
	c.VSUBPS(a.cf32(1), m, f)
	z := a.ymm()
	c.VMULPS(f, f, z)
	p := a.ymm()
	c.VMOVAPS(a.cf32(vmath.Log32P[0]), p)
	for _, k := range vmath.Log32P[1:] {
		c.VFMADD213PS(a.cf32(k), f, p)
	}
	c.VMULPS(f, p, p)
	c.VMULPS(z, p, p) // y = P(f)·f·z
	ef := a.ymm()
	c.VCVTDQ2PS(e, ef)
	c.VFMADD231PS(a.cf32(vmath.Log32C2), ef, p) // y += e·C2
	c.VFNMADD231PS(a.cf32(0.5), z, p)           // y −= z/2
	c.VADDPS(f, p, p)                           // f + y
	c.VFMADD231PS(a.cf32(vmath.Log32C1), ef, p) // + e·C1
	a.logSpecials(x, p)
	return p
}

// logSpecials fixes log's results at 0 (−inf), below 0 (NaN) and +inf (+inf); NaN stays NaN.
func (a *asm) logSpecials(x, r reg.VecVirtual) {
	m := a.ymm()
	a.cmp(cmpEQ_OQ, a.cf(0), x, m)
	a.blend(m, a.cf(math.Inf(-1)), r, r)
	a.cmp(cmpLT_OQ, a.cf(0), x, m)
	a.blend(m, a.cf(math.NaN()), r, r)
	a.cmp(cmpEQ_OQ, a.cf(math.Inf(1)), x, m)
	a.blend(m, a.cf(math.Inf(1)), r, r)
	a.cmp(cmpUNORD, x, x, m)
	a.blend(m, x, r, r)
}

// log64 is the natural logarithm for 4 float64 lanes (FreeBSD e_log.c).
func (a *asm) log64(x reg.VecVirtual) reg.VecVirtual {
	c := a.c
	sub := a.ymm()
	c.VCMPPD(operand.Imm(cmpLT_OQ), a.cf64(0x1p-1022), x, sub)
	xs := a.ymm()
	c.VMULPD(a.cf64(0x1p54), x, xs)
	c.VBLENDVPD(sub, xs, x, xs)
	k := a.ymm()
	c.VPSRLQ(operand.Imm(52), xs, k)
	c.VPSUBQ(a.cq(1023), k, k)
	adj := a.ymm()
	c.VPAND(a.cq(-54), sub, adj)
	c.VPADDQ(adj, k, k)
	m := a.ymm()
	c.VPAND(a.cq(0x000fffffffffffff), xs, m)
	c.VPOR(a.cq(0x3ff0000000000000), m, m)
	big := a.ymm()
	c.VCMPPD(operand.Imm(cmpGT_OQ), a.cf64(vmath.Sqrt2), m, big)
	half := a.ymm()
	c.VMULPD(a.cf64(0.5), m, half)
	c.VBLENDVPD(big, half, m, m)
	c.VPSUBQ(big, k, k)
	f := a.ymm()
	c.VSUBPD(a.cf64(1), m, f)
	s := a.ymm()
	c.VADDPD(a.cf64(2), f, s)
	c.VDIVPD(s, f, s) // s = f/(2+f)
	z := a.ymm()
	c.VMULPD(s, s, z)
	w := a.ymm()
	c.VMULPD(z, z, w)
	t1 := a.ymm()
	lg := vmath.Log64Lg
	c.VMOVAPD(a.cf64(lg[5]), t1) // Lg6
	c.VFMADD213PD(a.cf64(lg[3]), w, t1)
	c.VFMADD213PD(a.cf64(lg[1]), w, t1)
	c.VMULPD(w, t1, t1)
	t2 := a.ymm()
	c.VMOVAPD(a.cf64(lg[6]), t2) // Lg7
	c.VFMADD213PD(a.cf64(lg[4]), w, t2)
	c.VFMADD213PD(a.cf64(lg[2]), w, t2)
	c.VFMADD213PD(a.cf64(lg[0]), w, t2)
	c.VMULPD(z, t2, t2)
	c.VADDPD(t1, t2, t2) // R
	hfsq := a.ymm()
	c.VMULPD(f, f, hfsq)
	c.VMULPD(a.cf64(0.5), hfsq, hfsq)
	// k as float64: add k to the bits of 1.5·2^52 and subtract 1.5·2^52 (|k| < 2^51).
	dk := a.ymm()
	c.VPADDQ(a.cq(0x4338000000000000), k, dk)
	c.VSUBPD(a.cf64(0x1.8p52), dk, dk)
	// r = dk·ln2_hi − ((hfsq − (s·(hfsq + R) + dk·ln2_lo)) − f)
	t := a.ymm()
	c.VADDPD(hfsq, t2, t)
	c.VMULPD(s, t, t)
	c.VFMADD231PD(a.cf64(vmath.Log64Ln2[1]), dk, t)
	c.VSUBPD(t, hfsq, t)
	c.VSUBPD(f, t, t)
	r := a.ymm()
	c.VMULPD(a.cf64(vmath.Log64Ln2[0]), dk, r)
	c.VSUBPD(t, r, r)
	a.logSpecials(x, r)
	return r
}
