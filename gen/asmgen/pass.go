package asmgen

import (
	"fmt"
	"slices"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// A pass is one assembly function: its arguments, its loop nest over the domain's dims (the
// last one walked in blocks of lanes), and what lives for the whole pass (scan carries,
// reduction state layout). What changes per block of lanes is in blockState (block.go).

// param is one pointer argument of a pass's assembly function and the Go expression the
// wrapper passes for it.
type param struct {
	name, goType, goExpr string
}

// redLayout says how a reduction's states are laid out: slots (result elements), each with
// lps lane states. When the pass's vector axis is kept by the reduction, lanes are slots
// (lps = 1); when it is reduced, each slot has one state per lane (lps = lanes).
type redLayout struct {
	slots, lps int
}

// prefetchElems is how far ahead a large pass prefetches: 256 elements (32 float32 blocks).
const prefetchElems = 256

// passGen emits one pass.
type passGen struct {
	*asm
	a64    *asm // float64 instructions, for reduction states
	e      *emitter
	wide   bool // the function is a 16-lane variant (its asm may be narrowed for a while: inNarrow)
	ps     *plan.Pass
	dom    ir.Shape
	params []param
	pnames map[string]bool // the params' names (paramName)
	pidx   map[string]int

	counters map[string]reg.GPVirtual // loop counters by dim: the outer dims, and inner dims inside their loops
	carries  map[int]reg.VecVirtual   // scans along the vector axis: the carry in a register

	invSlots map[string]operand.Mem // 1/n of known-count variances, per reduced axes (rowSetup)
	twins    map[int]*ir.Node       // logsumexp of 2·x → the logsumexp of x in the same pass (see twinOf)
	masks    map[int]*ir.Node       // condition node ID → its lane mask's block value (condmask.go)
	direct   map[int]bool           // nodes the block reads other than through their mask
	inner    map[int]operand.Mem    // inner reductions: their per-lane states, on the stack
	innerAt  map[string]int         // each inner state field's byte offset in its stack slot
	large    bool                   // the schedule prefetches ahead (plan.Schedule.Prefetch)
	nt       bool                   // this variant stores full blocks non-temporally where the schedule says so
	chunked  bool                   // the pass runs on a chunk of its schedule's chunked dim (lo, hi arguments)
	flat     bool                   // chunked along the vector axis: lo and hi are element indices of it

	hoisted    map[int]operand.Mem       // loop-invariant values computed before the loops, by node (hoist.go)
	invariants map[int]bool              // every node hoist computed, whose items the blocks skip
	rowItems   []bitem                   // the row invariants' program, run at the start of each row (rowHoist)
	keptTiles  map[int]*tile             // values kept across a block's inner loops, by node (keep.go)
	flushK     reg.GPVirtual             // in a full block of a pass with partials: the flush counter (flushEvery − the block's count since the flush)
	sumRegs    map[int]reg.VecVirtual    // in the loop over full blocks: partial sums held in registers (sumsInRegs), by node
	partRegs   map[string]reg.VecVirtual // 16-lane code, the same loop: variances' float32 partials in registers, by stateField
	halfExp    reg.VecVirtual            // 16-lane code: e^x of the half a logsumexp is folding (accumulateHalves)
	half       int                       // 16-lane code: 1 while folding a block's second half (accumulateHalves)
	slotShift  int                       // 16-lane code: 8 while folding lanes 8–15 into one state slot a lane
	slots      *alignedSlots             // 16-lane code: the 64-byte aligned spill slots (spillSlot)

	blockState
}

func (pg *passGen) esz() int {
	if pg.f64 {
		return 8
	}
	return 4
}

// vaxis is the pass's vector axis (the last domain dim), or "" for a scalar pass.
func (pg *passGen) vaxis() string {
	if len(pg.dom) == 0 {
		return ""
	}
	return pg.dom[len(pg.dom)-1].Name
}

// layout is the lane-state layout of a barrier reduction; an inner reduction's states are one
// per lane (each lane is one element of the domain).
func (pg *passGen) layout(r *ir.Node) redLayout {
	return redLayout{slots: r.Shape.Numel(), lps: pg.ps.Schedule.LanesPerSlot(pg.e.g, r)}
}

// param is the argument for key, registered on first use. Every argument is a pointer or
// an int, so argument i is at 8·i(FP).
func (pg *passGen) param(key, goType, goExpr string) operand.Mem {
	i, ok := pg.pidx[key]
	if !ok {
		i = len(pg.params)
		pg.pidx[key] = i
		if pg.pnames == nil {
			pg.pnames = map[string]bool{}
		}
		pg.params = append(pg.params, param{name: paramName(goExpr, pg.pnames), goType: goType, goExpr: goExpr})
	}
	return operand.NewParamAddr(pg.params[i].name, 8*i)
}

// ptr loads the pointer argument for key into a fresh register.
func (pg *passGen) ptr(key, goType, goExpr string) reg.GPVirtual {
	r := pg.gp()
	pg.c.MOVQ(pg.param(key, goType, goExpr), r)
	return r
}

// rowLo and rowHi are a chunked pass's arguments: its chunk is indices [rowLo, rowHi) of the
// chunked dim (rows of the first domain dim, or elements of a flat domain's vector axis).
func (pg *passGen) rowLo() operand.Mem { return pg.param("rows:lo", "int", "lo") }
func (pg *passGen) rowHi() operand.Mem { return pg.param("rows:hi", "int", "hi") }

// elemGo is the Go element type of the kernel.
func (pg *passGen) elemGo() string {
	if pg.f64 {
		return "float64"
	}
	return "float32"
}

// emitPass emits the assembly function for ps.
func (e *emitter) emitPass(ps *plan.Pass, nt bool) *passGen {
	pg := &passGen{asm: e.a, wide: e.a.zmm, a64: e.a.as64(), e: e, ps: ps, dom: ps.Domain, pidx: map[string]int{},
		counters: map[string]reg.GPVirtual{}, carries: map[int]reg.VecVirtual{}, inner: map[int]operand.Mem{}, innerAt: map[string]int{}}
	if ps.Schedule.Lanes != e.a.narrow().lanes() {
		panic(fmt.Sprintf("asmgen: pass %d is scheduled on %d lanes, AVX2 has %d", ps.Index, ps.Schedule.Lanes, e.a.narrow().lanes()))
	}
	pg.large = ps.Schedule.Prefetch
	pg.nt = nt
	pg.chunked = ps.Schedule.Chunks != nil || ps.Schedule.Row != nil // a row-local pass runs on sweeps of rows
	pg.flat = flatChunks(ps)
	pg.twins = e.twinsOf(ps)
	pg.invSlots = map[string]operand.Mem{}
	c := pg.c
	name := e.name("pass%dAVX2", ps.Index)
	if pg.wide {
		name = e.name("pass%dAVX512", ps.Index)
	}
	if nt {
		name += "NT"
	}
	c.Function(name)
	// Not NOSPLIT: a pass with many live values spills past the nosplit stack limit, and the
	// stack check costs a few instructions per call, not per block.
	c.Pragma("noescape")
	// The signature is known only once the body has asked for its pointers: emit the body
	// into the function first, then set the signature (avo reads it when it compiles).
	if pg.wide {
		pg.slots = pg.startSlots()
	}
	pg.body()
	if pg.wide {
		pg.slots.place(c)
	}
	if nt {
		c.SFENCE() // order the non-temporal stores before the caller reads the outputs
	}
	c.VZEROUPPER()
	c.RET()
	sig := "func("
	for i, p := range pg.params {
		if i > 0 {
			sig += ", "
		}
		sig += p.name + " " + p.goType
	}
	c.SignatureExpr(sig + ")")
	doc := fmt.Sprintf("%s is pass %d (%s) on %d %s lanes; see %s for the same loop in Go.", name, ps.Index, describePass(ps), pg.lanes(), pg.elemGo(), e.name("pass%dGo", ps.Index))
	if nt {
		doc += fmt.Sprintf(" Its full blocks store non-temporally: every stored buffer must be %d-byte aligned.", pg.vecBytes())
	}
	if pg.wide {
		doc += fmt.Sprintf(" Each block of 16 lanes folds into the reductions' 8-lane states as the two 8-lane blocks of %s would, in their order, so the results are %s's bit for bit.", e.name("pass%dAVX2", ps.Index), e.name("pass%dAVX2", ps.Index))
	}
	c.Doc(doc)
	return pg
}

// twinsOf pairs each logsumexp of 2·x in pass ps with its twin, the logsumexp of x over the
// same axes (ir.Facts.Twin), when that one is in the same pass: it then adds (e^x)² to the
// twin's float64 sums and needs no exp and no guard of its own.
func twinsOf(g *ir.Graph, ps *plan.Pass) map[int]*ir.Node {
	out := map[int]*ir.Node{}
	for _, r := range ps.Reduces {
		if base := g.Twin(r); base != nil && slices.Contains(ps.Reduces, base) {
			out[r.ID] = base
		}
	}
	return out
}

// twinOf returns the logsumexp whose 2·x twin r1 is, or nil.
func (pg *passGen) twinOf(r1 *ir.Node) *ir.Node {
	for _, r := range pg.ps.Reduces {
		if pg.twins[r.ID] == r1 {
			return r
		}
	}
	return nil
}

// ChunkVars lists the variables of the generated AVX2 glue that hold the chunk counts of
// the chunkable passes of Forward's plan p and ForwardBackward's fb (tests set them to run
// the chunked form on small batches).
func ChunkVars(p, fb *plan.Plan) []string {
	var out []string
	for _, k := range gogen.Kernels(p, fb) {
		e := &emitter{k: k}
		for _, ps := range k.Plan.Passes {
			if ps.Schedule.Chunks != nil && gogen.RunsPass(ps) { // a pair's chunks are its first's
				out = append(out, e.chunkVar(ps))
			}
		}
	}
	return out
}

func describePass(ps *plan.Pass) string {
	if ps.Scan != nil {
		dir := "forward"
		if ps.Scan.Reverse {
			dir = "reverse"
		}
		return fmt.Sprintf("%s scan along %s over %s", dir, ps.Scan.Axis, ps.Domain)
	}
	return "elementwise over " + ps.Domain.String()
}

// reverse reports whether the schedule runs the loop over dim backwards (a reverse scan's axis).
func (pg *passGen) reverse(dim string) bool {
	return pg.ps.Schedule.Reverse(dim)
}

// body emits the loop nest: the outer dims' loops (a reverse scan's axis backwards), and in
// the innermost the vector axis in blocks.
func (pg *passGen) body() {
	c := pg.c
	rank := len(pg.dom)
	if rank == 0 {
		pg.rem = 1
		pg.block()
		return
	}
	pg.hoist()
	var labels []string
	for d := 0; d < rank-1; d++ {
		name := pg.dom[d].Name
		r := pg.gp()
		pg.counters[name] = r
		pg.scanStart(d)
		switch {
		case d == 0 && pg.chunkRows():
			c.MOVQ(pg.rowLo(), r)
		case pg.reverse(name):
			c.MOVQ(operand.I32(int32(pg.dom[d].Size-1)), r)
		default:
			c.XORQ(r, r)
		}
		l := pg.newLabel(fmt.Sprintf("outer%d", d))
		c.Label(l)
		labels = append(labels, l)
	}
	pg.scanStart(rank - 1)
	pg.innerLoop()
	for d := rank - 2; d >= 0; d-- {
		name := pg.dom[d].Name
		switch {
		case pg.reverse(name):
			c.DECQ(pg.counters[name])
			c.JGE(operand.LabelRef(labels[d]))
		case d == 0 && pg.chunkRows():
			c.INCQ(pg.counters[name])
			c.CMPQ(pg.counters[name], pg.rowHi())
			c.JL(operand.LabelRef(labels[d]))
		default:
			c.INCQ(pg.counters[name])
			c.CMPQ(pg.counters[name], operand.I32(int32(pg.dom[d].Size)))
			c.JL(operand.LabelRef(labels[d]))
		}
	}
}

// scanStart starts the pass's scans along domain dim d from 0, before d's loop: a scan along
// the vector axis zeroes its carry register, one along an outer dim its carries in memory.
func (pg *passGen) scanStart(d int) {
	for _, n := range pg.ps.Compute {
		if n.Op != ir.OpScan || pg.dom.Index(n.Axes[0]) != d {
			continue
		}
		if d == len(pg.dom)-1 {
			pg.carries[n.ID] = pg.zero()
			continue
		}
		pg.zeroCarries(n)
	}
}

// chunkRows reports whether the pass runs on a chunk of rows of its first domain dim.
func (pg *passGen) chunkRows() bool { return pg.chunked && !pg.flat }

// innerLoop walks the vector axis in blocks of lanes: full blocks, then a masked tail; a
// reverse scan along it walks it backwards, tail first. A pass chunked along the vector axis
// walks the full blocks of its chunk [lo, hi) (lo a whole number of blocks; hi too, or the
// axis's end) and the tail only when its chunk ends the axis.
func (pg *passGen) innerLoop() {
	c := pg.c
	E := pg.dom[len(pg.dom)-1].Size
	L := pg.lanes()
	full, rem := E/L, E%L
	if pg.wide { // a flat batch's chunk of whole 16-lane blocks (flatChunks): no tail
		rem = 0
	}
	back := pg.reverse(pg.vaxis())
	partials := pg.hasPartials()
	var flushK reg.GPVirtual // the flush counter, once the loop over full blocks has one
	pg.rowSetup()
	pg.rowHoist()
	fullLoop := func() {
		if full == 0 {
			return
		}
		j := pg.gp()
		var k reg.GPVirtual
		if partials {
			k = pg.gp()
			c.MOVQ(operand.I32(pg.flushEvery()), k)
		}
		pg.inNarrow(func() { pg.sumRegs = pg.sumsInRegs() })
		l := pg.newLabel("blocks")
		var done string
		switch {
		case back:
			c.MOVQ(operand.I32(int32((full-1)*L)), j)
		case pg.flat:
			// A chunk may start past the last full block (the AVX2 rest of a chunk the
			// 16-lane variant ran up to a flush, wideFlat): then only the tail runs.
			done = pg.newLabel("chunkdone")
			c.MOVQ(pg.rowLo(), j)
			c.CMPQ(j, pg.rowHi())
			c.JGE(operand.LabelRef(done))
			if E%L != 0 {
				c.CMPQ(j, operand.I32(int32(full*L)))
				c.JGE(operand.LabelRef(done))
			}
		default:
			c.XORQ(j, j)
		}
		c.Label(l)
		pg.jReg, pg.rem, pg.flushK = j, 0, k
		pg.block()
		pg.flushK = nil
		if partials {
			skip := pg.newLabel("noflush")
			c.DECQ(k)
			c.JNZ(operand.LabelRef(skip))
			pg.freshOffsets()
			pg.inNarrow(func() { pg.flushPartials(pg.blocksSinceFlush(nil)) })
			c.MOVQ(operand.I32(pg.flushEvery()), k)
			c.Label(skip)
			flushK = k
		}
		switch {
		case back:
			c.SUBQ(operand.I32(int32(L)), j)
			c.JGE(operand.LabelRef(l))
		case pg.flat: // the chunk's end, or the last full block's
			c.ADDQ(operand.I32(int32(L)), j)
			c.CMPQ(j, operand.I32(int32(full*L)))
			c.JGE(operand.LabelRef(done))
			c.CMPQ(j, pg.rowHi())
			c.JL(operand.LabelRef(l))
			c.Label(done)
		default:
			c.ADDQ(operand.I32(int32(L)), j)
			c.CMPQ(j, operand.I32(int32(full*L)))
			c.JL(operand.LabelRef(l))
		}
		pg.inNarrow(pg.storeSumRegs)
		pg.jReg = nil
	}
	tail := func() {
		if rem == 0 {
			return
		}
		var skip string
		if pg.flat { // only the chunk that ends the axis has the tail
			skip = pg.newLabel("notail")
			c.CMPQ(pg.rowHi(), operand.I32(int32(E)))
			c.JNE(operand.LabelRef(skip))
		}
		pg.jReg, pg.jImm, pg.rem = nil, full*L, rem
		pg.block()
		pg.rem = 0
		if pg.flat {
			c.Label(skip)
		}
	}
	if back {
		tail()
		fullLoop()
	} else {
		fullLoop()
		tail()
	}
	if partials {
		pg.freshOffsets()
		pg.jReg, pg.jImm = nil, 0
		pg.inNarrow(func() {
			var nb reg.VecVirtual
			if flushK != nil {
				nb = pg.blocksSinceFlush(flushK)
			}
			pg.flushPartials(nb)
		})
	}
}

// blocksSinceFlush is how many full 8-lane blocks the float32 partials hold, as float64 in
// every lane: partialBlocks at a periodic flush (k nil), partialBlocks − k after the loop (k
// counts 16-lane blocks in 16-lane code: twice partialBlocks/2 − k).
func (pg *passGen) blocksSinceFlush(k reg.GPVirtual) reg.VecVirtual {
	v := pg.a64.ymm()
	if k == nil {
		pg.a64.mov(pg.cf64(partialBlocks), v)
		return v
	}
	c := pg.c
	t := pg.gp()
	c.MOVQ(operand.I32(pg.flushEvery()), t)
	c.SUBQ(k, t)
	if pg.wide {
		c.SHLQ(operand.U8(1), t)
	}
	x := pg.zeroX()
	c.VCVTSI2SDQ(t, x, x)
	c.VBROADCASTSD(x, v)
	return v
}
