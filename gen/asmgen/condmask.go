package asmgen

import (
	"math"

	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
)

// Condition masks. Booleans are 0 or 1 in the lanes (ir's convention), and VBLENDVPS needs
// a lane mask, so a where(c, x, y) compares c with 0 first. A masked token loss selects by
// the same mask dozens of times a block (every input, every term, every sum), so the mask
// of c is a value of its own in the block's registers (regs.go): computed at its first
// where, reused while it stays in a register, recomputed from c (never spilled) when it was
// evicted. The compare is the same one, so results are bit-identical.

// condMask is the block value that holds c's lane mask: a node of its own (negative ID, so
// it never collides with a graph node) whose one argument is c.
func (pg *passGen) condMask(c *ir.Node) *ir.Node {
	if m, ok := pg.masks[c.ID]; ok {
		return m
	}
	m := &ir.Node{ID: -1 - c.ID, Op: ir.OpNe, Args: []*ir.Node{c}, Shape: c.Shape}
	pg.masks[c.ID] = m
	return m
}

// isCondMask reports whether n is a condition mask (condMask) rather than a graph node.
func isCondMask(n *ir.Node) bool { return n.ID < 0 }

// maskedWhere reports whether n is a where that selects by its condition's mask value.
func maskedWhere(n *ir.Node) bool { return n.Op == ir.OpWhere && !n.Args[0].IsScalarConst() }

// zeroBranch is the argument position (1 or 2) of a masked where's branch that is the
// constant +0, or 0 when neither is. Masks are all ones or all zeros in a lane (VCMPPS's), so
// such a where is an and (andn) of the other branch with the mask, the same bits as the
// blend, with no zero register to hold: a masked token loss's every input and term.
func zeroBranch(n *ir.Node) int {
	for i := 1; i <= 2; i++ {
		if c := n.Args[i]; c.IsScalarConst() && c.Value[0] == 0 && !math.Signbit(c.Value[0]) {
			return i
		}
	}
	return 0
}

// setMaskReloads makes every condition mask of the block recomputable from its condition.
func (pg *passGen) setMaskReloads() {
	for _, v := range pg.regs.vals {
		if !isCondMask(v.node) {
			continue
		}
		c := v.node.Args[0]
		if pg.maskFromBytes(c) {
			v.reload = func() reg.VecVirtual { return pg.loadBoolMask(c) }
			continue
		}
		v.reload = func() reg.VecVirtual {
			cr := pg.regs.get(pg.regs.vals[c.ID])
			m := pg.zero()
			pg.cmp(cmpNEQ_UQ, m, cr, m)
			return m
		}
	}
}

// maskFromBytes reports whether condition c's mask is read straight from its bytes
// (loadBoolMask): c is a bool input the block reads only through its mask (a token mask),
// one byte a lane, in a full block.
func (pg *passGen) maskFromBytes(c *ir.Node) bool {
	return c.Op == ir.OpInput && c.Input.Kind == ir.Bool && !pg.direct[c.ID] && pg.rem == 0 &&
		pg.laneStride(c.Shape) == 1 && pg.tiles[c.ID] == nil
}

// loadBoolMask reads bool input c's bytes as its lane mask: zero-extended, compared with 0
// (any nonzero byte is true, as VCVTDQ2PS and ≠ 0 would say): two instructions where
// widening to 0/1 floats and comparing them took four.
func (pg *passGen) loadBoolMask(c *ir.Node) reg.VecVirtual { return pg.loadByteMask(c, false) }

// loadByteMask is loadBoolMask, or with invert the mask of the lanes where c is false.
func (pg *passGen) loadByteMask(c *ir.Node, invert bool) reg.VecVirtual {
	base, off := pg.nodePtr(c), pg.off(c.Shape)
	src := elemMem(base, off, 1, 0)
	pg.prefetch(base, off, 1)
	x := pg.ymm()
	switch {
	case pg.f64 && invert:
		pg.c.VPMOVZXBQ(src, x)
		pg.c.VPCMPEQQ(pg.cq(0), x, x)
	case pg.f64:
		pg.c.VPMOVZXBQ(src, x)
		pg.c.VPCMPGTQ(pg.cq(0), x, x)
	default:
		pg.c.VPMOVZXBD(src, x)
		pg.pcmpd(!invert, pg.cd(0), x, x)
	}
	return x
}

// boolOp reports whether n is an or (max) or an and (min) of two comparisons (a clamp's
// gradient passes where x ≥ lo or x is NaN): it reads their lane masks (reads), not their 0s
// and 1s.
func boolOp(n *ir.Node) bool {
	return (n.Op == ir.OpMin || n.Op == ir.OpMax) && isBool(n.Args[0]) && isBool(n.Args[1])
}

// boolOp computes boolOp n from its arguments' lane masks: their or (VORPS) or and (VANDPS)
// is n's mask, kept as the mask's value when a where reads it; n's value is that mask when
// nothing reads n but through it (as compareWithMask), otherwise its 0s and 1s.
func (pg *passGen) boolOp(n *ir.Node, x, y reg.VecVirtual) reg.VecVirtual {
	m := pg.ymm()
	if n.Op == ir.OpMax {
		pg.or(x, y, m)
	} else {
		pg.and(x, y, m)
	}
	if mv := pg.regs.vals[-1-n.ID]; mv != nil && mv.reg == nil {
		mv.reg = m
	}
	if !pg.direct[n.ID] {
		return m
	}
	z := pg.ymm()
	pg.and(pg.cf(1), m, z)
	return z
}

// comparePred is each comparison's VCMPPS predicate, as vecOps uses it.
var comparePred = map[ir.Op]uint8{
	ir.OpLt: cmpLT_OQ, ir.OpLe: cmpLE_OQ, ir.OpGt: cmpGT_OQ, ir.OpGe: cmpGE_OQ, ir.OpEq: cmpEQ_OQ, ir.OpNe: cmpNEQ_UQ,
}

// compareWithMask computes comparison n when a where of this block reads its mask: the
// compare's own result is that mask (1 exactly where the compare holds, so c ≠ 0 is the same
// lanes), kept as the mask's value beside the 0-or-1 result. When nothing reads n but
// through its mask, the mask is n's value too: recomputing the mask from it (≠ 0, true for
// the all-ones NaN pattern) gives the same lanes, and no 0-or-1 is made.
func (pg *passGen) compareWithMask(n *ir.Node, a []reg.VecVirtual) (reg.VecVirtual, bool) {
	pred, ok := comparePred[n.Op]
	mv := pg.regs.vals[-1-n.ID]
	if !ok || mv == nil || mv.reg != nil {
		return nil, false
	}
	m := pg.ymm()
	pg.cmp(pred, a[1], a[0], m)
	mv.reg = m
	if !pg.direct[n.ID] {
		return m, true
	}
	z := pg.ymm()
	pg.and(pg.cf(1), m, z)
	return z, true
}
