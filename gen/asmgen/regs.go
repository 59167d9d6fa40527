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
}

// regs tracks the node values of one block.
type regs struct {
	vals   map[int]*value
	pinned int // registers held for the whole block (scan carries)
	alloc  func() operand.Mem
	a      *asm
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

// nextUse is the first use of v at or after position k, or a large number.
func (v *value) nextUse(k int) int {
	for _, u := range v.uses {
		if u >= k {
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
		if len(live)+need+r.pinned+1 <= r.a.budget {
			return
		}
		var victim *value
		for _, v := range live {
			if keep[v.node.ID] {
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

// spillAll moves every value still needed after position k out of the registers (before a
// loop: its body starts each iteration with the same, empty, register assignment).
func (r *regs) spillAll(k int) {
	for _, v := range r.inRegs() {
		if v.nextUse(k) < 1<<30 {
			r.evict(v, k)
		}
		v.reg = nil
	}
}

// dropAll forgets every register (after a loop: what its body computed is dead, and what it
// read from outside is in memory).
func (r *regs) dropAll() {
	for _, v := range r.vals {
		v.reg = nil
	}
}

// release drops values whose last use is at or before k.
func (r *regs) release(k int) {
	for id, v := range r.vals {
		if len(v.uses) == 0 || v.uses[len(v.uses)-1] <= k {
			delete(r.vals, id)
		}
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
