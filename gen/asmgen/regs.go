package asmgen

import (
	"sort"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
)

// numYMM is the number of vector registers AVX2 encodes (Y0–Y15). avo's allocator does not
// spill, and it would hand out the AVX-512 registers Y16–Y31, which VEX cannot encode, so the
// emitter keeps the number of simultaneously live vector values within a budget (asm.budget,
// at most numYMM): node values are held in registers up to it and spilled (computed values)
// or re-read (loads) beyond. assemble lowers the budget until no function needs more.
const numYMM = 16

// value is where one node's value for the current block lives.
type value struct {
	node   *ir.Node
	reg    reg.VecVirtual // nil when not in a register
	spill  *operand.Mem   // stack slot holding a spilled computed value
	reload func() reg.VecVirtual
	uses   []int // item positions that read the value, ascending
	defs   []int // item positions that compute or load it, ascending (a loop may recompute it)
}

// regs tracks the node values of one block.
type regs struct {
	vals   map[int]*value
	pinned int // registers held outside the values: scan carries, inner reduction states
	// partials are the registers a 16-lane loop holds its partial sums in (sumsInRegs): they
	// count against the budget but not against maxPinned, which rations AVX2's 16 among the
	// block's own pins (an AVX2 pass counts its few partials among pinned).
	partials int
	// loopPins are values kept in their registers through the loops that read them
	// (pinForLoop), by node ID: the position of the loop start that pinned them.
	loopPins map[int]int
	alloc    func() operand.Mem
	a        *asm
}

// inRegs lists the values in registers, by node ID: eviction and spilling visit them in a
// fixed order, so the same spec gives the same assembly.
func (r *regs) inRegs() []*value {
	var out []*value
	for _, v := range r.vals {
		if v.reg != nil {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node.ID < out[j].node.ID })
	return out
}

// nextUse is the first use of v at or after position k, or a large number when there is
// none or v is computed again before it (a loop's body recomputes what an earlier loop did).
func (v *value) nextUse(k int) int {
	for _, u := range v.uses {
		if u >= k {
			for _, d := range v.defs {
				if d >= k && d < u {
					return 1 << 30
				}
			}
			return u
		}
	}
	return 1 << 30
}

// makeRoom evicts values (never those in keep) until `need` more registers fit beside the
// values in registers, the pinned ones and one spare.
func (r *regs) makeRoom(k, need int, keep map[int]bool) {
	for {
		live := r.inRegs()
		if len(live)+need+r.pinned+r.partials+1 <= r.a.budget {
			return
		}
		var victim *value
		for _, v := range live {
			if _, pin := r.loopPins[v.node.ID]; pin || keep[v.node.ID] {
				continue
			}
			if victim == nil || v.nextUse(k) > victim.nextUse(k) {
				victim = v
			}
		}
		if victim == nil {
			return // nothing evictable; avo reports if it truly does not fit
		}
		r.evict(victim, k)
	}
}

// evict drops v from its register, spilling a computed value that is still needed.
func (r *regs) evict(v *value, k int) {
	if v.reload == nil && v.spill == nil && v.nextUse(k) < 1<<30 {
		m := r.alloc()
		v.spill = &m
		r.a.mov(v.reg, m)
	}
	v.reg = nil
}

// get returns v's register, re-reading or un-spilling it if needed.
func (r *regs) get(v *value) reg.VecVirtual {
	if v.reg != nil {
		return v.reg
	}
	if v.reload != nil {
		v.reg = v.reload()
		return v.reg
	}
	if v.spill == nil {
		panic("asmgen: value v" + itoa(v.node.ID) + " is neither in a register nor saved")
	}
	x := r.a.ymm()
	r.a.mov(*v.spill, x)
	v.reg = x
	return x
}

// maxLoopPins bounds the values pinForLoop keeps in registers through one loop, and
// maxPinned the registers held by pins of every kind together.
const (
	maxLoopPins = 4
	maxPinned   = 6
)

// canPin reports whether n more registers can be held through items whose expansions need
// up to need registers each (their arguments and temporaries, see passGen.need): beside the
// pins already held, one spare and the budget (lowered on a retry, see assemble).
func (r *regs) canPin(n, need int) bool {
	held := r.pinned + len(r.loopPins)
	return held+n <= maxPinned && held+r.partials+n+1+need <= r.a.budget
}

// pinForLoop keeps in registers, through the loop from position start to end, values from
// outside it that its body reads (a softmax's max, read at every action; an integer action,
// converted lane by lane on every read), up to maxLoopPins of them, within canPin for the
// body's need: those in registers, and loads (re-read where they are needed), which it reads
// before the loop, those read soonest first; not a value the body computes or loads again.
// Their registers stay fixed from iteration to iteration since the body only reads them;
// every other value is spilled (spillAll).
func (r *regs) pinForLoop(start, end, need int) {
	if r.loopPins == nil {
		r.loopPins = map[int]int{}
	}
	var cand []*value
	for _, v := range r.vals {
		if _, pin := r.loopPins[v.node.ID]; pin || isCondMask(v.node) || v.nextUse(start) >= end || v.reg == nil && v.reload == nil {
			continue
		}
		variant := false
		for _, d := range v.defs {
			variant = variant || d > start && d < end
		}
		if !variant {
			cand = append(cand, v)
		}
	}
	sort.Slice(cand, func(i, j int) bool {
		a, b := cand[i].nextUse(start), cand[j].nextUse(start)
		return a < b || a == b && cand[i].node.ID < cand[j].node.ID
	})
	for i, v := range cand {
		if i == maxLoopPins || !r.canPin(1, need) {
			break
		}
		r.loopPins[v.node.ID] = start
	}
	r.spillAll(start)
	for _, v := range cand {
		if s, pin := r.loopPins[v.node.ID]; pin && s == start && v.reg == nil {
			r.get(v)
		}
	}
}

// unpin ends the pins of the loop that starts at position start, returning their values:
// they stay in their registers.
func (r *regs) unpin(start int) map[int]bool {
	out := map[int]bool{}
	for id, s := range r.loopPins {
		if s == start {
			delete(r.loopPins, id)
			out[id] = true
		}
	}
	return out
}

// spillAll moves every value still needed after position k out of the registers (before a
// loop: its body starts each iteration with the same, empty, register assignment), but for
// the pinned ones.
func (r *regs) spillAll(k int) {
	for _, v := range r.inRegs() {
		if _, pin := r.loopPins[v.node.ID]; pin {
			continue
		}
		if v.nextUse(k) < 1<<30 {
			r.evict(v, k)
		}
		v.reg = nil
	}
}

// dropAll forgets every register (after a loop: what its body computed is dead, and what it
// read from outside is in memory) but the pinned values' and those of values pinned by the
// loop just closed (unpin), which the body left where they were.
func (r *regs) dropAll(keep map[int]bool) {
	for _, v := range r.vals {
		if _, pin := r.loopPins[v.node.ID]; !pin && !keep[v.node.ID] {
			v.reg = nil
		}
	}
}

// release drops values whose last use is at or before k.
func (r *regs) release(k int) {
	for id, v := range r.vals {
		if len(v.uses) == 0 || v.uses[len(v.uses)-1] <= k {
			delete(r.vals, id)
			delete(r.loopPins, id)
		}
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
