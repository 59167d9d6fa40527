package asmgen

import (
	"fmt"
	"math"
	"slices"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
)

// Reductions accumulate per lane: each lane holds the state of its own subset of the
// elements in memory arrays (views of one state buffer, see layoutStates) that the Go
// wrapper initialises before the loop and merges pairwise after it (runtime.Finish*). Values that are exact in the kernel's element type
// (running max/min, logsumexp's max, argmax's best value) stay in it; sums are float64. A
// float32 kernel adds a reduction's 8 lanes into a float32 partial for up to partialBlocks
// blocks, then flushes it into the float64 sum, so a lane's float32 rounding stays within
// 8·2^-24 ≈ 5e-7 of its partial while most blocks cost one add. Tail lanes leave states
// untouched.

// partialBlocks is how many blocks a float32 partial sum absorbs before it is flushed.
const partialBlocks = 8

// field is one per-lane state array of a reduction.
type field struct {
	name string
	elem bool // in the kernel's element type; otherwise float64
}

// fields lists r's state arrays.
func (pg *passGen) fields(r *ir.Node) []field {
	switch r.Op {
	case ir.OpSum, ir.OpMean:
		if pg.partial(r) {
			return []field{{"s", false}, {"p", true}}
		}
		return []field{{"s", false}}
	case ir.OpRMax, ir.OpRMin:
		return []field{{"m", true}}
	case ir.OpLogSumExp:
		if pg.twins[r.ID] != nil {
			return []field{{"s", false}} // its range is its twin's, doubled
		}
		return []field{{"s", false}, {"ok", true}}
	case ir.OpVar:
		return []field{{"n", false}, {"mean", false}, {"m2", false}}
	case ir.OpArgMax:
		return []field{{"best", true}, {"idx", false}}
	}
	panic("asmgen: not a reduction: " + r.Op.String())
}

// partial reports whether r sums into a float32 partial (float32 kernels, when each slot's
// lanes are its own: the slot stays fixed along a row, where partials are flushed).
func (pg *passGen) partial(r *ir.Node) bool {
	return !pg.f64 && (r.Op == ir.OpSum || r.Op == ir.OpMean) && pg.layout(r).lps > 1
}

// knownCount reports whether r's elements arrive in lockstep across lanes (a barrier
// reduction over outer axes only, accumulated once per index), so the Welford count is the
// same for every lane and known per block.
func (pg *passGen) knownCount(r *ir.Node) bool {
	g := pg.e.g
	return !g.InnerReduce(r) && pg.layout(r).lps == 1 && len(g.InnerPart(r.Args[0].Shape)) == 0
}

// stateMem addresses element off (+disp elements; nil off is 0) of r's state array f. All
// state arrays of a package live in one buffer (avxState.buf) at offsets fixed by the
// generator, so one pointer, loaded once per block, reaches them all.
//
// An inner reduction's states are the current block's lanes only, on the stack (pg.inner);
// its logsumexp guard ("ok") is the pass's, in the state buffer like a barrier reduction's.
func (pg *passGen) stateMem(r *ir.Node, f field, off reg.GPVirtual, disp int) operand.Mem {
	size := 8
	if f.elem {
		size = pg.esz()
	}
	if pg.e.g.InnerReduce(r) && f.name != "ok" {
		m := pg.inner[r.ID]
		m.Disp += pg.innerAt[stateField(r, f.name)] + disp*size
		return m
	}
	if pg.stReg == nil {
		pg.stReg = pg.ptr("st", "*float64", "&st.buf[0]")
	}
	m := elemMem(pg.stReg, off, size, disp)
	m.Disp += pg.e.stateAt[stateField(r, f.name)]
	return m
}

func stateField(r *ir.Node, f string) string { return fmt.Sprintf("r%d_%s", r.ID, f) }

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

// stateOff is the element offset of the current block's first lane state.
// A reduction to a scalar has its states at offset 0: nil, so no register is spent on it.
func (pg *passGen) stateOff(r *ir.Node) reg.GPVirtual {
	if len(r.Shape) == 0 || pg.e.g.InnerReduce(r) {
		return nil
	}
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
	at := func(f string, h int) operand.Mem { return pg.stateMem(r, field{f, false}, off, 4*h) } // float64 field, half h
	atE := func(f string) operand.Mem { return pg.stateMem(r, field{f, true}, off, 0) }          // element-type field
	var mask reg.VecVirtual
	var masks []reg.VecVirtual
	if pg.rem > 0 {
		mask = pg.tailMask()
		masks = pg.maskHalves(mask)
	}
	// commit64 stores a new float64 state half, keeping the old one in tail lanes.
	commit64 := func(f string, h int, v reg.VecVirtual) {
		if masks != nil {
			old := pg.ymm()
			a.mov(at(f, h), old)
			a.blend(masks[h], v, old, v)
		}
		a.mov(v, at(f, h))
	}
	commitE := func(f string, v reg.VecVirtual) {
		if mask != nil {
			old := pg.ymm()
			pg.mov(atE(f), old)
			pg.blend(mask, v, old, v)
		}
		pg.mov(v, atE(f))
	}
	if mask != nil && (r.Op == ir.OpSum || r.Op == ir.OpMean) {
		// Sums: zero the tail lanes (a NaN there would survive a blend-free add).
		z := pg.ymm()
		pg.and(mask, x, z)
		x = z
	}
	switch r.Op {
	case ir.OpSum, ir.OpMean:
		if pg.partial(r) {
			p := pg.ymm()
			pg.add(atE("p"), x, p)
			pg.mov(p, atE("p"))
			return
		}
		for h, xh := range pg.halves(x) {
			s := a.ymm()
			a.add(at("s", h), xh, s)
			a.mov(s, at("s", h))
		}
	case ir.OpRMax, ir.OpRMin:
		m := pg.ymm()
		pg.mov(atE("m"), m)
		if r.Op == ir.OpRMax {
			pg.maxNaN(m, x, m)
		} else {
			pg.minNaN(m, x, m)
		}
		commitE("m", m)
	case ir.OpLogSumExp:
		// Fast path: s += e^x in float64, with e^x from the kernel's exp (shared with the
		// pass's own exp(x) when it has one), and a guard: every lane ANDs into "ok" whether
		// x lies where e^x is a normal float (guardLo ≤ x ≤ guardHi, or x is NaN, which makes
		// the result NaN either way, or x is −inf, which adds an exact 0). While it holds, log Σ e^x is the logsumexp exactly as
		// torch's max-shifted form is, and the wrapper uses it; otherwise it re-runs the pass
		// with the pure-Go kernel's exact streaming form. The guard is one vector for the
		// whole pass, so it costs no per-slot memory traffic.
		// A twin (logsumexp of 2x) adds (e^x)² computed in float64.
		e := pg.expOf(r)
		glo, ghi := pg.guard()
		in, t := pg.ymm(), pg.ymm()
		pg.cmp(cmpNLT_UQ, pg.cf(glo), x, in)
		pg.cmp(cmpNGT_UQ, pg.cf(ghi), x, t)
		pg.and(t, in, in)
		// −inf adds e^−inf = 0 exactly (a masked element's log-weight): still exact.
		pg.cmp(cmpEQ_OQ, pg.cf(math.Inf(-1)), x, t)
		pg.or(t, in, in)
		if mask != nil { // lanes past the tail pass
			pg.mov(pg.laneMask(pg.lanes(), pg.f64), t)
			pg.blend(mask, in, t, in)
		}
		okm := pg.stateMem(r, field{"ok", true}, nil, 0)
		pg.and(okm, in, in)
		pg.mov(in, okm)
		tw := pg.twinOf(r) // same slots and layout as r
		for h, eh := range pg.halves(e) {
			if masks != nil {
				a.and(masks[h], eh, eh)
			}
			s := a.ymm()
			a.add(at("s", h), eh, s)
			a.mov(s, at("s", h))
			if tw != nil {
				m := pg.stateMem(tw, field{"s", false}, off, 4*h)
				s2 := a.ymm()
				a.mul(eh, eh, s2)
				a.add(m, s2, s2)
				a.mov(s2, m)
			}
		}
	case ir.OpVar:
		// Welford: n += 1; d = x − mean; mean += d/n; M2 += d·(x − mean). When every lane
		// has the same count (outer axes only), 1/n is computed once per block.
		var inv reg.VecVirtual
		if pg.knownCount(r) {
			inv = pg.invCount(r)
		}
		for h, xh := range pg.halves(x) {
			mean, d, t, m2 := a.ymm(), a.ymm(), a.ymm(), a.ymm()
			a.mov(at("mean", h), mean)
			a.sub(mean, xh, d)
			if inv != nil {
				a.fmadd231(d, inv, mean)
			} else {
				n := a.ymm()
				a.mov(at("n", h), n)
				a.add(a.cf(1), n, n)
				commit64("n", h, n)
				a.div(n, d, t)
				a.add(t, mean, mean)
			}
			a.sub(mean, xh, t)
			a.mov(at("m2", h), m2)
			a.fmadd231(d, t, m2)
			commit64("mean", h, mean)
			commit64("m2", h, m2)
		}
	case ir.OpArgMax:
		// Forward: take x if x > best, or x is NaN and best is not (torch.argmax: the first
		// maximum, NaN maximal). A reverse scan pass meets indices in decreasing order, so it
		// takes x on ≥ too, or on any NaN.
		best := pg.ymm()
		pg.mov(atE("best"), best)
		take, t, xn := pg.ymm(), pg.ymm(), pg.ymm()
		pg.cmp(cmpUNORD, x, x, xn)
		if pg.reverse(r.Axes[0]) {
			pg.cmp(cmpGE_OQ, best, x, take)
			pg.or(xn, take, take)
		} else {
			pg.cmp(cmpGT_OQ, best, x, take)
			pg.cmp(cmpUNORD, best, best, t)
			pg.andn(xn, t, t) // xn && !isnan(best)
			pg.or(t, take, take)
		}
		pg.blend(take, x, best, best)
		commitE("best", best)
		takes := pg.maskHalves(take)
		for h, ih := range pg.indexHalves(r.Axes[0]) {
			bi := a.ymm()
			a.mov(at("idx", h), bi)
			a.blend(takes[h], ih, bi, bi)
			commit64("idx", h, bi)
		}
	}
}

// guardLo, guardHi bound the x for which logsumexp's fast path is exact: e^x is then a normal
// float of the element type (and, for the 2x twin, (e^x)² one of float64).
func (pg *passGen) guard() (lo, hi float64) {
	if pg.f64 {
		return -700, 350
	}
	return -87, 88
}

// expOf returns e^x for a logsumexp's argument x at the current block: the pass's own exp(x)
// when it computes one (placed before the reduction by block), else a fresh one.
func (pg *passGen) expOf(r *ir.Node) reg.VecVirtual {
	if n := pg.sharedExp(r); n != nil {
		return pg.regs.get(pg.regs.vals[n.ID])
	}
	return pg.expf(pg.regs.get(pg.regs.vals[r.Args[0].ID]))
}

// sharedExp returns the graph's exp of r's argument (ir.Facts.Exp) when this pass computes
// it, for a barrier logsumexp (an inner one's argument is in its loop, where the pass's exp
// may not be); else nil.
func (pg *passGen) sharedExp(r *ir.Node) *ir.Node {
	if pg.e.g.InnerReduce(r) {
		return nil
	}
	if n := pg.e.g.ExpOf(r); n != nil && slices.Contains(pg.ps.Compute, n) {
		return n
	}
	return nil
}

// invCount is 1/n in every float64 lane, n being how many elements each of r's slots has
// received including the current row: one plus the position of the current outer indices
// among the reduced axes. It is computed once per row (rowSetup) into a stack slot.
func (pg *passGen) invCount(r *ir.Node) reg.VecVirtual {
	v := pg.ymm()
	pg.c.VBROADCASTSD(pg.invSlots[fmt.Sprint(r.Axes)], v)
	return v
}

// rowSetup runs before each row's blocks: it stores 1/n for every known-count variance.
func (pg *passGen) rowSetup() {
	c := pg.c
	done := map[string]bool{} // variances over the same axes share their 1/n
	for _, r := range pg.ps.Reduces {
		key := fmt.Sprint(r.Axes)
		if r.Op != ir.OpVar || !pg.knownCount(r) || done[key] {
			continue
		}
		done[key] = true
		slot, ok := pg.invSlots[key]
		if !ok {
			slot = c.AllocLocal(8)
			pg.invSlots[key] = slot
		}
		k := pg.gp()
		c.XORQ(k, k)
		stride := 1
		for i := len(r.Axes) - 1; i >= 0; i-- {
			d := pg.dom.Index(r.Axes[i])
			name := pg.dom[d].Name
			t := pg.gp()
			switch {
			case d == 0 && pg.chunked: // the chunk's own count: rows from its first
				c.MOVQ(pg.counters[name], t)
				c.SUBQ(pg.rowLo(), t)
				c.IMUL3Q(operand.I32(int32(stride)), t, t)
			case pg.reverse(name): // walked backwards: size−1−counter indices seen before
				c.MOVQ(operand.I32(int32(pg.dom[d].Size-1)), t)
				c.SUBQ(pg.counters[name], t)
				c.IMUL3Q(operand.I32(int32(stride)), t, t)
			default:
				c.IMUL3Q(operand.I32(int32(stride)), pg.counters[name], t)
			}
			c.ADDQ(t, k)
			stride *= pg.dom[d].Size
		}
		c.INCQ(k)
		v, one := pg.zeroX(), c.XMM()
		c.VCVTSI2SDQ(k, v, v)
		c.VMOVSD(pg.cf64(1), one)
		c.VDIVSD(v, one, v)
		c.VMOVSD(v, slot)
	}
}

// flushPartials adds every float32 partial sum of the pass into its float64 sum, then zeroes
// the partial. A partial that is no longer finite (it overflowed, or met a NaN or ±Inf) clears
// the pass's guard: the Go kernel's float64 sum may well be finite (guard.go).
func (pg *passGen) flushPartials() {
	a := pg.a64
	var ok reg.VecVirtual
	for _, r := range pg.ps.Reduces {
		if !pg.partial(r) {
			continue
		}
		off := pg.stateOff(r)
		pm := pg.stateMem(r, field{"p", true}, off, 0)
		p := pg.ymm()
		pg.mov(pm, p)
		fin := pg.ymm()
		pg.within(p, math.MaxFloat32, fin)
		if ok == nil {
			ok = fin
		} else {
			pg.and(fin, ok, ok)
		}
		for h, ph := range pg.halves(p) {
			s := a.ymm()
			sm := pg.stateMem(r, field{"s", false}, off, 4*h)
			a.add(sm, ph, s)
			a.mov(s, sm)
		}
		z := pg.zero()
		pg.mov(z, pm)
	}
	if ok != nil {
		pg.andGuard(ok)
	}
}

func (pg *passGen) hasPartials() bool {
	for _, r := range pg.ps.Reduces {
		if pg.partial(r) {
			return true
		}
	}
	return false
}

// indexHalves is each lane's index along axis as float64 halves: the block's inner offset
// plus the lane number for the vector axis, the loop counter for an outer axis.
func (pg *passGen) indexHalves(axis string) []reg.VecVirtual {
	c := pg.c
	t := pg.gp()
	if axis == pg.vaxis() {
		if pg.jReg != nil {
			c.MOVQ(pg.jReg, t)
		} else {
			c.MOVQ(operand.I32(int32(pg.jImm)), t)
		}
	} else {
		c.MOVQ(pg.counters[axis], t)
	}
	base := pg.zero()
	c.VCVTSI2SDQ(t, base.AsX(), base.AsX())
	c.VBROADCASTSD(base.AsX(), base)
	var out []reg.VecVirtual
	n := 2
	if pg.f64 {
		n = 1
	}
	for h := 0; h < n; h++ {
		v := pg.ymm()
		if axis == pg.vaxis() {
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

// Inner reductions (over non-batch dims, inside each block): each lane is one element of the
// domain, so the states are one per lane, on the stack: Init fills them before the loop,
// accumulate (the same code as a barrier reduction's, on these states) folds each iteration,
// and innerFinish turns them into the block's value after the loop.

// innerInit sets r's lane states to the identity, allocating them on first use.
func (pg *passGen) innerInit(r *ir.Node) {
	if _, ok := pg.inner[r.ID]; !ok {
		size := 0
		for _, f := range pg.fields(r) {
			if f.name == "ok" {
				continue
			}
			pg.innerAt[stateField(r, f.name)] = size
			size += 64
		}
		pg.inner[r.ID] = pg.c.AllocLocal(size)
	}
	red := ir.Reductions[r.Op]
	for _, f := range pg.fields(r) {
		if f.name == "ok" {
			continue
		}
		id := 0.0
		for i, name := range red.Fields {
			if name == f.name {
				id = red.Identity[i]
			}
		}
		if r.Op == ir.OpArgMax && f.name == "idx" {
			// One lane sees every index of its row, so a row that never takes an element
			// (all −inf) keeps the first index, as torch.argmax does; +inf, the identity,
			// only serves lane merges (FinishArgMax), which an inner reduction does not do.
			id = 0
		}
		v := pg.ymm()
		if f.elem {
			pg.mov(pg.cf(id), v)
			pg.mov(v, pg.stateMem(r, f, nil, 0))
			continue
		}
		pg.a64.mov(pg.cf64(id), v)
		for h := range pg.nHalves() {
			pg.a64.mov(v, pg.stateMem(r, f, nil, 4*h))
		}
	}
}

// nHalves is how many float64 vectors hold one vector of lanes.
func (pg *passGen) nHalves() int {
	if pg.f64 {
		return 1
	}
	return 2
}

// innerAccumulate folds x into an inner reduction's lane states.
func (pg *passGen) innerAccumulate(r *ir.Node, x reg.VecVirtual) { pg.accumulate(r, x) }

// innerFinish is an inner reduction's value in every lane, from its states.
func (pg *passGen) innerFinish(r *ir.Node) reg.VecVirtual {
	a := pg.a64
	at := func(f string, h int) operand.Mem { return pg.stateMem(r, field{f, false}, nil, 4*h) }
	var hs []reg.VecVirtual
	switch r.Op {
	case ir.OpRMax, ir.OpRMin:
		v := pg.ymm()
		pg.mov(pg.stateMem(r, field{"m", true}, nil, 0), v)
		return v
	case ir.OpArgMax:
		for h := range pg.nHalves() {
			v := a.ymm()
			a.mov(at("idx", h), v)
			hs = append(hs, v)
		}
	case ir.OpSum, ir.OpMean:
		n := 1
		for _, ax := range r.Axes {
			n *= r.Args[0].Shape[r.Args[0].Shape.Index(ax)].Size
		}
		for h := range pg.nHalves() {
			v := a.ymm()
			a.mov(at("s", h), v)
			if r.Op == ir.OpMean {
				a.div(a.cf(float64(n)), v, v)
			}
			hs = append(hs, v)
		}
	case ir.OpLogSumExp:
		for h := range pg.nHalves() {
			v := a.ymm()
			a.mov(at("s", h), v)
			hs = append(hs, a.log64(v))
		}
	case ir.OpVar:
		for h := range pg.nHalves() {
			n, v := a.ymm(), a.ymm()
			a.mov(at("n", h), n)
			a.sub(a.cf(float64(r.Corr)), n, n)
			a.mov(at("m2", h), v)
			a.div(n, v, v)
			hs = append(hs, v)
		}
	default:
		panic("asmgen: no inner form of " + r.Op.String())
	}
	return pg.fromHalves(hs)
}

// fromHalves narrows float64 halves back to one vector of the element type.
func (pg *passGen) fromHalves(hs []reg.VecVirtual) reg.VecVirtual {
	if pg.f64 {
		return hs[0]
	}
	// lo is defined whole first: VINSERTF128 reads it as a YMM (see defineOnly).
	lo, hi, v := pg.zero(), pg.c.XMM(), pg.ymm()
	pg.c.VCVTPD2PSY(hs[0], lo.AsX())
	pg.c.VCVTPD2PSY(hs[1], hi)
	pg.c.VINSERTF128(operand.Imm(1), hi, lo, v)
	return v
}
