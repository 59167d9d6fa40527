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
// a block). Values whose dims are all outer dims of the pass (a sequence's statistics [B] in
// a pass over [B, L] tokens: GSPO's sequence ratio exp(Σ log-ratio / length), its clip and
// the advantage's sign) are the same in every block of a row: each row computes them once,
// before its blocks (rowHoist).

// invariant reports whether the top-level item it computes a value whose dims are all in
// outer (none for a pass invariant) from loads and constants of such dims and other such
// values (inv).
func invariant(it bitem, inv map[int]bool, outer map[string]bool) bool {
	n := it.n
	for _, d := range n.Shape {
		if !outer[d.Name] {
			return false
		}
	}
	if it.kind == plan.Load {
		return true
	}
	if it.kind != plan.Compute || n.Op.Class() != ir.Elementwise {
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
// slots. The row invariants' items it keeps for rowHoist. It does nothing for a pass with no
// dims (run once anyway) or no such value that costs an instruction.
func (pg *passGen) hoist() {
	pg.hoisted, pg.invariants, pg.rowItems = map[int]operand.Mem{}, nil, nil
	if len(pg.dom) == 0 {
		return
	}
	if pg.masks == nil {
		pg.masks = map[int]*ir.Node{}
	}
	items := storesLast(flatten(pg.ps.Body, nil))
	outer := map[string]bool{}
	for _, d := range pg.dom[:len(pg.dom)-1] {
		outer[d.Name] = true
	}
	passInv, inv := map[int]bool{}, map[int]bool{}
	var passRun, rowRun []bitem
	steps(items, func(k, depth int) {
		it := items[k]
		switch {
		case depth > 0:
		case invariant(it, passInv, nil):
			passInv[it.n.ID], inv[it.n.ID] = true, true
			passRun = append(passRun, it)
			if it.kind == plan.Load {
				rowRun = append(rowRun, it) // a row's values may read it too
			}
		case invariant(it, inv, outer):
			inv[it.n.ID] = true
			rowRun = append(rowRun, it)
		}
	})
	// The frontiers: invariant computed values that other items read, the pass invariants
	// read by the rows' items too.
	passSaves, passWorth := pg.frontier(items, passInv)
	rowSaves, rowWorth := pg.frontier(items, inv)
	var rowOnly []bitem
	for _, it := range rowSaves {
		if !passInv[it.n.ID] {
			rowOnly = append(rowOnly, it)
		}
	}
	if rowWorth && len(rowOnly) > 0 {
		pg.rowItems = append(rowRun, rowOnly...)
		pg.invariants = inv
	} else {
		pg.invariants = passInv
	}
	if !passWorth && pg.rowItems == nil {
		pg.invariants = nil
		return
	}
	if len(passSaves) > 0 {
		pg.c.Comment("values every block reads alike, computed once")
		pg.runItems(append(passRun, passSaves...))
	}
}

// frontier lists, as save items, the computed values of inv that items outside inv read,
// and whether one of them costs an instruction (is not only an alias of a load).
func (pg *passGen) frontier(items []bitem, inv map[int]bool) ([]bitem, bool) {
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
	return saves, worth
}

// rowHoist emits, at the start of a row (before its blocks), the row invariants the blocks
// read (hoist), each into its stack slot.
func (pg *passGen) rowHoist() {
	if pg.rowItems == nil {
		return
	}
	pg.c.Comment("values every block of the row reads alike, computed once a row")
	pg.jReg, pg.jImm, pg.rem = nil, 0, 0
	pg.runItems(pg.rowItems)
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
