package asmgen

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// The AVX-512 variants. On a CPU with AVX-512 (F, DQ, VL: runtime.AVX512), a float32 pass
// of the forms wideEligible lists runs a variant of its AVX2 function on 16 lanes:
// blocks of 16 elements in ZMM registers, compares into mask registers (VPMOVM2D spreads
// them back into lanes, so a where is still an and, or a bitwise select: selectBits),
// VRNDSCALEPS for VROUNDPS, constants read by embedded broadcast (broadcastConsts), spill
// slots 64-byte aligned (alignedSlots), all 32 vector registers for the block's values.
// Elementwise ops round alike on 8 and 16 lanes, and each 16-lane block folds into the
// reductions' 8-lane states as two 8-lane blocks in their order (accumulateHalves), flushing
// float32 partials after the same elements: results are the AVX2 function's bit for bit, and
// the AVX2 glue (chunks, merges, guards, fallbacks) serves both. A machine that issues
// 512-bit operations at the rate of 256-bit ones (Zen 5, server Intel) then does twice the
// arithmetic per instruction, which is what the compute-bound token losses need to reach
// the copy limit.

// roundEven rounds x's float32 lanes to integers, ties to even, in place (VROUNDPS; AVX-512's
// VRNDSCALEPS with scale 0 in 16-lane code, the same rounding).
func (a *asm) roundEven(x operand.Op) {
	if a.zmm {
		a.c.VRNDSCALEPS(operand.Imm(0), x, x)
		return
	}
	a.c.VROUNDPS(operand.Imm(0), x, x)
}

// pand and por are the bitwise and / or of dword lanes (VPANDD/VPORD in 16-lane code).
func (a *asm) pand(x, y, z operand.Op) {
	if a.zmm {
		a.c.VPANDD(x, y, z)
		return
	}
	a.c.VPAND(x, y, z)
}

func (a *asm) por(x, y, z operand.Op) {
	if a.zmm {
		a.c.VPORD(x, y, z)
		return
	}
	a.c.VPOR(x, y, z)
}

// pcmpd sets z's dword lanes to all ones where y > x (gt) or y == x, else 0 (VPCMPGTD and
// VPCMPEQD; in 16-lane code through a mask register, as cmp).
func (a *asm) pcmpd(gt bool, x, y, z operand.Op) {
	switch {
	case a.zmm:
		k := a.c.K()
		if gt {
			a.c.VPCMPGTD(x, y, k)
		} else {
			a.c.VPCMPEQD(x, y, k)
		}
		a.c.VPMOVM2D(k, z)
	case gt:
		a.c.VPCMPGTD(x, y, z)
	default:
		a.c.VPCMPEQD(x, y, z)
	}
}

// flushEvery is how many blocks of the loop over full blocks a float32 partial absorbs
// between flushes: partialBlocks 8-lane blocks, as 16-lane blocks in a 16-lane function.
func (pg *passGen) flushEvery() int {
	if pg.wide {
		return partialBlocks / 2
	}
	return partialBlocks
}

// A 16-lane block is two 8-lane ones: partialBlocks must be even.
var _ [1 - partialBlocks%2]struct{}

// inNarrow runs f with pg emitting 8-lane code: in 16-lane code, what works on the
// reductions' 8-lane states (accumulating a half, flushing partials, the guard).
func (pg *passGen) inNarrow(f func()) {
	if !pg.wide || !pg.zmm {
		f()
		return
	}
	w := pg.asm
	pg.asm = w.narrow()
	defer func() { pg.asm = w }()
	f()
}

// halvesOf splits a 16-lane register into its lanes 0–7 (its low YMM) and 8–15.
func (pg *passGen) halvesOf(x reg.VecVirtual) (lo, hi reg.VecVirtual) {
	hi = pg.c.YMM()
	pg.c.VEXTRACTF64X4(operand.Imm(1), x, hi)
	return x.AsY().(reg.VecVirtual), hi
}

// halvesInOrder is halvesOf in the order the AVX2 pass walks the two 8-lane blocks: lanes
// 8–15 first along a vector axis walked backwards (a reverse scan's).
func (pg *passGen) halvesInOrder(x reg.VecVirtual) (first, second reg.VecVirtual) {
	lo, hi := pg.halvesOf(x)
	if pg.reverse(pg.vaxis()) {
		return hi, lo
	}
	return lo, hi
}

// accumulateHalves folds a 16-lane block x into r's 8-lane states as two 8-lane blocks, in
// the order the AVX2 pass folds the same elements (halvesInOrder), so every state, and
// every result, is the AVX2 pass's bit for bit. A logsumexp's e^x (the pass's own, or its
// own exp) is a value of the 16-lane block: computed on 16 lanes, folded by halves with x.
func (pg *passGen) accumulateHalves(r *ir.Node, x reg.VecVirtual) {
	switch {
	case (r.Op == ir.OpSum || r.Op == ir.OpMean) && pg.partial(r):
		first, second := pg.halvesInOrder(x)
		pg.inNarrow(func() { pg.addPair(r, first, second) })
		return
	case pg.guarded(r) && pg.partial(r):
		pg.logSumExpWide(r, x)
		return
	}
	first, second := pg.halvesInOrder(x)
	var es [2]reg.VecVirtual
	if pg.guarded(r) {
		es[0], es[1] = pg.halvesInOrder(pg.expOf(r))
	}
	// Where each lane is its own result slot (a reduction over outer dims only, its states
	// an array along the vector axis), lanes 8–15 fold into the states 8 slots on.
	shift := [2]int{}
	if pg.layout(r).lps == 1 {
		shift = [2]int{0, 8}
		if pg.reverse(pg.vaxis()) {
			shift = [2]int{8, 0}
		}
	}
	pg.inNarrow(func() {
		held := pg.holdWelford(r)
		for h, xh := range []reg.VecVirtual{first, second} {
			pg.halfExp, pg.half, pg.slotShift = es[h], h, shift[h]
			pg.accumulate(r, xh)
		}
		pg.halfExp, pg.half, pg.slotShift = nil, 0, 0
		held()
	})
}

// holdWelford loads a variance's float32 partials (p, pm2, the centre pc) into registers
// for the two halves of a 16-lane block, when they are in memory, and returns what stores
// them back: one load and one store a block, not one per half, and the second half's chain
// does not wait on a store forwarded to a load (addPair does the same for sums).
func (pg *passGen) holdWelford(r *ir.Node) func() {
	if _, held := pg.heldPartial(r, "p"); !r.Op.Welford() || !pg.partial(r) || held {
		return func() {}
	}
	off := pg.stateOff(r)
	pg.holdPartials(r, off)
	return func() { pg.releasePartials(r, off) }
}

// welfordPartials are a variance's float32 partial fields (fields).
var welfordPartials = []string{"p", "pm2", "pc"}

// holdPartials loads variance r's partials at state offset off into registers (partRegs),
// where stateOp finds them.
func (pg *passGen) holdPartials(r *ir.Node, off reg.GPVirtual) {
	if pg.partRegs == nil {
		pg.partRegs = map[string]reg.VecVirtual{}
	}
	for _, f := range welfordPartials {
		v := pg.ymm()
		pg.mov(pg.stateMem(r, field{f, true}, off, 0), v)
		pg.partRegs[stateField(r, f)] = v
	}
}

// heldPartial is the register holding variance r's partial field f, when holdPartials put
// it in one.
func (pg *passGen) heldPartial(r *ir.Node, f string) (reg.VecVirtual, bool) {
	v, ok := pg.partRegs[stateField(r, f)]
	return v, ok
}

// releasePartials stores the registers holdPartials loaded back and forgets them.
func (pg *passGen) releasePartials(r *ir.Node, off reg.GPVirtual) {
	for _, f := range welfordPartials {
		pg.mov(pg.partRegs[stateField(r, f)], pg.stateMem(r, field{f, true}, off, 0))
		delete(pg.partRegs, stateField(r, f))
	}
}

// foldAnd is the and of a 16-lane mask's two halves, an 8-lane mask.
func (pg *passGen) foldAnd(m reg.VecVirtual) reg.VecVirtual {
	lo, hi := pg.halvesOf(m)
	z := pg.c.YMM()
	pg.c.VANDPS(lo, hi, z)
	return z
}

// flatChunks reports whether pass ps runs on chunks of whole 16-element blocks of a flat
// batch (plan.Chunking.Align): the glue runs the tail's chunk with the 16-lane variant up to
// its last flush and the AVX2 pass from there (emitter.wideFlat); the two leave the same
// states, so a chunk may mix them.
func flatChunks(ps *plan.Pass) bool { return ps.Schedule.Chunks != nil && len(ps.Domain) == 1 }

// wideEligible reports whether pass ps of the kernel gets a 16-lane variant: a float32 pass
// over a vector axis of whole 16-element blocks (no tail; or, without a scan, a flat batch's
// chunks: flatChunks). A pass the plan stores non-temporally gets that variant only
// (pass%dAVX512NT), for buffers aligned to 64 bytes: with misaligned ones it runs its AVX2
// function, so no 16-lane code runs only on a user's misaligned sub-slices, unseen by tests.
// A scan runs along the vector axis or an outer dim, not a shift. Floats may be read and
// written at any lane stride (contiguous, broadcast, or rows of inner dims: tiles, gathers, scatters), bools and
// int64 indices contiguously or broadcast; a gather reads floats only; an iota runs along
// inner dims (its lanes all equal); an inner reduction (over inner dims, inside each block)
// keeps one float32 state per lane (max, min, a short sum of one sign: innerF32); and a
// reduction over the vector axis has its own lane code with one state per 8-lane lane (sum,
// mean, max, min, logsumexp, variance): the forms whose 8-lane folding is written here.
func wideEligible(g *ir.Graph, ps *plan.Pass) bool {
	if g.DType == ir.F64 || len(ps.Domain) == 0 || g.GenericReductions {
		return false
	}
	vaxis := ps.Domain[len(ps.Domain)-1].Name
	if ps.Domain[len(ps.Domain)-1].Size%16 != 0 && (!flatChunks(ps) || ps.Scan != nil) {
		return false
	}
	stride := func(s ir.Shape) int {
		i := s.Index(vaxis)
		if i < 0 {
			return 0
		}
		return s.Strides()[i]
	}
	if ps.Schedule.NonTemporal() && ps.Domain[len(ps.Domain)-1].Size%16 != 0 {
		// A flat batch's chunks: a stored row after the first (a [Q, B] output's) would start
		// 32-byte aligned only, and VMOVNTPS on a ZMM needs 64.
		for _, n := range ps.Stores {
			if n.Shape.Index(vaxis) > 0 {
				return false
			}
		}
	}
	for _, n := range ps.Loads {
		switch {
		case n.Op == ir.OpIota && stride(n.Shape) != 0:
			return false
		case n.Op == ir.OpInput && n.Input.Kind != ir.Float && stride(n.Shape) > 1:
			return false
		}
	}
	for _, n := range ps.Compute {
		switch {
		case n.Op == ir.OpGather:
			if x := n.Args[0]; x.Op == ir.OpInput && x.Input.Kind != ir.Float {
				return false
			}
		case n.Op == ir.OpScan:
		case n.Op.Class() != ir.Elementwise:
			return false
		}
	}
	for _, r := range ps.Inner {
		if !innerF32(g, r) && r.Op != ir.OpRMax && r.Op != ir.OpRMin {
			return false
		}
	}
	for _, r := range ps.Reduces {
		switch r.Op {
		case ir.OpSum, ir.OpMean, ir.OpRMax, ir.OpRMin, ir.OpLogSumExp, ir.OpVar, ir.OpStd:
		default:
			return false
		}
	}
	return true
}

// selectBits is z = (m & x) | (^m & y) in one VPTERNLOGD, which overwrites its first operand
// (A): z itself when it is one of m, x, y, else z after a copy of m. Of the other two, B
// must be a register and C may be memory. m is a lane mask (all ones or all zeros in every
// lane: a compare's, VPMOVM2D's), so this is VBLENDVPS's select, which reads only m's sign
// bits. (VBLENDMPS would need the mask moved into a mask register first, and avo counts its
// destination as read.)
func (a *asm) selectBits(m, x, y, z operand.Op) {
	ops := []operand.Op{m, x, y}
	dst := -1
	for i, o := range ops {
		if sameReg(o, z) {
			dst = i
			break
		}
	}
	if dst < 0 {
		a.mov(m, z)
		dst = 0
	}
	var rest []int
	for i := range ops {
		if i != dst {
			rest = append(rest, i)
		}
	}
	b, c := rest[0], rest[1]
	if _, ok := ops[b].(reg.Register); !ok {
		b, c = c, b
	}
	if _, ok := ops[b].(reg.Register); !ok {
		t := a.ymm()
		a.mov(ops[b], t)
		ops[b] = t
	}
	pos := make([]int, 3) // each operand's position: 0 = A, 1 = B, 2 = C
	pos[dst], pos[b], pos[c] = 0, 1, 2
	a.c.VPTERNLOGD(operand.Imm(uint64(selectImm(pos[0], pos[1], pos[2]))), ops[c], ops[b], z)
}

// selectImm is VPTERNLOGD's truth table for m ? x : y, bitwise, with m, x and y in operand
// positions pm, px, py (0 = A, the destination, 1 = B, 2 = C): bit i of the table is the
// result for A, B, C = bits 2, 1, 0 of i.
func selectImm(pm, px, py int) uint8 {
	var imm uint8
	for i := range 8 {
		bit := func(p int) int { return i >> (2 - p) & 1 }
		v := bit(py)
		if bit(pm) == 1 {
			v = bit(px)
		}
		imm |= uint8(v) << i
	}
	return imm
}

// sameReg reports whether operand o is register r.
func sameReg(o, r operand.Op) bool {
	x, ok := o.(reg.Register)
	y, ok2 := r.(reg.Register)
	return ok && ok2 && x.ID() == y.ID()
}

// WidePasses names the 16-lane AVX-512 variants the AVX2 backend emits for Forward's plan p
// and ForwardBackward's fb (none: the package has no kernels_avx512_amd64.s).
func WidePasses(p, fb *plan.Plan) []string {
	var out []string
	for _, k := range gogen.Kernels(p, fb) {
		e := &emitter{k: k}
		for _, ps := range k.Plan.Passes {
			if wideEligible(k.Plan.Graph, ps) {
				out = append(out, e.name("pass%dAVX512", ps.Index)+map[bool]string{true: "NT"}[ps.Schedule.NonTemporal()])
			}
		}
	}
	return out
}

// alignedSlots are a 16-lane function's spill slots: 64 bytes each, from a base register the
// function aligns to 64 bytes on entry. Go aligns the stack to 8 bytes only, and a ZMM load or
// store that crosses a cache line costs two.
type alignedSlots struct {
	base reg.GPVirtual
	lea  *avoir.Instruction // base = the area's address + 63, patched once its place is known
	n    int
}

// startSlots emits the base's computation at the function's entry.
func (pg *passGen) startSlots() *alignedSlots {
	s := &alignedSlots{base: pg.gp()}
	lea, err := x86.LEAQ(operand.NewStackAddr(0), s.base)
	if err != nil {
		panic(err)
	}
	s.lea = lea
	pg.c.Instruction(lea)
	pg.c.ANDQ(operand.I32(-64), s.base)
	return s
}

// nextN is n new slots, one after the other.
func (s *alignedSlots) nextN(n int) operand.Mem {
	s.n += n
	return operand.Mem{Base: s.base, Disp: 64 * (s.n - n)}
}

// place reserves the slots in the frame, with room to align them, and points the base there.
func (s *alignedSlots) place(c *build.Context) {
	area := c.AllocLocal(64*s.n + 64)
	s.lea.Operands[0] = operand.NewStackAddr(area.Disp + 63)
}

// addPair adds lo, then hi (the halves in their order), to r's float32 partial, as two 8-lane
// blocks would: in its register (sumsInRegs), or in memory with one load and one store, the
// partial's chain from one block to the next going through memory (a store forwarded to the
// next load) once per 16 lanes.
func (pg *passGen) addPair(r *ir.Node, lo, hi reg.VecVirtual) {
	if p := pg.sumRegs[r.ID]; p != nil {
		pg.add(p, lo, p)
		pg.add(p, hi, p)
		return
	}
	pm := pg.stateMem(r, field{"p", true}, pg.stateOff(r), 0)
	p := pg.ymm()
	pg.add(pm, lo, p)
	pg.add(p, hi, p) // hi + p: hi the first source, as the AVX2 pass adds (a NaN's payload is the first source's)
	pg.mov(p, pm)
}

// logSumExpWide is logSumExp's fast path for a 16-lane block of a logsumexp with float32
// partials: the guard on 16 lanes, its halves anded into the 8-lane guard (an and in either
// order), e^x and its twin's (e^x)² added to the partials by halves (addPair).
func (pg *passGen) logSumExpWide(r *ir.Node, x reg.VecVirtual) {
	e := pg.expOf(r)
	in, _ := pg.lseGuard(r, x)
	ok := pg.foldAnd(in)
	elo, ehi := pg.halvesInOrder(e)
	pg.inNarrow(func() {
		pg.andInto(pg.stateMem(r, field{"ok", true}, nil, 0), ok)
		pg.addPair(r, elo, ehi)
		if tw := pg.twinOf(r); tw != nil {
			qlo, qhi := pg.ymm(), pg.ymm()
			pg.mul(elo, elo, qlo)
			pg.mul(ehi, ehi, qhi)
			pg.addPair(tw, qlo, qhi)
		}
	})
}

// firstLanesK is a mask register with lanes 0 to w−1 set: a 16-lane tile's masked row end.
func (pg *passGen) firstLanesK(w int) reg.Register { return pg.laneK(1<<w - 1) }

// laneK is a mask register with the lanes of bits set.
func (pg *passGen) laneK(bits uint16) reg.Register {
	t := pg.c.GP32()
	pg.c.MOVL(operand.U32(uint32(bits)), t)
	k := pg.c.K()
	pg.c.KMOVW(t, k)
	return k
}

// transpose16 is the 16×16 transpose of 16 ZMM registers: within each 128-bit quarter, the
// 4×4 transposes of AVX2's transpose (unpck, then shufps: q[4g+m]'s quarter j is column 4j+m
// of rows 4g…4g+3), then the quarters themselves 4×4 (VSHUFF32X4 twice): out[4j+m] is
// q[m], q[4+m], q[8+m], q[12+m]'s quarters j.
func (pg *passGen) transpose16(in []reg.VecVirtual) []reg.VecVirtual {
	c := pg.c
	t := make([]reg.VecVirtual, 16)
	for i := 0; i < 16; i += 2 {
		t[i], t[i+1] = pg.ymm(), pg.ymm()
		c.VUNPCKLPS(in[i+1], in[i], t[i])
		c.VUNPCKHPS(in[i+1], in[i], t[i+1])
	}
	q := make([]reg.VecVirtual, 16)
	for i := 0; i < 16; i += 4 {
		for j := 0; j < 2; j++ {
			q[i+2*j], q[i+2*j+1] = pg.ymm(), pg.ymm()
			c.VSHUFPS(operand.Imm(0x44), t[i+2+j], t[i+j], q[i+2*j])
			c.VSHUFPS(operand.Imm(0xEE), t[i+2+j], t[i+j], q[i+2*j+1])
		}
	}
	out := make([]reg.VecVirtual, 16)
	for m := 0; m < 4; m++ {
		u := make([]reg.VecVirtual, 4)
		for i := range u {
			u[i] = pg.ymm()
		}
		// u0 = q0's quarters 0 1, q1's 0 1; u1 = their quarters 2 3; u2, u3 the same of q2, q3
		// (q0…q3 here being q[m], q[4+m], q[8+m], q[12+m]).
		c.VSHUFF32X4(operand.Imm(0x44), q[4+m], q[m], u[0])
		c.VSHUFF32X4(operand.Imm(0xEE), q[4+m], q[m], u[1])
		c.VSHUFF32X4(operand.Imm(0x44), q[12+m], q[8+m], u[2])
		c.VSHUFF32X4(operand.Imm(0xEE), q[12+m], q[8+m], u[3])
		for j := 0; j < 4; j++ {
			out[4*j+m] = pg.ymm()
			imm := uint64(0x88) // quarters 0 and 2 of each source: j even
			if j%2 == 1 {
				imm = 0xDD
			}
			c.VSHUFF32X4(operand.Imm(imm), u[2+j/2], u[j/2], out[4*j+m])
		}
	}
	return out
}

// gatherAll is VGATHERDPS m into y on all 16 lanes (16-lane code has no tails), y's earlier
// value defined (the gather merges into it where its mask is clear).
func (pg *passGen) gatherAll(m operand.Mem, y reg.VecVirtual) {
	pg.c.VGATHERDPS(m, pg.firstLanesK(16), y)
}

// loadIndexWide is loadIndex in 16-lane code (full blocks only; a lane stride of 0 or 1:
// wideEligible): 16 adjacent int64 indices by two VCVTQQ2PS (AVX-512DQ), or one broadcast,
// each rounded to float32 as CVTSI2SSQ rounds it, so every lane is the AVX2 pass's.
func (pg *passGen) loadIndexWide(base, off reg.GPVirtual, stride int, x reg.VecVirtual) {
	c := pg.c
	if stride == 0 {
		t := pg.gp()
		c.MOVQ(elemMem(base, off, 8, 0), t)
		f := pg.zeroX()
		c.VCVTSI2SSQ(t, f, f)
		c.VBROADCASTSS(f, x)
		return
	}
	pg.prefetch(base, off, 8)
	hi := c.YMM()
	pg.mov(pg.cf(0), x) // x whole, before its halves (entryReads)
	c.VCVTQQ2PS(elemMem(base, off, 8, 0), x.AsY())
	c.VCVTQQ2PS(elemMem(base, off, 8, 8), hi)
	c.VINSERTF32X8(operand.Imm(1), hi, x, x)
}

// composeWide is one step of scanLanes's composition on a 16-lane block as two 8-lane ones:
// Cs, Bs = the maps of lanes idx (each within its half), the identity (1, 0) at the edge
// lanes (edge's bits), by merge- and zero-masked permutes.
func (pg *passGen) composeWide(idx [16]int, edge int, C, B, Cs, Bs reg.VecVirtual) {
	c := pg.c
	vals := make([]operand.Constant, 16)
	for i, j := range idx {
		vals[i] = operand.U32(uint32(j))
	}
	ix := pg.ymm()
	pg.mov(pg.data(fmt.Sprint("zperm", idx), vals), ix)
	k := pg.laneK(^uint16(edge))
	pg.mov(pg.cf(1), Cs)
	c.VPERMPS(C, ix, k, Cs)
	c.VPERMPS_Z(B, ix, k, Bs)
}

// scanHalves ends scanLanes on a 16-lane block, composed as two 8-lane blocks (composeWide):
// y = B + C·carry on each half in the order the AVX2 pass walks its blocks (lanes 8–15 first
// backwards), the carry passing from one to the other through the same lane; the same
// operations on the same values as the two AVX2 blocks, so the same bits.
func (pg *passGen) scanHalves(n *ir.Node, C, B reg.VecVirtual) reg.VecVirtual {
	Clo, Chi := pg.halvesOf(C)
	Blo, Bhi := pg.halvesOf(B)
	carry := pg.carries[n.ID].AsY().(reg.VecVirtual)
	cs, bs := []reg.VecVirtual{Clo, Chi}, []reg.VecVirtual{Blo, Bhi}
	if n.Reverse {
		cs, bs = []reg.VecVirtual{Chi, Clo}, []reg.VecVirtual{Bhi, Blo}
	}
	pg.inNarrow(func() {
		for h := range 2 {
			pg.applyCarry(n, cs[h], bs[h], carry)
		}
	})
	y := pg.ymm()
	pg.c.VINSERTF32X8(operand.Imm(1), Bhi, B, y) // B's lanes 0–7 are Blo's (its upper half zeroed)
	return y
}
