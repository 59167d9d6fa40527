package asmgen

import (
	"math"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
)

// Reductions accumulate per lane in float64, whatever the kernel's dtype: each lane holds the
// state of its own subset of the elements (sum; running max or min; (max, rescaled sum) for
// logsumexp; Welford's (n, mean, M2); (best, index) for argmax) in memory arrays that the Go
// wrapper initialises before the loop and merges pairwise after it. A float32 kernel widens
// its 8 lanes into two float64 vectors. Tail lanes leave their states untouched.

// halves widens a float32 vector into two float64 vectors (lanes 0–3, 4–7); a float64
// kernel's vector is its own single half.
func (pg *passGen) halves(x reg.VecVirtual) []reg.VecVirtual {
	if pg.f64 {
		return []reg.VecVirtual{x}
	}
	lo, hi := pg.ymm(), pg.ymm()
	pg.c.VCVTPS2PD(x.AsX(), lo)
	t := pg.c.XMM()
	pg.c.VEXTRACTF128(operand.Imm(1), x, t)
	pg.c.VCVTPS2PD(t, hi)
	return []reg.VecVirtual{lo, hi}
}

// maskHalves widens a dword mask to qword masks the same way.
func (pg *passGen) maskHalves(m reg.VecVirtual) []reg.VecVirtual {
	if pg.f64 {
		return []reg.VecVirtual{m}
	}
	lo, hi := pg.ymm(), pg.ymm()
	pg.c.VPMOVSXDQ(m.AsX(), lo)
	t := pg.c.XMM()
	pg.c.VEXTRACTI128(operand.Imm(1), m, t)
	pg.c.VPMOVSXDQ(t, hi)
	return []reg.VecVirtual{lo, hi}
}

// stateOff is the float64 element offset of the current block's first lane state.
func (pg *passGen) stateOff(r *ir.Node) reg.GPVirtual {
	off := pg.off(r.Shape)
	lay := pg.layout(r)
	if lay.lps == 1 {
		return off
	}
	t := pg.gp()
	pg.c.IMUL3Q(operand.I32(int32(lay.lps)), off, t)
	return t
}

// accumulate folds x, the reduction's argument at the current block, into r's lane states.
func (pg *passGen) accumulate(r *ir.Node, x reg.VecVirtual) {
	a := pg.a64
	off := pg.stateOff(r)
	fields := redFields[r.Op]
	ptrs := map[string]reg.GPVirtual{}
	for _, f := range fields {
		ptrs[f] = pg.statePtr(r, f)
	}
	at := func(f string, h int) operand.Mem { return elemMem(ptrs[f], off, 8, 4*h) }
	var masks []reg.VecVirtual
	if pg.rem > 0 {
		masks = pg.maskHalves(pg.tailMask())
	}
	// commit stores a new state half, keeping the old one in tail lanes.
	commit := func(f string, h int, v reg.VecVirtual) {
		if masks != nil {
			old := pg.ymm()
			a.mov(at(f, h), old)
			a.blend(masks[h], v, old, v)
		}
		a.mov(v, at(f, h))
	}
	var e, gt []reg.VecVirtual // logsumexp: exp(−|x − m|) and x > m, per half
	if r.Op == ir.OpLogSumExp {
		e, gt = pg.lseTerms(x, at)
	}
	var idx []reg.VecVirtual
	if r.Op == ir.OpArgMax {
		idx = pg.indexHalves(r.Axes[0])
	}
	for h, xh := range pg.halves(x) {
		switch r.Op {
		case ir.OpSum, ir.OpMean:
			s := a.ymm()
			a.add(at("s", h), xh, s)
			commit("s", h, s)
		case ir.OpRMax, ir.OpRMin:
			m := a.ymm()
			a.mov(at("m", h), m)
			if r.Op == ir.OpRMax {
				a.maxNaN(m, xh, m)
			} else {
				a.minNaN(m, xh, m)
			}
			commit("m", h, m)
		case ir.OpLogSumExp:
			// s' = x > m ? s·e + 1 : s + e;  m' = x > m ? x : m.
			s, sa := a.ymm(), a.ymm()
			a.mov(at("s", h), s)
			a.mov(s, sa)
			a.fmadd213(a.cf(1), e[h], sa) // sa = e·s + 1
			a.add(e[h], s, s)
			a.blend(gt[h], sa, s, s)
			m := a.ymm()
			a.mov(at("m", h), m)
			a.blend(gt[h], xh, m, m)
			commit("s", h, s)
			commit("m", h, m)
		case ir.OpVar:
			// Welford: n += 1; d = x − mean; mean += d/n; M2 += d·(x − mean).
			n, mean, d, m2 := a.ymm(), a.ymm(), a.ymm(), a.ymm()
			a.mov(at("n", h), n)
			a.add(a.cf(1), n, n)
			a.mov(at("mean", h), mean)
			a.sub(mean, xh, d)
			t := a.ymm()
			a.div(n, d, t)
			a.add(t, mean, mean)
			a.sub(mean, xh, t)
			a.mov(at("m2", h), m2)
			a.fmadd231(d, t, m2)
			commit("n", h, n)
			commit("mean", h, mean)
			commit("m2", h, m2)
		case ir.OpArgMax:
			// Forward: take x if x > best, or x is NaN and best is not (torch.argmax: the
			// first maximum, NaN maximal). A reverse scan pass meets indices in decreasing
			// order, so it takes x on ≥ too, or on any NaN.
			best, bi := a.ymm(), a.ymm()
			a.mov(at("best", h), best)
			a.mov(at("idx", h), bi)
			take, t := a.ymm(), a.ymm()
			xn := a.ymm()
			a.cmp(cmpUNORD, xh, xh, xn)
			if pg.ps.Scan && r.Axes[0] == pg.inner() {
				a.cmp(cmpGE_OQ, best, xh, take)
				a.or(xn, take, take)
			} else {
				a.cmp(cmpGT_OQ, best, xh, take)
				a.cmp(cmpUNORD, best, best, t)
				a.andn(xn, t, t) // xn && !isnan(best)
				a.or(t, take, take)
			}
			a.blend(take, xh, best, best)
			a.blend(take, idx[h], bi, bi)
			commit("best", h, best)
			commit("idx", h, bi)
		}
	}
}

// lseTerms computes, for logsumexp, e = exp(−|x − m|) (1 where x == m, which also covers
// equal infinities) and the mask x > m, in the kernel's dtype, as float64 halves.
func (pg *passGen) lseTerms(x reg.VecVirtual, at func(string, int) operand.Mem) (e, gt []reg.VecVirtual) {
	c := pg.c
	m := pg.ymm()
	if pg.f64 {
		pg.mov(at("m", 0), m)
	} else {
		lo, hi := c.XMM(), c.XMM()
		c.VCVTPD2PSY(at("m", 0), lo)
		c.VCVTPD2PSY(at("m", 1), hi)
		c.VINSERTF128(operand.Imm(1), hi, lo.AsY(), m)
	}
	d := pg.ymm()
	pg.sub(m, x, d)
	g := pg.ymm()
	pg.cmp(cmpGT_OQ, pg.cf(0), d, g)
	pg.or(pg.cf(math.Copysign(0, -1)), d, d) // −|d|
	ex := pg.expf(d)
	eq := pg.ymm()
	pg.cmp(cmpEQ_OQ, m, x, eq)
	pg.blend(eq, pg.cf(1), ex, ex)
	return pg.halves(ex), pg.maskHalves(g)
}

// indexHalves is each lane's index along axis as float64 halves: the block's inner offset
// plus the lane number for the vector axis, the loop counter for an outer axis.
func (pg *passGen) indexHalves(axis string) []reg.VecVirtual {
	c := pg.c
	t := pg.gp()
	if axis == pg.inner() {
		if pg.jReg != nil {
			c.MOVQ(pg.jReg, t)
		} else {
			c.MOVQ(operand.I32(int32(uint64(pg.jImm))), t)
		}
	} else {
		c.MOVQ(pg.counters[pg.dom.Index(axis)], t)
	}
	base := pg.ymm()
	c.CVTSQ2SD(t, base.AsX())
	c.VBROADCASTSD(base.AsX(), base)
	var out []reg.VecVirtual
	n := 2
	if pg.f64 {
		n = 1
	}
	for h := 0; h < n; h++ {
		v := pg.ymm()
		if axis == pg.inner() {
			vals := make([]operand.Constant, 4)
			for i := range vals {
				vals[i] = operand.U64(math.Float64bits(float64(4*h + i)))
			}
			c.VADDPD(pg.data("laneidx"+itoa(h), vals), base, v)
		} else {
			c.VMOVAPD(base, v)
		}
		out = append(out, v)
	}
	return out
}
