package asmgen

import (
	"math"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
)

// compute emits node n on its argument registers and returns the result register. Every
// op rounds as the Go kernel does, except where FMA fuses a multiply-add inside exp, log,
// the scan's composition and the reductions (allowed by the kernels' tolerances).
func (pg *passGen) compute(n *ir.Node, a []reg.VecVirtual) reg.VecVirtual {
	switch n.Op.Class() {
	case ir.Scan:
		return pg.scan(n, a[0], a[1])
	case ir.Shift:
		return pg.shift(n, a[0])
	case ir.Gather:
		return pg.gather(n, a[0])
	}
	if maskedWhere(n) { // a[0] is the condition's lane mask (condmask.go)
		z := pg.ymm()
		switch zeroBranch(n) {
		case 2: // where(c, x, 0): x where the mask is all ones, +0 where it is all zeros
			pg.and(a[1], a[0], z)
		case 1: // where(c, 0, y)
			pg.andn(a[1], a[0], z)
		default:
			pg.blend(a[0], a[1], a[2], z)
		}
		return z
	}
	if z, ok := pg.compareWithMask(n, a); ok {
		return z
	}
	args := make([]operand.Op, len(n.Args))
	for i := range args {
		args[i] = a[min(i, len(a)-1)]
	}
	if c, v, ok := foldedConst(n); ok {
		// The constant is read from memory, as the second source (a[0] is the variable).
		args[v], args[1-v] = a[0], pg.cf(c)
		if v == 1 { // c + x, c·x: commute
			args[0], args[1] = args[1], args[0]
		}
	}
	switch n.Op {
	case ir.OpExp:
		return pg.expWithin(a[0], pg.e.g.Range(n.Args[0]))
	case ir.OpExpM1MinusX:
		return pg.expm1MinusX(a[0], pg.e.g.Range(n.Args[0]))
	}
	if boolOp(n) {
		return pg.boolOp(n, a[0], a[1])
	}
	if v, k, ok := constSide(n); ok && (n.Op == ir.OpMin || n.Op == ir.OpMax) {
		// Against a constant that is neither zero nor NaN, one VMINPS/VMAXPS with the
		// variable as the operand returned on NaN (Intel's second source) is exact.
		z := pg.ymm()
		pg.minmax(n.Op, a[v], a[k], z)
		return z
	}
	return ir.Elem[operand.Op](vecOps{pg.asm}, n.Op, args).(reg.VecVirtual)
}

// isBool reports whether n is a comparison: 0 or 1 in every lane, never NaN or −0.
func isBool(n *ir.Node) bool {
	_, ok := comparePred[n.Op]
	return ok
}

// vecOps is ir.ElemOps on YMM registers (a second source may be a memory operand) of pg's
// element type, or ir.RedOps on float64 ones with pg.a64 (the reductions' lane states).
type vecOps struct{ pg *asm }

// Const is c in every lane, read from memory.
func (o vecOps) Const(c float64) operand.Op { return o.pg.cf(c) }

func (o vecOps) r(x operand.Op) reg.VecVirtual {
	if v, ok := x.(reg.VecVirtual); ok {
		return v
	}
	v := o.pg.ymm()
	o.pg.mov(x, v)
	return v
}

func (o vecOps) bin(f func(x, y, z operand.Op), x, y operand.Op) operand.Op {
	z := o.pg.ymm()
	f(y, o.r(x), z)
	return z
}

func (o vecOps) Neg(x operand.Op) operand.Op {
	z := o.pg.ymm()
	o.pg.xor(o.pg.cf(math.Copysign(0, -1)), o.r(x), z)
	return z
}
func (o vecOps) Abs(x operand.Op) operand.Op {
	z, s := o.pg.ymm(), o.pg.ymm()
	o.pg.mov(o.pg.cf(math.Copysign(0, -1)), s)
	o.pg.andn(o.r(x), s, z)
	return z
}
func (o vecOps) Exp(x operand.Op) operand.Op   { return o.pg.expf(o.r(x)) }
func (o vecOps) Log(x operand.Op) operand.Op   { return o.pg.logf(o.r(x)) }
func (o vecOps) Log1p(x operand.Op) operand.Op { return o.pg.log1pf(o.r(x)) }
func (o vecOps) ExpM1MinusX(x operand.Op) operand.Op {
	return o.pg.expm1MinusX(o.r(x), ir.Interval{Lo: math.Inf(-1), Hi: math.Inf(1)})
}

// RoundF32 is x rounded to float32 in each lane: float64 lanes narrow to float32 and widen
// back (VCVTPD2PS rounds by MXCSR, to nearest even); float32 lanes are x.
func (o vecOps) RoundF32(x operand.Op) operand.Op {
	z := o.pg.ymm()
	if !o.pg.f64 {
		o.pg.mov(o.r(x), z)
		return z
	}
	o.pg.c.VCVTPD2PSY(o.r(x), z.AsX())
	o.pg.c.VCVTPS2PD(z.AsX(), z)
	return z
}
func (o vecOps) Sqrt(x operand.Op) operand.Op {
	z := o.pg.ymm()
	o.pg.sqrt(o.r(x), z)
	return z
}
func (o vecOps) Add(x, y operand.Op) operand.Op { return o.bin(o.pg.add, x, y) }
func (o vecOps) Sub(x, y operand.Op) operand.Op { return o.bin(o.pg.sub, x, y) }
func (o vecOps) Mul(x, y operand.Op) operand.Op { return o.bin(o.pg.mul, x, y) }
func (o vecOps) Div(x, y operand.Op) operand.Op { return o.bin(o.pg.div, x, y) }
func (o vecOps) Min(x, y operand.Op) operand.Op {
	z := o.pg.ymm()
	o.pg.minNaN(o.r(x), o.r(y), z)
	return z
}
func (o vecOps) Max(x, y operand.Op) operand.Op {
	z := o.pg.ymm()
	o.pg.maxNaN(o.r(x), o.r(y), z)
	return z
}
func (o vecOps) cmp(pred uint8, x, y operand.Op) operand.Op {
	z := o.pg.ymm()
	o.pg.cmp(pred, o.r(y), o.r(x), z)
	o.pg.and(o.pg.cf(1), z, z)
	return z
}
func (o vecOps) Lt(x, y operand.Op) operand.Op { return o.cmp(cmpLT_OQ, x, y) }
func (o vecOps) Le(x, y operand.Op) operand.Op { return o.cmp(cmpLE_OQ, x, y) }
func (o vecOps) Gt(x, y operand.Op) operand.Op { return o.cmp(cmpGT_OQ, x, y) }
func (o vecOps) Ge(x, y operand.Op) operand.Op { return o.cmp(cmpGE_OQ, x, y) }
func (o vecOps) Eq(x, y operand.Op) operand.Op { return o.cmp(cmpEQ_OQ, x, y) }
func (o vecOps) Ne(x, y operand.Op) operand.Op { return o.cmp(cmpNEQ_UQ, x, y) } // true for NaN, as in Go
func (o vecOps) Where(c, x, y operand.Op) operand.Op {
	m, z := o.pg.zero(), o.pg.ymm()
	o.pg.cmp(cmpNEQ_UQ, m, o.r(c), m)
	o.pg.blend(m, o.r(x), o.r(y), z)
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

// constSide finds a min/max whose one argument is a number other than ±0 and NaN in every
// lane (nonzeroNumbers); it returns the positions of the variable and that argument.
func constSide(n *ir.Node) (v, k int, ok bool) {
	for i, x := range n.Args {
		if nonzeroNumbers(x) {
			return 1 - i, i, true
		}
	}
	return 0, 0, false
}

// nonzeroNumbers reports whether every value of x is a number other than ±0 and NaN: a
// scalar constant, or a where choosing between two (ClipPPO's bound, e^hi or +inf).
func nonzeroNumbers(x *ir.Node) bool {
	k := func(x *ir.Node) bool { return x.IsScalarConst() && x.Value[0] != 0 && x.Value[0] == x.Value[0] }
	return k(x) || x.Op == ir.OpWhere && k(x.Args[1]) && k(x.Args[2])
}

// minmax is z = min/max(k, v) returning v when either is NaN (Go syntax puts Intel's second
// source first).
func (a *asm) minmax(op ir.Op, v, k, z reg.VecVirtual) {
	switch {
	case op == ir.OpMin && a.f64:
		a.c.VMINPD(v, k, z)
	case op == ir.OpMin:
		a.c.VMINPS(v, k, z)
	case a.f64:
		a.c.VMAXPD(v, k, z)
	default:
		a.c.VMAXPS(v, k, z)
	}
}
