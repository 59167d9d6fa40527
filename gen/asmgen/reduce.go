package asmgen

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// Reductions accumulate per lane: each lane holds the state of its own subset of the
// elements in memory arrays (views of one state buffer, see layoutStates) that the Go
// wrapper initialises before the loop and merges after it: with the runtime's Finish
// functions for the reductions with their own lane code (lanecode.go), with the reduction's
// description otherwise. In lane code, values that are exact in the kernel's element type
// (running max/min, argmax's best value) stay in it; sums are float64. A float32 kernel adds a reduction's 8 lanes into a float32 partial for up to partialBlocks
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
	if !pg.own(r) {
		var out []field
		for _, f := range ir.ReductionOf[operand.Op](r.Op).Fields {
			out = append(out, field{f, false})
		}
		return out
	}
	switch r.Op {
	case ir.OpSum, ir.OpMean:
		if pg.partial(r) {
			return []field{{"s", false}, {"p", true}}
		}
		if pg.innerF32(r) {
			return []field{{"p", true}}
		}
		return []field{{"s", false}}
	case ir.OpRMax, ir.OpRMin:
		return []field{{"m", true}}
	case ir.OpLogSumExp:
		fs := []field{{"s", false}}
		if pg.twins[r.ID] == nil { // a twin's range is its base's, doubled
			fs = append(fs, field{"ok", true})
		}
		if pg.partial(r) {
			fs = append(fs, field{"p", true})
		}
		return fs
	case ir.OpVar, ir.OpStd:
		if pg.partial(r) {
			return []field{{"n", false}, {"mean", false}, {"m2", false}, {"p", true}, {"pm2", true}, {"pc", true}}
		}
		return []field{{"n", false}, {"mean", false}, {"m2", false}}
	case ir.OpArgMax:
		return []field{{"best", true}, {"idx", false}}
	}
	panic("asmgen: not a reduction: " + r.Op.String())
}

// partialField reports whether state field f is a float32 partial (a sum's p; a variance's
// p, pm2 and centre pc): the kernel flushes it into the float64 fields, so it starts at 0 and
// the lane merge never reads it.
func partialField(f string) bool { return f == "p" || f == "pm2" || f == "pc" }

// partial reports whether r sums into a float32 partial (float32 kernels, when each slot's
// lanes are its own: the slot stays fixed along a row, where partials are flushed): a sum, a
// mean, a barrier logsumexp's Σ e^x (and its twin's Σ e^2x), whose guard keeps every term
// a normal float and whose flush sends a partial that overflowed to the Go kernel, or a
// barrier variance's Welford states of the blocks since the flush (welfordPartial).
func (pg *passGen) partial(r *ir.Node) bool {
	switch {
	case pg.f64 || !pg.own(r) || pg.layout(r).lps <= 1:
		return false
	case r.Op == ir.OpLogSumExp, r.Op.Welford():
		return !pg.e.g.InnerReduce(r)
	}
	return r.Op == ir.OpSum || r.Op == ir.OpMean
}

// maxInnerF32 is the most elements an inner sum adds in float32 (innerF32).
const maxInnerF32 = 32

// innerF32 reports whether r, a sum of at most maxInnerF32 terms of one sign over inner dims
// (a softmax's Σ_a e^x over a categorical's actions, a sum of squares over an ensemble) in a
// float32 kernel, adds them in float32, as the kernel's other float32 arithmetic, rather than
// widening each to float64: n terms of one sign summed in order are within
// (n−1)·2^-24 ≤ 1.9e-6 of their exact sum, relative (Higham, Accuracy and Stability of
// Numerical Algorithms, §4.2), under the 5e-6 the generated float32 tests hold, and each
// iteration costs one add instead of two conversions and two adds. The value-range facts
// give the sign (e^x ≥ 0; a softmax's Σ e^s·s has s = z − max z ≤ 0). Terms of either sign
// keep float64: their sum may cancel to far below Σ|term|.
func (pg *passGen) innerF32(r *ir.Node) bool { return !pg.f64 && innerF32(pg.e.g, r) }

// innerF32 is the method's test for a float32 kernel g.
func innerF32(g *ir.Graph, r *ir.Node) bool {
	if g.GenericReductions || laneCode[r.Op] == "" || r.Op != ir.OpSum && r.Op != ir.OpMean || !g.InnerReduce(r) {
		return false
	}
	x := r.Args[0]
	iv := g.Range(x)
	oneSign := iv.Lo >= 0 || iv.Hi <= 0 || x.Op == ir.OpMul && x.Args[0] == x.Args[1]
	return oneSign && x.Shape.Numel()/r.Shape.Numel() <= maxInnerF32
}

// knownCount reports whether r's elements arrive in lockstep across lanes (a barrier
// reduction over outer axes only, accumulated once per index), so the Welford count is the
// same for every lane and known per block.
func (pg *passGen) knownCount(r *ir.Node) bool {
	g := pg.e.g
	return pg.own(r) && r.Op.Welford() && !g.InnerReduce(r) && pg.layout(r).lps == 1 && len(g.InnerPart(r.Args[0].Shape)) == 0
}

// stateMem addresses element off (+disp elements; nil off is 0) of r's state array f. All
// state arrays of a package live in one buffer (avxState.buf) at offsets fixed by the
// generator, so one pointer, loaded once per block, reaches them all.
//
// An inner reduction's states are the current block's lanes only, on the stack (pg.inner)
// when they are not in registers (stateOp); its logsumexp guard ("ok") is the pass's, in the
// state buffer like a barrier reduction's.
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
	if f.name != "ok" { // the guard is the reduction's, not a slot's
		disp += pg.slotShift
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

// flushHalves widens a float32 partial for its flush into float64 and returns the asm of the
// flush's float64 operations: the two YMM halves of halves with as64, or in a 16-lane
// function one ZMM of all 8 lanes with as64x8 (AVX-512 F), on which each operation is the
// AVX2 flush's, operands in the same order, on both halves at once: the same bits.
func (pg *passGen) flushHalves(x reg.VecVirtual) ([]reg.VecVirtual, *asm) {
	if !pg.wide {
		return pg.halves(x), pg.a64
	}
	z := pg.c.ZMM()
	pg.c.VCVTPS2PD(x, z)
	return []reg.VecVirtual{z}, pg.a64.as64x8()
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

// laneAcc is what accumulate's forms share: r's state arrays at the current block and the
// tail masks (nil for a whole block).
type laneAcc struct {
	pg    *passGen
	r     *ir.Node
	off   reg.GPVirtual
	mask  reg.VecVirtual   // the tail's lanes, element type
	masks []reg.VecVirtual // the same as float64 halves
}

// at is float64 field f's half h; atE is element-type field f: memory, or an inner
// reduction's register.
func (l *laneAcc) at(f string, h int) operand.Op {
	return l.pg.stateOp(l.r, field{f, false}, l.off, 4*h)
}
func (l *laneAcc) atE(f string) operand.Op { return l.pg.stateOp(l.r, field{f, true}, l.off, 0) }

// commit64 stores a new float64 state half, keeping the old one in tail lanes.
func (l *laneAcc) commit64(f string, h int, v reg.VecVirtual) {
	a := l.pg.a64
	if l.masks != nil {
		old := a.ymm()
		a.mov(l.at(f, h), old)
		a.blend(l.masks[h], v, old, v)
	}
	a.mov(v, l.at(f, h))
}

// commitE stores a new element-type state, keeping the old one in tail lanes.
func (l *laneAcc) commitE(f string, v reg.VecVirtual) {
	pg := l.pg
	if l.mask != nil {
		old := pg.ymm()
		pg.mov(l.atE(f), old)
		pg.blend(l.mask, v, old, v)
	}
	pg.mov(v, l.atE(f))
}

// accumulate folds x, the reduction's argument at the current block, into r's lane states:
// with the hand-written lane code of r's op (laneCode), or its description.
func (pg *passGen) accumulate(r *ir.Node, x reg.VecVirtual) {
	if pg.zmm && !pg.e.g.InnerReduce(r) { // an inner reduction's states are the block's 16 lanes
		pg.accumulateHalves(r, x)
		return
	}
	if p := pg.sumRegs[r.ID]; p != nil && pg.rem == 0 {
		pg.add(p, x, p)
		return
	}
	l := &laneAcc{pg: pg, r: r, off: pg.stateOff(r)}
	if pg.rem > 0 {
		l.mask = pg.tailMask()
		l.masks = pg.maskHalves(l.mask)
	}
	if !pg.own(r) {
		l.generic(x)
		return
	}
	if l.mask != nil && (r.Op == ir.OpSum || r.Op == ir.OpMean) {
		// Sums: zero the tail lanes (a NaN there would survive a blend-free add).
		z := pg.ymm()
		pg.and(l.mask, x, z)
		x = z
	}
	switch r.Op {
	case ir.OpSum, ir.OpMean:
		l.sum(x)
	case ir.OpRMax, ir.OpRMin:
		if m := pg.stateReg(r, "m", 0); m != nil && l.mask == nil {
			pg.fold(r, m, x, m)
			return
		}
		m := pg.ymm()
		pg.mov(l.atE("m"), m)
		pg.fold(r, m, x, m)
		l.commitE("m", m)
	case ir.OpLogSumExp:
		l.logSumExp(x)
	case ir.OpVar, ir.OpStd:
		l.welford(x)
	case ir.OpArgMax:
		l.argMax(x)
	}
}

// generic folds x into the lane states with r's description (ir.ReductionOf) on float64
// halves: every field float64, tail lanes keeping their states.
func (l *laneAcc) generic(x reg.VecVirtual) {
	red := ir.ReductionOf[operand.Op](l.r.Op)
	o := vecOps{l.pg.a64}
	var idx []reg.VecVirtual
	for h, xh := range l.pg.halves(x) {
		st := make([]operand.Op, len(red.Fields))
		for i, f := range red.Fields {
			st[i] = l.at(f, h)
		}
		one := red.Single(o, xh, func() operand.Op {
			if idx == nil {
				idx = l.pg.indexHalves(l.r.Axes[0])
			}
			return idx[h]
		})
		merged := red.Merge(o, st, one)
		vs := make([]reg.VecVirtual, len(merged)) // every field read before any is stored
		for i, v := range merged {
			vs[i] = o.r(v)
		}
		for i, v := range vs {
			l.commit64(red.Fields[i], h, v)
		}
	}
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
// domain, so the states are one per lane, in registers held through the loop where they fit
// (innerRegCount, regs.canPin), else on the stack: Init fills them before the loop,
// accumulate (the same code as a barrier reduction's, on these states) folds each iteration,
// and innerFinish turns them into the block's value after the loop. A max or min of a tile
// alone in its loop is folded pairwise instead (tileReduce).

// identity is the starting value of r's state field f: its description's (ir.ReductionOf),
// 0 for a float32 partial sum. Argmax's lane code starts its index at 0: a lane that sees
// every index of its row and never takes an element (all −inf) keeps the first index, as
// torch.argmax does, and a lane left at 0 loses every lane merge (FinishArgMax) to one that
// took an element.
func (pg *passGen) identity(r *ir.Node, f string) float64 {
	if pg.own(r) && (partialField(f) || r.Op == ir.OpArgMax && f == "idx") {
		return 0
	}
	red := ir.ReductionOf[operand.Op](r.Op)
	for i, name := range red.Fields {
		if name == f {
			return red.Identity[i]
		}
	}
	panic(fmt.Sprintf("asmgen: %s has no state field %q", r.Op, f))
}

// innerInit sets r's lane states to the identity, in registers (innerInRegs) or on the
// stack, allocating the stack slot on first use. k is the Init item's position.
func (pg *passGen) innerInit(k int, r *ir.Node) {
	if n := pg.innerRegCount(r); n > 0 && pg.regs.canPin(n, pg.need(k, pg.finishAt(k, r))) {
		pg.regs.makeRoom(k, n, nil)
		pg.regs.pinned += n
		for _, f := range pg.fields(r) {
			if f.elem {
				v := pg.ymm()
				pg.mov(pg.cf(pg.identity(r, f.name)), v)
				pg.innerRegs[stateField(r, f.name)] = []reg.VecVirtual{v}
				continue
			}
			var hs []reg.VecVirtual
			for range pg.nHalves() {
				v := pg.ymm()
				pg.a64.mov(pg.cf64(pg.identity(r, f.name)), v)
				hs = append(hs, v)
			}
			pg.innerRegs[stateField(r, f.name)] = hs
		}
		return
	}
	if _, ok := pg.inner[r.ID]; !ok {
		size := 0
		for _, f := range pg.fields(r) {
			if f.name == "ok" {
				continue
			}
			pg.innerAt[stateField(r, f.name)] = size
			size += 64
		}
		// 64 bytes a field: in 16-lane code one aligned slot each (elem fields only: wideEligible)
		pg.inner[r.ID] = pg.vecSlots(size / pg.vecBytes())
	}
	for _, f := range pg.fields(r) {
		if f.name == "ok" {
			continue
		}
		id := pg.identity(r, f.name)
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

// finishAt is the position of the Finish item of r after position k.
func (pg *passGen) finishAt(k int, r *ir.Node) int {
	for j := k; j < len(pg.items); j++ {
		if it := pg.items[j]; it.kind == plan.Finish && it.n == r {
			return j
		}
	}
	return len(pg.items) - 1
}

// innerRegCount is how many registers an inner reduction's states take when they are held in
// registers through its loop, sparing a store and a reload per iteration (and the
// store-forwarding latency on the loop-carried chain): those of a reduction with its own lane
// code and at most 3 state vectors (max, a sum, Σ e^x with Σ e^x·x). 0 when they stay on
// the stack: a logsumexp (its guard, and a twin sharing its states, are in memory) or a
// larger state.
func (pg *passGen) innerRegCount(r *ir.Node) int {
	if !pg.own(r) || r.Op == ir.OpLogSumExp {
		return 0
	}
	n := 0
	for _, f := range pg.fields(r) {
		if f.elem {
			n++
		} else {
			n += pg.nHalves()
		}
	}
	if n > 3 {
		return 0
	}
	return n
}

// stateOp is stateMem, or the register holding that state vector (an inner reduction's, see
// innerInit; a variance's partial in a 16-lane loop, sumsInRegs).
func (pg *passGen) stateOp(r *ir.Node, f field, off reg.GPVirtual, disp int) operand.Op {
	if p, ok := pg.partRegs[stateField(r, f.name)]; ok {
		return p
	}
	if hs, ok := pg.innerRegs[stateField(r, f.name)]; ok {
		if f.elem {
			return hs[0]
		}
		return hs[disp/4]
	}
	return pg.stateMem(r, f, off, disp)
}

// stateReg is the register holding r's state vector f (half h), or nil when it is in memory.
func (pg *passGen) stateReg(r *ir.Node, f string, h int) reg.VecVirtual {
	if hs, ok := pg.innerRegs[stateField(r, f)]; ok {
		return hs[h]
	}
	return nil
}

// innerRelease gives back the registers of r's states once its value is computed.
func (pg *passGen) innerRelease(r *ir.Node) {
	for _, f := range pg.fields(r) {
		if hs, ok := pg.innerRegs[stateField(r, f.name)]; ok {
			pg.regs.pinned -= len(hs)
			delete(pg.innerRegs, stateField(r, f.name))
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
	defer pg.innerRelease(r)
	a := pg.a64
	at := func(f string, h int) operand.Op { return pg.stateOp(r, field{f, false}, nil, 4*h) }
	var hs []reg.VecVirtual
	if !pg.own(r) {
		red := ir.ReductionOf[operand.Op](r.Op)
		o := vecOps{a}
		for h := range pg.nHalves() {
			st := make([]operand.Op, len(red.Fields))
			for i, f := range red.Fields {
				st[i] = at(f, h)
			}
			hs = append(hs, o.r(red.Finish(o, st, r.Corr)))
		}
		return pg.fromHalves(hs)
	}
	switch r.Op {
	case ir.OpRMax, ir.OpRMin:
		v := pg.ymm()
		pg.mov(pg.stateOp(r, field{"m", true}, nil, 0), v)
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
		if pg.innerF32(r) {
			v := pg.ymm()
			pg.mov(pg.stateOp(r, field{"p", true}, nil, 0), v)
			if r.Op == ir.OpMean {
				pg.div(pg.cf(float64(n)), v, v)
			}
			return v
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
	case ir.OpVar, ir.OpStd:
		for h := range pg.nHalves() {
			n, v := a.ymm(), a.ymm()
			a.mov(at("n", h), n)
			a.sub(a.cf(float64(r.Corr)), n, n)
			a.mov(at("m2", h), v)
			a.div(n, v, v)
			if r.Op == ir.OpStd {
				a.sqrt(v, v) // the root of the float64 variance, as runtime.FinishStd
			}
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

// fold is z = r(x, y) for a max or min reduction r: maxNaN or minNaN, but a plain VMAXPS
// for a log-sum-exp's stabiliser (ir.Node.Stabiliser), whose NaN and signed zeros do not
// matter.
func (pg *passGen) fold(r *ir.Node, x, y operand.Op, z reg.VecVirtual) {
	switch {
	case r.Op == ir.OpRMin:
		pg.minNaN(x, y, z)
	case !r.Stabiliser:
		pg.maxNaN(x, y, z)
	case pg.f64:
		pg.c.VMAXPD(x, y, z)
	default:
		pg.c.VMAXPS(x, y, z)
	}
}
