package asmgen

import (
	"fmt"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// blockState is what one block of lanes (one vector of the vector axis) is emitted with: its
// position, the offsets and values it has in registers.
type blockState struct {
	jReg  reg.GPVirtual // inner offset register (full blocks), nil in tails
	jImm  int           // inner offset (tails)
	rem   int           // valid lanes in a tail block, 0 in full blocks
	offs  map[string]reg.GPVirtual
	stReg reg.GPVirtual // the state buffer's address, loaded on first use in a block
	regs  *regs

	loopLabels []string                   // open inner loops' labels, innermost last
	savedOffs  []map[string]reg.GPVirtual // offsets known when each open loop started

	tiles     map[int]*tile       // a full block's transposed tensors, by node (tile.go)
	tileSlots map[int]operand.Mem // their stack slots, kept from block to block

	innerRegs map[string][]reg.VecVirtual // inner reductions' states held in registers, by stateField
	ends      map[int]int                 // each loop start's item position → its end's
	items     []bitem                     // the block's program (flatten)
}

// bitem is one step of a block's program, flattened: loops become a start and an end item
// around their body.
type bitem struct {
	kind  plan.StepKind // Loop marks a loop start; loopEnd its end
	end   bool          // the end of the loop started at loop
	n     *ir.Node
	loop  *plan.Block
	start int  // for a loop end: the position of its start
	save  bool // hoist's: store n's value in its slot (hoist.go)
	keep  bool // also store n's value into its kept tile (keep.go)
	kept  bool // a Load of n from its kept tile (keep.go)
}

// flatten lists a block's steps in order, each loop as start, body, end.
func flatten(bl *plan.Block, out []bitem) []bitem {
	for _, st := range bl.Steps {
		if st.Kind != plan.Loop {
			out = append(out, bitem{kind: st.Kind, n: st.Node})
			continue
		}
		start := len(out)
		out = append(out, bitem{kind: plan.Loop, loop: st.Block})
		out = flatten(st.Block, out)
		out = append(out, bitem{kind: plan.Loop, end: true, loop: st.Block, start: start})
	}
	return out
}

// block emits the pass's program for one vector of lanes. Values live in vector registers
// as long as they fit (regs.go); a loop over non-batch dims runs its body with what it reads
// from outside pinned in registers, a few of them (pinForLoop), and everything else in memory
// (spilled, or re-read where it is a load), since a register assignment cannot change from
// one iteration to the next.
func (pg *passGen) block() { pg.runItems(pg.blockItems()) }

// blockItems is the program of one block: the pass's body flattened, its stores last,
// without what hoist computed before the loops.
func (pg *passGen) blockItems() []bitem {
	return pg.skipHoisted(storesLast(flatten(pg.ps.Body, nil)))
}

// freshOffsets forgets the offsets and the state pointer computed so far: they are registers
// of the code that computed them, not defined where control arrives from elsewhere (a
// block's start, a flush after a branch, the code after a loop).
func (pg *passGen) freshOffsets() { pg.offs, pg.stReg = map[string]reg.GPVirtual{}, nil }

// runItems emits items as one block's program.
func (pg *passGen) runItems(items []bitem) {
	pg.freshOffsets()
	pg.innerRegs = map[string][]reg.VecVirtual{}
	pg.regs = &regs{vals: map[int]*value{}, pinned: len(pg.carries), a: pg.asm, alloc: pg.spillSlot}
	if held := len(pg.sumRegs) + len(pg.partRegs); pg.wide {
		pg.regs.partials = held
	} else {
		pg.regs.pinned += held
	}
	items = pg.keepAcrossLoops(items)
	pg.items = items
	if pg.masks == nil {
		pg.masks = map[int]*ir.Node{}
	}
	pg.direct = map[int]bool{}
	pg.countUses(items)
	pg.reloadHoisted()
	pg.setMaskReloads()
	pg.ends = map[int]int{}
	for k, it := range items {
		if it.kind == plan.Loop && it.end {
			pg.ends[it.start] = k
		}
	}
	pg.planTiles(items)
	for k := 0; k < len(items); k++ {
		if it := items[k]; it.kind == plan.Loop && !it.end {
			if end := pg.tileReduce(k, items); end >= 0 {
				pg.regs.release(end)
				k = end
				continue
			}
		}
		pg.item(k, items[k])
	}
	pg.flushTiles()
}

// steps calls f with the position of every item that is not a loop's start or end, and the
// number of loops around it.
func steps(items []bitem, f func(k, depth int)) {
	depth := 0
	for k, it := range items {
		switch {
		case it.kind == plan.Loop && !it.end:
			depth++
		case it.kind == plan.Loop:
			depth--
		default:
			f(k, depth)
		}
	}
}

// storesLast moves the top block's stores after everything else.
func storesLast(items []bitem) []bitem {
	// The top block's stores come last, after every load of the block: buffers that make
	// allocates are page-aligned, so an output element and the same element of an input share
	// their low 12 address bits, and a load issued after such a store waits on it (4K aliasing).
	var stores []bitem
	kept := items[:0]
	depth := 0
	for _, it := range items {
		switch {
		case it.kind == plan.Loop && !it.end:
			depth++
		case it.kind == plan.Loop:
			depth--
		case it.kind == plan.Store && depth == 0:
			stores = append(stores, it)
			continue
		}
		kept = append(kept, it)
	}
	items = append(kept, stores...)
	for k, it := range items { // loop ends point at their starts' new positions
		if it.kind == plan.Loop && !it.end {
			for j := k + 1; ; j++ {
				if items[j].kind == plan.Loop && items[j].end && items[j].loop == it.loop {
					items[j].start = k
					break
				}
			}
		}
	}
	return items
}

// countUses records, for every value the items read, the item positions that use it.
func (pg *passGen) countUses(items []bitem) {
	// Uses of every value, by item position. A value used inside a loop that it was defined
	// outside of is used again at the loop's end (the next iteration reads it).
	var loops []int // starts of the loops enclosing the current position
	defAt := map[int]int{}
	defs := map[int][]int{} // every position defining each node, ascending
	addUse := func(n *ir.Node, k int) {
		v, ok := pg.regs.vals[n.ID]
		if !ok {
			v = &value{node: n}
			pg.regs.vals[n.ID] = v
		}
		v.uses = append(v.uses, k)
	}
	ends := map[int]int{} // loop start -> end position
	for k, it := range items {
		if it.kind == plan.Loop && it.end {
			ends[it.start] = k
		}
	}
	for k, it := range items {
		switch {
		case it.kind == plan.Loop && !it.end:
			loops = append(loops, k)
			continue
		case it.kind == plan.Loop:
			loops = loops[:len(loops)-1]
			continue
		case it.kind == plan.Load, it.kind == plan.Compute, it.kind == plan.Finish:
			defAt[it.n.ID] = k
			defs[it.n.ID] = append(defs[it.n.ID], k)
		}
		for _, a := range pg.reads(it) {
			read := []*ir.Node{a}
			if isCondMask(a) {
				read = append(read, a.Args[0]) // alive while its mask may need recomputing
			} else {
				pg.direct[a.ID] = true
			}
			for _, a := range read {
				addUse(a, k)
				for _, s := range loops {
					if d, ok := defAt[a.ID]; ok && d < s {
						addUse(a, ends[s])
					}
				}
			}
		}
	}
	for id, v := range pg.regs.vals {
		sortInts(v.uses)
		v.defs = defs[id]
	}
}

// item emits item it at position k.
func (pg *passGen) item(k int, it bitem) {
	n := it.n
	switch it.kind {
	case plan.Loop:
		if it.end {
			pg.loopEnd(it.loop)
			pg.regs.dropAll(pg.regs.unpin(it.start))
		} else {
			pg.regs.pinForLoop(k, pg.ends[k], pg.need(k, pg.ends[k]))
			pg.loopStart(it.loop)
		}
		return
	case plan.Load:
		v := pg.regs.vals[n.ID]
		if v == nil {
			return // nothing reads it here (a memory operand only)
		}
		v.reload = func() reg.VecVirtual { return pg.load(n) }
		if it.kept {
			v.reload = pg.keptReload(n)
		}
		return
	case plan.Init:
		pg.innerInit(k, n)
		return
	case plan.Compute:
		if _, read := pg.regs.vals[n.ID]; !read && !it.save && n.Op.Class() == ir.Elementwise {
			return // nothing in this block reads it (a logsumexp twin's 2·x: its sums use (e^x)²)
		}
	case plan.Accumulate:
		if pg.twins[n.ID] != nil {
			return // accumulated with its twin
		}
	}
	args := pg.reads(it)
	keep := map[int]bool{}
	for _, a := range args {
		keep[a.ID] = true
		if isCondMask(a) {
			keep[a.Args[0].ID] = true
		}
	}
	pg.regs.makeRoom(k, len(args)+pg.temps(it), keep)
	regsIn := make([]reg.VecVirtual, len(args))
	for i, a := range args {
		regsIn[i] = pg.regs.get(pg.regs.vals[a.ID])
	}
	switch {
	case it.save:
		pg.save(n, regsIn[0])
	case it.kind == plan.Store:
		pg.c.Comment("store " + pg.e.names[n.ID])
		pg.store(n, regsIn[0])
	case it.kind == plan.Accumulate:
		pg.c.Comment(fmt.Sprintf("%s(%s) over %v", n.Op, pg.e.names[n.Args[0].ID], n.Axes))
		if pg.e.g.InnerReduce(n) {
			pg.innerAccumulate(n, regsIn[0])
		} else {
			pg.accumulate(n, regsIn[0])
		}
	case it.kind == plan.Finish:
		pg.c.Comment("finish " + pg.e.names[n.ID])
		pg.setValue(n, pg.innerFinish(n))
	default:
		if !n.Op.Aliases() { // no code: the argument's register
			pg.c.Comment(n.Formula(pg.e.names))
		}
		r := pg.compute(n, regsIn)
		pg.setValue(n, r)
		if it.keep {
			pg.keepValue(n, r)
		}
	}
	pg.regs.release(k)
}

// setValue records the register holding n's value at this point of the block.
func (pg *passGen) setValue(n *ir.Node, r reg.VecVirtual) {
	if v, ok := pg.regs.vals[n.ID]; ok {
		v.reg, v.spill = r, nil
	}
}

// spillSlot is a stack slot for one vector register.
func (pg *passGen) spillSlot() operand.Mem { return pg.vecSlots(1) }

// vecSlots is a stack area for n vector registers, one after the other (vecBytes each):
// in 16-lane code from the 64-byte aligned slots, so no ZMM load or store crosses a line.
func (pg *passGen) vecSlots(n int) operand.Mem {
	if pg.slots != nil {
		return pg.slots.nextN(n)
	}
	return pg.c.AllocLocal(32 * n)
}

// vecBytes is the size of a vector register: 32 bytes, 64 in 16-lane code.
func (pg *passGen) vecBytes() int { return pg.lanes() * pg.esz() }

// loopStart opens a loop over a block's dims: one counter per dim, from 0. Offsets computed
// before the loop stay valid inside it (they do not depend on its counters).
func (pg *passGen) loopStart(bl *plan.Block) {
	saved := map[string]reg.GPVirtual{}
	for k, r := range pg.offs {
		saved[k] = r
	}
	pg.savedOffs = append(pg.savedOffs, saved)
	for _, d := range bl.Dims {
		r := pg.gp()
		pg.c.XORQ(r, r)
		pg.counters[d.Name] = r
		l := pg.newLabel("inner_" + d.Name)
		pg.c.Label(l)
		pg.loopLabels = append(pg.loopLabels, l)
	}
}

// loopEnd closes the loops of loopStart, innermost first; offsets computed inside are
// dropped (they depend on the counters). The state pointer, loaded inside or not, stays.
func (pg *passGen) loopEnd(bl *plan.Block) {
	for i := len(bl.Dims) - 1; i >= 0; i-- {
		d := bl.Dims[i]
		r := pg.counters[d.Name]
		l := pg.loopLabels[len(pg.loopLabels)-1]
		pg.loopLabels = pg.loopLabels[:len(pg.loopLabels)-1]
		pg.c.INCQ(r)
		pg.c.CMPQ(r, operand.I32(int32(d.Size)))
		pg.c.JL(operand.LabelRef(l))
		delete(pg.counters, d.Name)
	}
	pg.offs = pg.savedOffs[len(pg.savedOffs)-1]
	pg.savedOffs = pg.savedOffs[:len(pg.savedOffs)-1]
}

// reads lists the values an item reads from registers (shifts and gathers read their operand
// arrays from memory; a logsumexp may reuse its pass's exp of the same argument).
func (pg *passGen) reads(it bitem) []*ir.Node {
	n := it.n
	if it.save {
		return []*ir.Node{n}
	}
	switch it.kind {
	case plan.Store:
		return []*ir.Node{n}
	case plan.Accumulate:
		if pg.twins[n.ID] != nil {
			return nil
		}
		if e := pg.sharedExp(n); pg.guarded(n) && !pg.e.g.InnerReduce(n) && e != nil {
			if c := expCond(n, e); c != nil {
				return []*ir.Node{n.Args[0], e, pg.condMask(c)}
			}
			return []*ir.Node{n.Args[0], e}
		}
		return []*ir.Node{n.Args[0]}
	case plan.Finish, plan.Init, plan.Load, plan.Loop:
		return nil
	}
	switch n.Op.Class() {
	case ir.Shift:
		return []*ir.Node{n.Args[1]}
	case ir.Gather:
		return []*ir.Node{n.Args[1]}
	}
	if boolOp(n) {
		return []*ir.Node{pg.condMask(n.Args[0]), pg.condMask(n.Args[1])}
	}
	if maskedWhere(n) {
		if z := zeroBranch(n); z != 0 {
			return []*ir.Node{pg.condMask(n.Args[0]), n.Args[3-z]}
		}
		return []*ir.Node{pg.condMask(n.Args[0]), n.Args[1], n.Args[2]}
	}
	return foldedArgs(n)
}

// need is the most vector registers one of the items from position from to to needs for
// its arguments and temporaries.
func (pg *passGen) need(from, to int) int {
	n := 0
	for k := from; k <= to && k < len(pg.items); k++ {
		it := pg.items[k]
		if it.kind == plan.Loop || it.kind == plan.Load || it.kind == plan.Init {
			continue
		}
		n = max(n, len(pg.reads(it))+pg.temps(it))
	}
	return n
}

// temps estimates the vector registers an item's expansion uses besides its arguments.
func (pg *passGen) temps(it bitem) int {
	switch it.kind {
	case plan.Store:
		return 2 // a tail's mask, a scatter's staging
	case plan.Finish:
		if pg.own(it.n) && it.n.Op != ir.OpLogSumExp {
			return 4 // the halves, their narrowing, a mean's quotient
		}
		return 13 // a logarithm, a description's finish
	case plan.Accumulate:
		if !pg.own(it.n) {
			return 13 // a description's merge: as many as logsumexp's
		}
		switch it.n.Op {
		case ir.OpLogSumExp:
			return 13
		case ir.OpVar, ir.OpStd, ir.OpArgMax:
			return 9
		case ir.OpSum, ir.OpMean:
			return 2 // the state's load and the masked value
		}
		return 6
	}
	switch it.n.Op {
	case ir.OpExp:
		return 8
	case ir.OpExpM1MinusX:
		return 10
	case ir.OpLog:
		return 10
	case ir.OpLog1p:
		return 13
	case ir.OpScan:
		return 6
	case ir.OpMin, ir.OpMax:
		if boolOp(it.n) {
			return 2 // the masks' or (and), and its 0s and 1s
		}
		return 4
	case ir.OpShiftNext, ir.OpGather:
		return 4
	case ir.OpWhere:
		return 3 // and the condition's register, when its mask is recomputed
	}
	return 2
}

func sortInts(x []int) {
	for i := 1; i < len(x); i++ {
		for j := i; j > 0 && x[j] < x[j-1]; j-- {
			x[j], x[j-1] = x[j-1], x[j]
		}
	}
}
