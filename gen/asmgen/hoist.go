package asmgen

import (
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// Loop-invariant values. A pass over batch data may compute values with no dims at all
// from barrier results and constants: a masked mean's 1/max(Σm, 1) and its multiples in a
// gradient, a normalisation's 1/(std + ε). They are the same in every block, so the pass
// computes them once, before its loops, into stack slots, and each block reads the slot
// where it would have broadcast, compared and divided (GRPO's gradient pass: two VDIVPS
// a block).

// invariant reports whether the top-level item it computes a value with no dims from
// loads and constants with none and other such values (inv).
func invariant(it bitem, inv map[int]bool) bool {
	n := it.n
	if it.kind == plan.Load {
		return len(n.Shape) == 0
	}
	if it.kind != plan.Compute || len(n.Shape) != 0 || n.Op.Class() != ir.Elementwise {
		return false
	}
	for _, a := range n.Args {
		if !inv[a.ID] && !a.IsScalarConst() {
			return false
		}
	}
	return true
}

// hoist emits, before the pass's loops, the invariant computed values its blocks read, and
// stores each in a stack slot (pg.hoisted); block then skips their items and reads the
// slots. It does nothing for a pass with no dims (run once anyway) or no such value that
// costs an instruction.
func (pg *passGen) hoist() {
	pg.hoisted, pg.invariants = map[int]operand.Mem{}, nil
	if len(pg.dom) == 0 {
		return
	}
	if pg.masks == nil {
		pg.masks = map[int]*ir.Node{}
	}
	items := storesLast(flatten(pg.ps.Body, nil))
	inv := map[int]bool{}
	var run []bitem
	depth := 0
	for _, it := range items {
		if it.kind == plan.Loop {
			if it.end {
				depth--
			} else {
				depth++
			}
			continue
		}
		if depth == 0 && invariant(it, inv) {
			inv[it.n.ID] = true
			run = append(run, it)
		}
	}
	// The frontier: invariant computed values that other items read.
	var saves []bitem
	seen, worth := map[int]bool{}, false
	for _, it := range items {
		if it.kind == plan.Loop || inv[it.n.ID] && it.kind != plan.Store {
			continue
		}
		for _, a := range pg.reads(it) {
			if isCondMask(a) {
				a = a.Args[0]
			}
			if inv[a.ID] && !seen[a.ID] && pg.computed(a, inv) {
				seen[a.ID] = true
				saves = append(saves, bitem{kind: plan.Compute, n: a, save: true})
				worth = worth || !a.Op.Aliases()
			}
		}
	}
	if !worth {
		return
	}
	pg.c.Comment("values every block reads alike, computed once")
	pg.runItems(append(run, saves...))
	pg.invariants = inv
}

// computed reports whether invariant n is computed (not a load, not only an alias of one).
func (pg *passGen) computed(n *ir.Node, inv map[int]bool) bool {
	for n.Op.Aliases() {
		n = n.Args[0]
	}
	return n.Op.Class() == ir.Elementwise && inv[n.ID]
}

// save stores the value of a hoisted node into its stack slot.
func (pg *passGen) save(n *ir.Node, r reg.VecVirtual) {
	slot := pg.spillSlot()
	pg.mov(r, slot)
	pg.hoisted[n.ID] = slot
}

// skipHoisted drops the items hoist computed before the loops (the loads stay: they cost
// nothing unless read), and makes the values read from outside them come from their slots.
func (pg *passGen) skipHoisted(items []bitem) []bitem {
	if pg.invariants == nil {
		return items
	}
	kept := items[:0:0]
	for _, it := range items {
		if it.kind == plan.Compute && pg.invariants[it.n.ID] {
			continue
		}
		kept = append(kept, it)
	}
	return kept
}

// reloadHoisted points the block's values of hoisted nodes at their slots.
func (pg *passGen) reloadHoisted() {
	for id, slot := range pg.hoisted {
		if v := pg.regs.vals[id]; v != nil {
			v.reload = func() reg.VecVirtual {
				x := pg.ymm()
				pg.mov(slot, x)
				return x
			}
		}
	}
}
