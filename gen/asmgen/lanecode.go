package asmgen

import (
	"fmt"
	"math"
	"slices"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
)

// laneCode holds the reductions with hand-written lane code (below: float32 partial sums,
// logsumexp's guarded sums of e^x, Welford with a known count, argmax in either loop
// direction, values kept in the element type), faster forms of their descriptions, and the
// runtime function that merges and finishes their lanes. Any other reduction runs its
// description (ir.ReductionOf) on float64 lanes (laneAcc.generic), whose lanes generated Go
// merges and finishes (finishGeneric). The op zoo runs both (ir.Graph.GenericReductions)
// against the interpreter.
var laneCode = map[ir.Op]string{
	ir.OpSum: "FinishSum", ir.OpMean: "FinishMean", ir.OpRMax: "FinishMax", ir.OpRMin: "FinishMin",
	ir.OpLogSumExp: "FinishSumLog", ir.OpVar: "FinishVar", ir.OpStd: "FinishStd", ir.OpArgMax: "FinishArgMax",
}

// own reports whether r runs the hand-written lane code of its op (laneCode).
func (pg *passGen) own(r *ir.Node) bool {
	_, ok := laneCode[r.Op]
	return ok && !pg.e.g.GenericReductions
}

// guarded reports whether r is a logsumexp on its guarded fast path (reduce.go).
func (pg *passGen) guarded(r *ir.Node) bool { return r.Op == ir.OpLogSumExp && pg.own(r) }

// sum adds x (its tail lanes zero) to the float64 sums, or to the float32 partial (a short
// inner sum's only state).
func (l *laneAcc) sum(x reg.VecVirtual) {
	pg, a := l.pg, l.pg.a64
	if pg.partial(l.r) || pg.innerF32(l.r) {
		if p := pg.stateReg(l.r, "p", 0); p != nil {
			pg.add(p, x, p)
			return
		}
		p := pg.ymm()
		pg.add(l.atE("p"), x, p)
		pg.mov(p, l.atE("p"))
		return
	}
	for h, xh := range pg.halves(x) {
		if s := pg.stateReg(l.r, "s", h); s != nil {
			a.add(s, xh, s)
			continue
		}
		s := a.ymm()
		a.add(l.at("s", h), xh, s)
		a.mov(s, l.at("s", h))
	}
}

// logSumExp is logsumexp's fast path: s += e^x in float64, with e^x from the kernel's exp
// (shared with the pass's own exp(x) when it has one), and a guard: every lane ANDs into "ok"
// whether x lies where e^x is a normal float (guardLo ≤ x ≤ guardHi, or x is NaN, which makes
// the result NaN either way, or x is −inf, which adds an exact 0). While it holds, log Σ e^x
// is the logsumexp exactly as torch's max-shifted form is, and the wrapper uses it; otherwise
// it re-runs the pass with the pure-Go kernel's exact streaming form. The guard is one vector
// for the whole pass, so it costs no per-slot memory traffic. A twin (logsumexp of 2x) adds
// (e^x)² computed in float64.
func (l *laneAcc) logSumExp(x reg.VecVirtual) {
	pg, a, r := l.pg, l.pg.a64, l.r
	e := pg.expOf(r)
	tw := pg.twinOf(r) // same slots and layout as r
	in, t := pg.lseGuard(r, x)
	if l.mask != nil { // lanes past the tail pass
		pg.mov(pg.laneMask(pg.lanes(), pg.f64), t)
		pg.blend(l.mask, in, t, in)
	}
	pg.andInto(pg.stateMem(r, field{"ok", true}, nil, 0), in)
	if pg.partial(r) {
		l.partialExp(e, tw)
		return
	}
	for h, eh := range pg.halves(e) {
		if l.masks != nil {
			a.and(l.masks[h], eh, eh)
		}
		s := a.ymm()
		a.add(l.at("s", h), eh, s)
		a.mov(s, l.at("s", h))
		if tw != nil {
			m := pg.stateMem(tw, field{"s", false}, l.off, 4*h)
			s2 := a.ymm()
			a.mul(eh, eh, s2)
			a.add(m, s2, s2)
			a.mov(s2, m)
		}
	}
}

// lseGuard is the lanes where logsumexp r's fast path stays exact at x (logSumExp): x within
// the guard, or −inf, which adds e^−inf = 0 exactly (a masked element's log-weight).
// t is a scratch register the caller may reuse.
func (pg *passGen) lseGuard(r *ir.Node, x reg.VecVirtual) (in, t reg.VecVirtual) {
	glo, ghi := pg.guard()
	if pg.twinOf(r) != nil && pg.partial(r) {
		glo = twinGuardLo // (e^x)² summed in float32 must be a normal float too
	}
	in, t = pg.ymm(), pg.ymm()
	pg.cmp(cmpNLT_UQ, pg.cf(glo), x, in)
	pg.cmp(cmpNGT_UQ, pg.cf(ghi), x, t)
	pg.and(t, in, in)
	pg.cmp(cmpEQ_OQ, pg.cf(math.Inf(-1)), x, t)
	pg.or(t, in, in)
	return in, t
}

// twinGuardLo is the guard's lower end for a float32 logsumexp whose twin sums (e^x)² in
// float32: e^(2x) is a normal float32 for x ≥ −43 (2^−126 ≈ e^−87.3).
const twinGuardLo = -43

// partialExp adds e = e^x (tail lanes cleared) to r's float32 partial and (e^x)² to its
// twin's: flushPartials adds them to the float64 sums every partialBlocks blocks. The terms
// are positive, so each partial is within (partialBlocks−1)·2^−24 of its exact sum, the
// bound of every float32 partial sum (innerF32).
func (l *laneAcc) partialExp(e reg.VecVirtual, tw *ir.Node) {
	pg := l.pg
	if l.mask != nil { // not in place: e may be the pass's own exp(x), read again later
		t := pg.ymm()
		pg.and(l.mask, e, t)
		e = t
	}
	l.sum(e)
	if tw == nil {
		return
	}
	pm := pg.stateMem(tw, field{"p", true}, l.off, 0)
	q := pg.ymm()
	pg.mul(e, e, q)
	pg.add(pm, q, q)
	pg.mov(q, pm)
}

// welford is the variance's streaming update: n += 1; d = x − mean; mean += d/n;
// M2 += d·(x − mean). When every lane has the same count (outer axes only), 1/n is computed
// once per block.
func (l *laneAcc) welford(x reg.VecVirtual) {
	pg, a := l.pg, l.pg.a64
	if pg.partial(l.r) && pg.flushK != nil {
		l.welfordPartial(x)
		return
	}
	var inv reg.VecVirtual
	if pg.knownCount(l.r) {
		inv = pg.invCount(l.r)
	}
	equal := pg.equalLaneCounts(l.r)
	for h, xh := range pg.halves(x) {
		if equal { // n += 1 in every lane (the states merge by their counts); 1/n from lane 0
			n := a.ymm()
			a.mov(l.at("n", h), n)
			a.add(a.cf(1), n, n)
			l.commit64("n", h, n)
			if h == 0 {
				inv = pg.laneInv(n)
			}
		}
		mean, d, t, m2 := a.ymm(), a.ymm(), a.ymm(), a.ymm()
		a.mov(l.at("mean", h), mean)
		a.sub(mean, xh, d)
		if inv != nil {
			a.fmadd231(d, inv, mean)
		} else {
			n := a.ymm()
			a.mov(l.at("n", h), n)
			a.add(a.cf(1), n, n)
			l.commit64("n", h, n)
			a.div(n, d, t)
			a.add(t, mean, mean)
		}
		a.sub(mean, xh, t)
		a.mov(l.at("m2", h), m2)
		a.fmadd231(d, t, m2)
		l.commit64("mean", h, mean)
		l.commit64("m2", h, m2)
	}
}

// welfordPartial is a full block's update of a float32 variance's partial states, the
// shifted sums of each lane's elements since the last flush: pc, a centre (the lane's element
// of the first block after the flush), p = Σ(x − pc) and pm2 = Σ(x − pc)², in float32. Every
// partialBlocks blocks, flushWelford merges them into the float64 Welford states. The centre
// is one of the k ≤ 8 elements, so (pc − mean)² is at most their m2 and
// pm2 = m2 + k(pc − mean)² ≤ (k + 1)·m2: pm2 − p²/k cancels at most a factor 9, and m2 is
// within about 9·(k + 1)·2^−24 ≈ 5e-6 of its value, relative, whatever the data's offset
// (the deviations are exact where x is within a factor 2 of the centre, Sterbenz; a running
// float32 mean would instead round by ulp(mean)/2 at each step, an error in the first order
// of m2: 3e-5 at a mean of 1e4 and a deviation of 0.5). A partial that overflows clears the
// pass's guard (the Go kernel reruns the pass in float64).
func (l *laneAcc) welfordPartial(x reg.VecVirtual) {
	pg := l.pg
	// Partials held in registers (holdPartials) update in place; others through a register.
	var first reg.VecVirtual
	if pg.half != 1 { // a 16-lane block's second half never starts a flush's blocks
		// The first block after a flush has k = partialBlocks (16-lane blocks: flushEvery).
		first = pg.ymm()
		pg.c.VMOVQ(pg.flushK, first.AsX())
		pg.c.VPBROADCASTD(first.AsX(), first)
		pg.c.VPCMPEQD(pg.cd(int32(pg.flushEvery())), first, first)
	}
	c, inReg := pg.heldPartial(l.r, "pc")
	if !inReg {
		c = pg.ymm()
		pg.mov(l.atE("pc"), c)
	}
	if first != nil {
		pg.blend(first, x, c, c)
		if !inReg {
			pg.mov(c, l.atE("pc"))
		}
	}
	d := pg.ymm()
	pg.sub(c, x, d)
	if p, ok := pg.heldPartial(l.r, "p"); ok {
		pg.add(p, d, p)
	} else {
		s := pg.ymm()
		pg.add(l.atE("p"), d, s)
		pg.mov(s, l.atE("p"))
	}
	if q, ok := pg.heldPartial(l.r, "pm2"); ok {
		pg.fmadd231(d, d, q)
		return
	}
	q := pg.ymm()
	pg.mov(l.atE("pm2"), q)
	pg.fmadd231(d, d, q)
	pg.mov(q, l.atE("pm2"))
}

// flushWelford merges a variance's float32 partial states, nb blocks of every lane (nb a
// register holding that count as float64 in every lane), into its float64 Welford states with
// Chan, Golub and LeVeque's pairwise update: the partial's mean is m = pc + p/nb and its sum
// of squared deviations q = pm2 − p·p/nb; then n' = n + nb, δ = m − mean, mean += δ·nb/n',
// m2 += q + δ²·n·nb/n'. Dividing by max(nb, 1) and max(n', 1) makes a flush with nothing to
// merge (nb = 0, p = pm2 = 0) a no-op. It adds the sums to fin (a centre that is not finite
// is in sums that are not) and zeroes them.
func (pg *passGen) flushWelford(r *ir.Node, nb reg.VecVirtual, fin *finiteAcc) {
	off := pg.stateOff(r)
	mem := func(f string) operand.Op { return pg.stateOp(r, field{f, true}, off, 0) }
	p, q := pg.ymm(), pg.ymm()
	pg.mov(mem("p"), p)
	pg.mov(mem("pm2"), q)
	fin.add(p)
	fin.add(q)
	c := pg.ymm()
	pg.mov(mem("pc"), c)
	ph, a := pg.flushHalves(p)
	qh, _ := pg.flushHalves(q)
	ch, _ := pg.flushHalves(c)
	one := operand.Op(pg.a64.cf64(1)) // as64's 32-byte constant; 8 lanes broadcast it
	if a.zmm {                        // 8 lanes: the count and 1 broadcast from the first
		o, n := a.ymm(), a.ymm()
		a.c.VBROADCASTSD(one, o)
		a.c.VBROADCASTSD(nb.AsX(), n)
		one, nb = o, n
	}
	k := a.ymm() // the partial's count, 1 where it is 0
	a.c.VMAXPD(one, nb, k)
	for h := range ph {
		at := func(f string) operand.Mem { return pg.stateMem(r, field{f, false}, off, 4*h) }
		pm, pq := a.ymm(), a.ymm() // the partial's mean and m2
		a.div(k, ph[h], pm)
		a.mov(qh[h], pq)
		a.fnmadd231(ph[h], pm, pq)
		a.add(ch[h], pm, pm)
		n, nn, w, mean, d, m2 := a.ymm(), a.ymm(), a.ymm(), a.ymm(), a.ymm(), a.ymm()
		a.mov(at("n"), n)
		a.add(nb, n, nn)
		a.mov(nn, at("n"))
		a.c.VMAXPD(one, nn, nn)
		a.div(nn, nb, w)
		a.mov(at("mean"), mean)
		a.sub(mean, pm, d)
		a.fmadd231(d, w, mean)
		a.mov(mean, at("mean"))
		a.mul(w, n, w)
		a.mul(d, w, w)
		a.add(at("m2"), pq, m2)
		a.fmadd231(d, w, m2)
		a.mov(m2, at("m2"))
	}
	var z reg.VecVirtual
	for _, f := range []string{"p", "pm2"} {
		if p, ok := pg.heldPartial(r, f); ok {
			pg.mov(pg.cf(0), p)
			continue
		}
		if z == nil {
			z = pg.zero()
		}
		pg.mov(z, mem(f))
	}
}

// equalLaneCounts reports whether, in the current block, every lane of r's slots has
// received as many elements: r is a variance whose slots span lanes (a mean over the vector
// axis: explained variance over a flat batch), the block is full, and no block before it
// in the pass's run was a tail (a flat domain, whose tail comes last, or a vector axis of
// whole blocks). Each lane's count is then the same n, and 1/n is one scalar division per
// block instead of a vector division per half.
func (pg *passGen) equalLaneCounts(r *ir.Node) bool {
	if !pg.own(r) || !r.Op.Welford() || pg.e.g.InnerReduce(r) || pg.layout(r).lps == 1 || pg.rem > 0 {
		return false
	}
	v := pg.dom[len(pg.dom)-1]
	return len(pg.dom) == 1 || v.Size%pg.lanes() == 0
}

// laneInv is 1/n[0] in every float64 lane: one scalar division.
func (pg *passGen) laneInv(n reg.VecVirtual) reg.VecVirtual {
	c := pg.c
	one, q := c.XMM(), c.XMM()
	c.VMOVSD(pg.a64.cf64(1), one)
	c.VDIVSD(n.AsX(), one, q)
	v := pg.ymm()
	c.VBROADCASTSD(q, v)
	return v
}

// argMax takes x if x > best, or x is NaN and best is not (torch.argmax: the first maximum,
// NaN maximal). A reverse scan pass meets indices in decreasing order, so it takes x on ≥ too,
// or on any NaN.
func (l *laneAcc) argMax(x reg.VecVirtual) {
	pg, a, r := l.pg, l.pg.a64, l.r
	best := pg.ymm()
	pg.mov(l.atE("best"), best)
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
	l.commitE("best", best)
	takes := pg.maskHalves(take)
	for h, ih := range pg.indexHalves(r.Axes[0]) {
		bi := a.ymm()
		a.mov(l.at("idx", h), bi)
		a.blend(takes[h], ih, bi, bi)
		l.commit64("idx", h, bi)
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
	if pg.halfExp != nil { // the half of a 16-lane block's e^x being folded (accumulateHalves)
		return pg.halfExp
	}
	if n := pg.sharedExp(r); n != nil {
		e := pg.regs.get(pg.regs.vals[n.ID])
		if c := expCond(r, n); c != nil { // e^where(c, x, −inf) = where(c, e^x, +0)
			z := pg.ymm()
			pg.and(e, pg.regs.get(pg.regs.vals[pg.condMask(c).ID]), z)
			return z
		}
		return e
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

// expCond is the condition c of a logsumexp r whose argument is where(c, x, −inf) and whose
// shared exp is e = exp(x) (passes.MaskedArg), or nil when e is the exp of r's argument.
func expCond(r, e *ir.Node) *ir.Node {
	if e.Args[0] == r.Args[0] {
		return nil
	}
	return r.Args[0].Args[0]
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
	done := map[string]bool{} // reductions over the same axes share their 1/n
	for _, r := range pg.ps.Reduces {
		key := fmt.Sprint(r.Axes)
		if !pg.knownCount(r) || done[key] {
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
			case d == 0 && pg.chunkRows(): // the chunk's own count: rows from its first
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
		c.VMOVSD(pg.a64.cf64(1), one)
		c.VDIVSD(v, one, v)
		c.VMOVSD(v, slot)
	}
}

// flushPartials adds every float32 partial sum of the pass into its float64 sum, and merges
// every variance's partial states into its float64 ones, nb blocks of each lane (float64
// lanes; nil when no full block ran), then zeroes the partials. A partial that is no longer
// finite (it overflowed, or met a NaN or ±Inf) clears the pass's guard: the Go kernel's
// float64 sum may well be finite (guard.go).
func (pg *passGen) flushPartials(nb reg.VecVirtual) {
	fin := &finiteAcc{pg: pg}
	for _, r := range pg.ps.Reduces {
		switch {
		case !pg.partial(r), r.Op.Welford() && nb == nil: // no full block: nothing in the partials
			continue
		case r.Op.Welford():
			pg.flushWelford(r, nb, fin)
		default:
			pg.flushSum(r, fin)
		}
	}
	if fin.acc != nil {
		ok := pg.ymm()
		pg.cmp(cmpEQ_OQ, fin.acc, fin.acc, ok)
		pg.andGuard(ok)
	}
}

// finiteAcc gathers whether a flush's float32 partials are finite, at one instruction each:
// x·0 is ±0 for a finite x and NaN for ±Inf or NaN, so the sum of the partials' products
// with 0 is NaN exactly in the lanes where one of them is not finite, the lanes where
// |x| ≤ MaxFloat32 fails.
type finiteAcc struct {
	pg  *passGen
	acc reg.VecVirtual // nil until a partial is added
}

// add folds partial x (8 float32 lanes) into the accumulator.
func (f *finiteAcc) add(x reg.VecVirtual) {
	pg := f.pg
	if f.acc == nil {
		f.acc = pg.ymm()
		pg.mul(pg.cf(0), x, f.acc)
		return
	}
	pg.fmadd231(pg.cf(0), x, f.acc)
}

// flushSum adds r's float32 partial sum (in memory, or its register in the loop over full
// blocks) into its float64 sum, and to fin, and zeroes it.
func (pg *passGen) flushSum(r *ir.Node, fin *finiteAcc) {
	off := pg.stateOff(r)
	pm := pg.stateMem(r, field{"p", true}, off, 0)
	p, inReg := pg.sumRegs[r.ID]
	if !inReg {
		p = pg.ymm()
		pg.mov(pm, p)
	}
	fin.add(p)
	hs, a := pg.flushHalves(p)
	for h, ph := range hs {
		s := a.ymm()
		sm := pg.stateMem(r, field{"s", false}, off, 4*h)
		a.add(sm, ph, s)
		a.mov(s, sm)
	}
	if inReg {
		pg.mov(pg.cf(0), p)
	} else {
		pg.mov(pg.zero(), pm)
	}
}

// maxSumRegs is how many partial sums a small pass (smallBlock) holds in registers through
// its loop over full blocks.
const maxSumRegs = 3

// smallBlock is the most items a block's program has for its pass to hold partial sums in
// registers. In a small pass (a count of valid tokens, a sum of squares) the load, add and
// store of a sum in memory are most of a block and their chain through memory (a store
// forwarded to the next block's load, ≈ 8 cycles) bounds the loop; in a large one the
// registers are worth more to the block's own values: pinning them there cost spills
// (GRPO's token pass: 180 instructions a block → 185–194 with 1–4 sums in registers;
// GSPO's sequence-ratio gradient pass, 15 items: 29 → 21).
const smallBlock = 16

// sumsInRegs loads partial sums (plain sums and means) into registers before a pass's loop
// over full blocks: there each block's sum is one add, not a load, an add and a store. AVX2
// code does it for the first maxSumRegs of a small pass (smallBlock); 16-lane code, with 32
// registers, for any pass, with the logsumexps' partial sums of e^x among them and the
// variances' partials after them, up to maxWideSumRegs registers.
// Their slots stay fixed along the row (partial), so the registers are stored back once
// after the loop (storeSumRegs); the periodic flush reads and zeroes them.
func (pg *passGen) sumsInRegs() map[int]reg.VecVirtual {
	var regs map[int]reg.VecVirtual
	pg.freshOffsets()
	limit := maxSumRegs
	switch {
	case pg.wide:
		limit = maxWideSumRegs
	case len(pg.blockItems()) > smallBlock:
		return nil
	}
	for _, r := range pg.ps.Reduces {
		if len(regs) == limit {
			break
		}
		if !pg.partial(r) || (r.Op != ir.OpSum && r.Op != ir.OpMean && !(pg.wide && r.Op == ir.OpLogSumExp)) {
			continue
		}
		if regs == nil {
			regs = map[int]reg.VecVirtual{}
		}
		p := pg.ymm()
		pg.mov(pg.stateMem(r, field{"p", true}, pg.stateOff(r), 0), p)
		regs[r.ID] = p
	}
	pg.partRegs = nil
	if pg.wide { // the variances' partials too, 3 each
		for _, r := range pg.ps.Reduces {
			if pg.partial(r) && r.Op.Welford() && len(regs)+len(pg.partRegs)+len(welfordPartials) <= maxWideSumRegs {
				pg.holdPartials(r, pg.stateOff(r))
			}
		}
	}
	return regs // the loop's first block starts with fresh offsets (runItems)
}

// maxWideSumRegs is how many registers a 16-lane pass holds partials in, half of AVX-512's
// 32: a sum's partial otherwise goes through memory once a 16-lane block, a variance's
// three twice (its halves), each a store forwarded to the next block's load. Flat ClipPPO's
// loss pass at B = 64k (seven sums and two variances, 108 items): 183 → 165 instructions a
// block. With only 8, as when 16-lane code still had to fit avo's choice of registers into
// the low 16 (allocate), its variances stayed in memory.
const maxWideSumRegs = 16

// storeSumRegs stores the partial sums held in registers back into their slots, after the
// loop over full blocks.
func (pg *passGen) storeSumRegs() {
	pg.freshOffsets()
	for _, r := range pg.ps.Reduces {
		if p, ok := pg.sumRegs[r.ID]; ok {
			pg.mov(p, pg.stateMem(r, field{"p", true}, pg.stateOff(r), 0))
		}
		if _, ok := pg.heldPartial(r, "p"); ok {
			pg.releasePartials(r, pg.stateOff(r))
		}
	}
	pg.freshOffsets()
	pg.sumRegs, pg.partRegs = nil, nil
}

func (pg *passGen) hasPartials() bool {
	for _, r := range pg.ps.Reduces {
		if pg.partial(r) {
			return true
		}
	}
	return false
}
