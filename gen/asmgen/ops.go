package asmgen

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
)

var cmpPred = map[ir.Op]uint8{
	ir.OpLt: cmpLT_OQ, ir.OpLe: cmpLE_OQ, ir.OpGt: cmpGT_OQ, ir.OpGe: cmpGE_OQ,
	ir.OpEq: cmpEQ_OQ, ir.OpNe: cmpNEQ_UQ, // != is true for NaN, as in Go
}

// compute emits node n on its argument registers and returns the result register. Every
// op rounds as the Go kernel does, except where FMA fuses a multiply-add inside exp, log,
// the scan's composition and the reductions (allowed by the kernels' tolerances).
func (pg *passGen) compute(n *ir.Node, a []reg.VecVirtual) reg.VecVirtual {
	z := pg.ymm()
	switch n.Op {
	case ir.OpNeg:
		pg.xor(pg.cf(math.Copysign(0, -1)), a[0], z)
	case ir.OpAbs:
		s := pg.ymm()
		pg.mov(pg.cf(math.Copysign(0, -1)), s)
		pg.andn(a[0], s, z)
	case ir.OpExp:
		return pg.expf(a[0])
	case ir.OpLog:
		return pg.logf(a[0])
	case ir.OpLog1p:
		return pg.log1pf(a[0])
	case ir.OpSqrt:
		pg.sqrt(a[0], z)
	case ir.OpAdd, ir.OpSub, ir.OpMul:
		var y operand.Op = a[len(a)-1]
		if c, _, ok := foldedConst(n); ok {
			y = pg.cf(c) // a[0] is the variable (see reads)
		}
		switch n.Op {
		case ir.OpAdd:
			pg.add(y, a[0], z)
		case ir.OpSub:
			pg.sub(y, a[0], z)
		default:
			pg.mul(y, a[0], z)
		}
	case ir.OpDiv:
		pg.div(a[1], a[0], z)
	case ir.OpMin, ir.OpMax:
		// Against a constant that is neither zero nor NaN, one VMINPS/VMAXPS with the
		// variable as the operand returned on NaN (Intel's second source) is exact.
		if v, k, ok := constSide(n); ok {
			pg.minmax(n.Op, a[v], a[k], z)
			break
		}
		if n.Op == ir.OpMin {
			pg.minNaN(a[0], a[1], z)
		} else {
			pg.maxNaN(a[0], a[1], z)
		}
	case ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe, ir.OpEq, ir.OpNe:
		pg.cmp(cmpPred[n.Op], a[1], a[0], z)
		pg.and(pg.cf(1), z, z)
	case ir.OpWhere:
		m := pg.zero()
		pg.cmp(cmpNEQ_UQ, m, a[0], m)
		pg.blend(m, a[1], a[2], z)
	case ir.OpScanRev:
		return pg.scan(n, a[0], a[1])
	case ir.OpShiftNext:
		return pg.shift(n)
	case ir.OpGather:
		return pg.gather(n, a[0])
	default:
		panic("asmgen: no vector form for " + n.Op.String())
	}
	return z
}

// foldedConst reports whether n is x+c, c+x, x·c, c·x or x−c with c a scalar constant, which
// the instruction reads from memory (add and multiply commute exactly, NaNs aside, whose
// payload the kernels do not promise): no register holds c. v is x's argument position.
func foldedConst(n *ir.Node) (c float64, v int, ok bool) {
	switch {
	case n.Op != ir.OpAdd && n.Op != ir.OpSub && n.Op != ir.OpMul:
	case n.Args[1].IsScalarConst() && !n.Args[0].IsScalarConst():
		return n.Args[1].Value[0], 0, true
	case n.Op != ir.OpSub && n.Args[0].IsScalarConst() && !n.Args[1].IsScalarConst():
		return n.Args[0].Value[0], 1, true
	}
	return 0, 0, false
}

// foldedArgs is n's arguments as compute reads them from registers.
func foldedArgs(n *ir.Node) []*ir.Node {
	if _, v, ok := foldedConst(n); ok {
		return n.Args[v : v+1]
	}
	return n.Args
}

// constSide finds a min/max whose one argument is a scalar constant other than ±0 and NaN;
// it returns the positions of the variable and the constant.
func constSide(n *ir.Node) (v, k int, ok bool) {
	for i, x := range n.Args {
		if x.IsScalarConst() && x.Value[0] != 0 && x.Value[0] == x.Value[0] {
			return 1 - i, i, true
		}
	}
	return 0, 0, false
}

// minmax is z = min/max(k, v) returning v when either is NaN (Go syntax puts Intel's second
// source first).
func (pg *passGen) minmax(op ir.Op, v, k, z reg.VecVirtual) {
	switch {
	case op == ir.OpMin && pg.f64:
		pg.c.VMINPD(v, k, z)
	case op == ir.OpMin:
		pg.c.VMINPS(v, k, z)
	case pg.f64:
		pg.c.VMAXPD(v, k, z)
	default:
		pg.c.VMAXPS(v, k, z)
	}
}

// scan is y[t] = x[t] + c[t]·y[t+1] for one block of lanes t0..t0+L−1, walked backwards by
// the caller. Within the block the affine maps (c, x) are composed towards higher lanes by
// a log-step suffix scan — (C, B)ᵢ ← (Cᵢ·Cᵢ₊ₛ, Bᵢ + Cᵢ·Bᵢ₊ₛ) for s = 1, 2, 4 — so lane i holds
// the map from y[t0+L] to y[t0+i]; then y = B + C·carry, and the carry becomes y's lane 0.
// Lanes past the end of a tail block are the identity map (C = 1, B = 0).
func (pg *passGen) scan(n *ir.Node, x, cv reg.VecVirtual) reg.VecVirtual {
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
	for s := 1; s < L; s *= 2 {
		Cs, Bs := pg.ymm(), pg.ymm()
		imm := 0
		for i := L - s; i < L; i++ {
			imm |= 1 << i
		}
		if pg.f64 {
			sel := 0
			for i := 0; i < 4; i++ {
				src := i + s
				if src > 3 {
					src = i
				}
				sel |= src << (2 * i)
			}
			pg.c.VPERMPD(operand.Imm(uint64(sel)), C, Cs)
			pg.c.VPERMPD(operand.Imm(uint64(sel)), B, Bs)
			pg.c.VBLENDPD(operand.Imm(uint64(imm)), one, Cs, Cs)
			pg.c.VBLENDPD(operand.Imm(uint64(imm)), pg.cf(0), Bs, Bs)
		} else {
			var idx [8]int
			for i := range idx {
				idx[i] = min(i+s, 7)
			}
			ix := pg.ymm()
			pg.mov(pg.perm32(idx), ix)
			pg.c.VPERMPS(C, ix, Cs)
			pg.c.VPERMPS(B, ix, Bs)
			pg.c.VBLENDPS(operand.Imm(uint64(imm)), one, Cs, Cs)
			pg.c.VBLENDPS(operand.Imm(uint64(imm)), pg.cf(0), Bs, Bs)
		}
		pg.fmadd231(C, Bs, B) // B += C·Bs (with the old C)
		pg.mul(Cs, C, C)
	}
	carry := pg.carries[n.ID]
	pg.fmadd231(C, carry, B) // y = B + C·carry
	if pg.f64 {
		pg.c.VPERMPD(operand.Imm(0), B, carry)
	} else {
		ix := pg.zero()
		pg.c.VPERMPS(B, ix, carry)
	}
	return B
}

// shift is y[t] = x[t+1] for t < T−1 and last[t] at t = T−1, along the vector axis. x is
// read from memory (the plan has finished it) with a mask that stops at the row's end.
func (pg *passGen) shift(n *ir.Node) reg.VecVirtual {
	c := pg.c
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
	x, last := n.Args[0], n.Args[1]
	base := pg.nodePtr(x)
	off := pg.off(x.Shape)
	nx := pg.ymm()
	if pg.f64 {
		c.VMASKMOVPD(elemMem(base, off, 8, 1), m, nx)
	} else {
		c.VMASKMOVPS(elemMem(base, off, 4, 1), m, nx)
	}
	lv := pg.load(last)
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
		case d.Name == pg.inner():
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
			c.IMUL3Q(operand.I32(int32(st[i])), pg.counters[pg.dom.Index(d.Name)], t)
			c.ADDQ(t, base)
		}
	}
	ptr := pg.nodePtr(x)
	c.LEAQ(elemMem(ptr, base, pg.esz(), 0), ptr)
	// Vector part: clamp(idx)·stride(axis) + lane·stride(inner).
	ii := pg.ymm()
	if pg.f64 {
		c.VCVTTPD2DQY(idx, ii.AsX())
	} else {
		c.VCVTTPS2DQ(idx, ii)
	}
	c.VPMAXSD(pg.cd(0), ii, ii)
	c.VPMINSD(pg.cd(int32(size-1)), ii, ii)
	c.VPMULLD(pg.cd(int32(st[xs.Index(axis)])), ii, ii)
	if laneStride != 0 {
		lanes := make([]operand.Constant, 8)
		for i := range lanes {
			lanes[i] = operand.U32(uint32(i * laneStride))
		}
		c.VPADDD(pg.data(fmt.Sprintf("lanestride%d", laneStride), lanes), ii, ii)
	}
	m := pg.ymm()
	if pg.rem > 0 {
		pg.mov(pg.laneMask(pg.rem, pg.f64), m)
	} else {
		c.VPCMPEQD(m, m, m)
	}
	y := pg.zero()
	if pg.f64 {
		c.VGATHERDPD(m, operand.Mem{Base: ptr, Index: ii.AsX(), Scale: 8}, y)
	} else {
		c.VGATHERDPS(m, operand.Mem{Base: ptr, Index: ii, Scale: 4}, y)
	}
	return y
}
