package asmgen

import (
	"fmt"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
)

// scan is y[t] = x[t] + c[t]·y[t∓1]. Along an outer dim each lane is its own line and
// its carry (y of the previous step) lives in the state buffer: y = x + c·carry. Along the
// vector axis see scanLanes.
func (pg *passGen) scan(n *ir.Node, x, cv reg.VecVirtual) reg.VecVirtual {
	if n.Axes[0] == pg.vaxis() {
		return pg.scanLanes(n, x, cv)
	}
	m := pg.carryMem(n)
	y := pg.ymm()
	// y = x + carry·c, rounded twice as the Go recursion does (not an FMA): the same bits, so
	// the same overflows; +0 for the product where c is 0 (the cut, ir.OpScan).
	pg.mul(m, cv, y)
	pg.cut(n, cv, y)
	pg.add(x, y, y)
	if pg.rem > 0 {
		old := pg.ymm()
		pg.mov(m, old)
		pg.blend(pg.tailMask(), y, old, old)
		pg.mov(old, m)
	} else {
		pg.mov(y, m)
	}
	return y
}

// paddingOf is the mask input (keys.mask) of a scan that cuts at done steps, when it has the
// scan's shape: its padding lanes are exempt from the overflow guard (scanLanes). nil
// otherwise. Padding with no done step before it does reach valid steps, as in TorchRL;
// there finite values beyond the guard's bound can overflow at other elements on AVX2 than
// on the other backends (README "NaN propagation"; lossgen eval warns of such data).
func (pg *passGen) paddingOf(n *ir.Node) *ir.Node {
	if !pg.mayCut(n) {
		return nil
	}
	for _, m := range pg.e.g.Nodes {
		if m.Op == ir.OpInput && m.Input.Key == "mask" && m.Shape.Equal(n.Shape) {
			return m
		}
	}
	return nil
}

// paddingLanes is the lane mask of the block's padding: where mask input m is false. A full
// block compares the bytes with 0 (loadByteMask); a tail block reads them through load,
// which stops at the end.
func (pg *passGen) paddingLanes(m *ir.Node) reg.VecVirtual {
	if pg.rem > 0 || pg.laneStride(m.Shape) != 1 || pg.tiles[m.ID] != nil {
		pad := pg.ymm()
		pg.cmp(cmpEQ_OQ, pg.cf(0), pg.load(m), pad)
		return pad
	}
	return pg.loadByteMask(m, true)
}

// mayCut reports whether scan n cuts (ir.Node.Cut) and its coefficients may be 0, by their
// value range.
func (pg *passGen) mayCut(n *ir.Node) bool {
	iv := pg.e.g.Range(n.Args[1])
	return n.Cut && iv.Lo <= 0 && iv.Hi >= 0
}

// cut clears y in the lanes where c is 0, so that a cut's product is +0 whatever the other
// factor holds (ir.OpScan; a NaN c keeps its product, NaN, as the Go kernel's c == 0 test
// does). Nothing is emitted where c cannot be 0.
func (pg *passGen) cut(n *ir.Node, c, y reg.VecVirtual) {
	if !pg.mayCut(n) {
		return
	}
	pg.and(pg.nonzero(c), y, y)
}

// nonzero is the lanes where c is not 0 (NaN included).
func (pg *passGen) nonzero(c reg.VecVirtual) reg.VecVirtual {
	nz := pg.ymm()
	pg.cmp(cmpNEQ_UQ, pg.cf(0), c, nz)
	return nz
}

// carryMem addresses the current block's carries of a scan along an outer dim: one per
// index of the domain dims inside the scan axis, at this block's position among them.
func (pg *passGen) carryMem(n *ir.Node) operand.Mem {
	inner := pg.dom[pg.dom.Index(n.Axes[0])+1:]
	if pg.stReg == nil {
		pg.stReg = pg.ptr("st", "*float64", "&st.buf[0]")
	}
	m := elemMem(pg.stReg, pg.off(inner), pg.esz(), 0)
	m.Disp += pg.e.stateAt[carryField(n)]
	return m
}

func carryField(n *ir.Node) string { return fmt.Sprintf("r%d_carry", n.ID) }

// zeroCarries starts a scan along an outer dim: every carry is 0.
func (pg *passGen) zeroCarries(n *ir.Node) {
	inner := pg.dom[pg.dom.Index(n.Axes[0])+1:]
	if pg.stReg == nil {
		pg.stReg = pg.ptr("st", "*float64", "&st.buf[0]")
	}
	base := pg.gp()
	pg.c.LEAQ(operand.Mem{Base: pg.stReg, Disp: pg.e.stateAt[carryField(n)]}, base)
	pg.stReg = nil // loaded outside the block loops: reload inside
	z := pg.zero()
	vb := pg.vecBytes() // 16-lane code: inner dims of whole 16-element blocks (wideEligible)
	bytes := (inner.Numel()*pg.esz() + vb - 1) / vb * vb
	for off := 0; off < bytes; off += vb {
		pg.mov(z, operand.Mem{Base: base, Disp: off})
	}
}

// scanLanes is y[t] = x[t] + c[t]·y[t+1] for one block of lanes t0..t0+L−1, walked
// backwards by the caller (forwards for a forward scan, y[t] = x[t] + c[t]·y[t−1]). Within the
// block the affine maps (c, x) are composed towards the lanes computed later by a log-step
// scan — (C, B)ᵢ ← (Cᵢ·Cᵢ₊ₛ, Bᵢ + Cᵢ·Bᵢ₊ₛ) for s = 1, 2, 4 (i−s forwards) — so lane i holds
// the map from the carry to y[t0+i]; then y = B + C·carry, and the carry becomes y's first
// lane (last, forwards). Lanes past the end of a tail block are the identity map (C = 1,
// B = 0). The composition's partial sums are not the Go recursion's: a block whose x or c
// could make either overflow clears the pass's guard (guard.go).
func (pg *passGen) scanLanes(n *ir.Node, x, cv reg.VecVirtual) reg.VecVirtual {
	L := pg.lanes()
	C, B := pg.ymm(), pg.ymm()
	pg.mov(cv, C)
	pg.mov(x, B)
	one := pg.cf(1)
	if pg.rem > 0 {
		m := pg.tailMask()
		pg.and(m, B, B)
		o := pg.ymm()
		pg.mov(one, o)
		pg.blend(m, C, o, C) // C = mask ? C : 1
	}
	// The overflow guard (guard.go): |x| ≤ scanBound where x is finite, |c| ≤ 1 and no c
	// so small that the composed products underflow to 0 (unless the coefficients are so by
	// construction) in every lane, else the glue reruns the pass in Go. NaN and ±inf in x and
	// NaN in c pass: they reach the same elements in the composed order (finiteWithin).
	ok := pg.ymm()
	pg.finiteWithin(B, pg.scanBound(pg.dom[len(pg.dom)-1].Size), ok)
	unit, large := pg.unitCoef(n), nonzeroFloor(n.Args[1]) >= pg.tinyCoef()
	if !unit || !large {
		absC := pg.ymm()
		pg.and(pg.absMask(), C, absC)
		if !unit {
			t := pg.ymm() // |c| ≤ 1 or NaN (a NaN coefficient reaches the same elements either way)
			pg.cmp(cmpNGT_UQ, pg.cf(1), absC, t)
			pg.and(t, ok, ok)
		}
		if !large {
			t, z := pg.ymm(), pg.ymm() // |c| ≥ tinyCoef, 0 or NaN
			pg.cmp(cmpNLT_UQ, pg.cf(pg.tinyCoef()), absC, t)
			pg.cmp(cmpEQ_OQ, pg.cf(0), C, z)
			pg.or(z, t, t)
			pg.and(t, ok, ok)
		}
	}
	if m := pg.paddingOf(n); m != nil {
		// Padding (keys.mask false) after a done step reaches no valid step in either order
		// (a cut is a select: +0 whatever the maps after it hold), so what it holds does not
		// send the pass to Go, whose rounding would move every valid value by an ulp.
		pg.or(pg.paddingLanes(m), ok, ok)
	}
	pg.andGuard(ok)
	// src is the lane whose map lane i composes with at step s; edge lanes (no such lane)
	// take the identity.
	src := func(i, s int) (int, bool) {
		if n.Reverse {
			return i + s, i+s < L
		}
		return i - s, i-s >= 0
	}
	if pg.zmm {
		L = 8 // two 8-lane blocks side by side, each composed on its own (scanHalves)
	}
	for s := 1; s < L; s *= 2 {
		Cs, Bs := pg.ymm(), pg.ymm()
		imm := 0
		for i := 0; i < L; i++ {
			if _, ok := src(i, s); !ok {
				imm |= 1 << i
			}
		}
		switch {
		case pg.zmm:
			var idx [16]int
			for i := range 8 {
				j, ok := src(i, s)
				if !ok {
					j = i
				}
				idx[i], idx[i+8] = j, j+8
			}
			pg.composeWide(idx, imm|imm<<8, C, B, Cs, Bs)
		case pg.f64:
			sel := 0
			for i := 0; i < 4; i++ {
				j, ok := src(i, s)
				if !ok {
					j = i
				}
				sel |= j << (2 * i)
			}
			pg.c.VPERMPD(operand.Imm(uint64(sel)), C, Cs)
			pg.c.VPERMPD(operand.Imm(uint64(sel)), B, Bs)
			pg.c.VBLENDPD(operand.Imm(uint64(imm)), one, Cs, Cs)
			pg.c.VBLENDPD(operand.Imm(uint64(imm)), pg.cf(0), Bs, Bs)
		default:
			var idx [8]int
			for i := range idx {
				j, ok := src(i, s)
				if !ok {
					j = i
				}
				idx[i] = j
			}
			ix := pg.ymm()
			pg.mov(pg.perm32(idx), ix)
			pg.c.VPERMPS(C, ix, Cs)
			pg.c.VPERMPS(B, ix, Bs)
			pg.c.VBLENDPS(operand.Imm(uint64(imm)), one, Cs, Cs)
			pg.c.VBLENDPS(operand.Imm(uint64(imm)), pg.cf(0), Bs, Bs)
		}
		if pg.mayCut(n) {
			// A cut: the map is constant, whatever the maps after it hold (NaN included): B
			// gains +0 and C stays 0 (0·NaN would be NaN).
			nz := pg.nonzero(C)
			pg.and(nz, Bs, Bs)
			pg.fmadd231(C, Bs, B)
			pg.mul(Cs, C, C)
			pg.and(nz, C, C)
		} else {
			pg.fmadd231(C, Bs, B) // B += C·Bs (with the old C)
			pg.mul(Cs, C, C)
		}
	}
	if pg.zmm {
		return pg.scanHalves(n, C, B)
	}
	pg.applyCarry(n, C, B, pg.carries[n.ID])
	return B
}

// applyCarry ends a block's scan: B = B + C·carry (the composed maps applied to the carry, cut
// where C is 0), and the carry becomes the lane computed last: 0 backwards, L−1 forwards.
func (pg *passGen) applyCarry(n *ir.Node, C, B, carry reg.VecVirtual) {
	in := carry
	if pg.mayCut(n) {
		in = pg.ymm()
		pg.mov(carry, in)
		pg.cut(n, C, in)
	}
	pg.fmadd231(C, in, B)
	last := 0
	if !n.Reverse {
		last = pg.lanes() - 1
	}
	if pg.f64 {
		pg.c.VPERMPD(operand.Imm(uint64(last*0x55)), B, carry)
	} else {
		ix := pg.ymm()
		pg.mov(pg.perm32([8]int{last, last, last, last, last, last, last, last}), ix)
		pg.c.VPERMPS(B, ix, carry)
	}
}

// shift is y[t] = x[t+1] for t < T−1 and last[t] at t = T−1. x is read from memory (the
// plan has finished it) with a mask that stops at the axis's end.
func (pg *passGen) shift(n *ir.Node, lv reg.VecVirtual) reg.VecVirtual {
	c := pg.c
	axis := n.Axes[0]
	x := n.Args[0]
	if axis != pg.vaxis() {
		// An outer dim: every lane is at the same index t; the next row is read only where
		// t < T−1 (an all-zero mask reads nothing).
		T := x.Shape[x.Shape.Index(axis)].Size
		stride := x.Shape.Strides()[x.Shape.Index(axis)]
		lim := pg.gp()
		c.MOVQ(operand.I32(int32(T-1)), lim)
		c.SUBQ(pg.counters[axis], lim) // > 0 where a next row exists
		m := pg.ymm()
		c.VMOVQ(lim, m.AsX())
		c.VPBROADCASTQ(m.AsX(), m)
		c.VPCMPGTQ(pg.cq(0), m, m)
		if pg.rem > 0 {
			pg.and(pg.tailMask(), m, m)
		}
		base := pg.nodePtr(x)
		off := pg.off(x.Shape)
		nx := pg.ymm()
		if pg.laneStride(x.Shape) != 1 {
			panic("asmgen: a shift's operand must have the vector axis innermost")
		}
		if pg.f64 {
			c.VMASKMOVPD(elemMem(base, off, 8, stride), m, nx)
		} else {
			c.VMASKMOVPS(elemMem(base, off, 4, stride), m, nx)
		}
		y := pg.ymm()
		pg.blend(m, nx, lv, y)
		return y
	}
	E := pg.dom[len(pg.dom)-1].Size
	// next-valid lanes: lane < E − 1 − j.
	lim := pg.gp()
	c.MOVQ(operand.I32(int32(uint64(E-1))), lim)
	if pg.jReg != nil {
		c.SUBQ(pg.jReg, lim)
	} else {
		c.SUBQ(operand.I32(int32(pg.jImm)), lim)
	}
	m := pg.ymm()
	c.VMOVQ(lim, m.AsX())
	if pg.f64 {
		c.VPBROADCASTQ(m.AsX(), m)
		c.VPCMPGTQ(pg.iota64(), m, m)
	} else {
		c.VPBROADCASTD(m.AsX(), m)
		c.VPCMPGTD(pg.iota32(), m, m)
	}
	if pg.rem > 0 {
		pg.and(pg.tailMask(), m, m)
	}
	base := pg.nodePtr(x)
	off := pg.off(x.Shape)
	nx := pg.ymm()
	if pg.f64 {
		c.VMASKMOVPD(elemMem(base, off, 8, 1), m, nx)
	} else {
		c.VMASKMOVPS(elemMem(base, off, 4, 1), m, nx)
	}
	y := pg.ymm()
	pg.blend(m, nx, lv, y)
	return y
}

// gather is y = x[..., idx] along axis a of x, with VGATHERDPS/PD. The index is truncated
// and clamped into the axis so no lane can read outside x (Forward rejects out-of-range
// index inputs before any kernel runs).
func (pg *passGen) gather(n *ir.Node, idx reg.VecVirtual) reg.VecVirtual {
	c := pg.c
	x := n.Args[0]
	axis := n.Axes[0]
	xs := x.Shape
	st := xs.Strides()
	size := xs[xs.Index(axis)].Size
	// Scalar part of the element offset: the outer counters (and the block's inner offset).
	base := pg.gp()
	c.XORQ(base, base)
	laneStride := 0
	for i, d := range xs {
		switch {
		case d.Name == axis:
		case d.Name == pg.vaxis():
			laneStride = st[i]
			t := pg.gp()
			if pg.jReg != nil {
				c.IMUL3Q(operand.I32(int32(st[i])), pg.jReg, t)
			} else {
				c.MOVQ(operand.I32(int32(uint64(pg.jImm*st[i]))), t)
			}
			c.ADDQ(t, base)
		default:
			t := pg.gp()
			c.IMUL3Q(operand.I32(int32(st[i])), pg.counters[d.Name], t)
			c.ADDQ(t, base)
		}
	}
	kind, esz := ir.Float, pg.esz()
	if x.Op == ir.OpInput && x.Input.Kind != ir.Float {
		kind, esz = x.Input.Kind, map[ir.ElemKind]int{ir.Bool: 1, ir.Index: 8}[x.Input.Kind]
	}
	ptr := pg.nodePtr(x)
	c.LEAQ(elemMem(ptr, base, esz, 0), ptr)
	// Vector part: clamp(idx)·stride(axis) + lane·stride(inner).
	// float64: 4 lanes, 4 dword indices in the X half; the integer ops work on that half only
	// (reading the undefined upper half would make the register live from the function's
	// entry, see defineOnly).
	ii := pg.ymm()
	var iv operand.Op = ii
	if pg.f64 {
		iv = ii.AsX()
		c.VCVTTPD2DQY(idx, iv)
	} else {
		c.VCVTTPS2DQ(idx, ii)
	}
	c.VPMAXSD(pg.cd(0), iv, iv)
	c.VPMINSD(pg.cd(int32(size-1)), iv, iv)
	c.VPMULLD(pg.cd(int32(st[xs.Index(axis)])), iv, iv)
	if laneStride != 0 {
		c.VPADDD(pg.laneOffsets(laneStride), iv, iv)
	}
	if kind != ir.Float {
		return pg.gatherLanes(kind, ptr, iv)
	}
	if pg.zmm {
		y := pg.zero()
		pg.gatherAll(operand.Mem{Base: ptr, Index: ii, Scale: 4}, y)
		return y
	}
	m := pg.ymm()
	if pg.rem > 0 {
		pg.mov(pg.laneMask(pg.rem, pg.f64), m)
	} else {
		pg.mov(pg.laneMask(pg.lanes(), pg.f64), m) // all lanes (a load: see defineOnly)
	}
	y := pg.zero()
	if pg.f64 {
		c.VGATHERDPD(m, operand.Mem{Base: ptr, Index: ii.AsX(), Scale: 8}, y)
	} else {
		c.VGATHERDPS(m, operand.Mem{Base: ptr, Index: ii, Scale: 4}, y)
	}
	return y
}

// gatherLanes is gather from a bool or int64 input (a mask or index read at a computed index,
// once a gather is pushed through a where): each valid lane's element ptr[ii[lane]] is read
// on its own (AVX2 gathers only 4- and 8-byte elements, and a wider read could pass the
// array's end) and converted to the dtype, as load does for contiguous lanes.
func (pg *passGen) gatherLanes(kind ir.ElemKind, ptr reg.GPVirtual, ii operand.Op) reg.VecVirtual {
	c := pg.c
	offs := c.AllocLocal(32)
	c.VMOVDQU(ii, offs)
	o := pg.gp()
	y := pg.ymm()
	if kind == ir.Bool {
		slot := c.AllocLocal(8)
		c.MOVQ(operand.I32(0), slot)
		t := c.GP8()
		for i := 0; i < pg.validLanes(); i++ {
			c.MOVLQZX(offs.Offset(4*i), o)
			c.MOVB(elemMem(ptr, o, 1, 0), t)
			c.MOVB(t, slot.Offset(i))
		}
		pg.boolsToFloats(slot, y)
		return y
	}
	slot := c.AllocLocal(32)
	pg.mov(pg.cf(0), y) // loads, not zeroing idioms (see defineOnly)
	pg.mov(y, slot)
	t := pg.gp()
	f := pg.zeroX()
	for i := 0; i < pg.validLanes(); i++ {
		c.MOVLQZX(offs.Offset(4*i), o)
		c.MOVQ(elemMem(ptr, o, 8, 0), t)
		pg.indexToSlot(t, f, slot, i)
	}
	pg.mov(slot, y)
	return y
}
