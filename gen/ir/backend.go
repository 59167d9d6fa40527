package ir

import (
	"fmt"
	"math"

	"github.com/lossgen/lossgen/runtime/vmath"
)

// ElemOps is the elementwise half of the op interface every backend implements, over its
// own value type V: a float64 (the interpreter, constant folding), a Go expression (gogen),
// a vector register (asmgen) or a PTX register (ptxgen). Adding an elementwise op adds a
// method here, so a backend that lacks it does not compile. Elem is the one dispatch.
// OpDetach, OpBroadcast and OpCustomGrad need no method: they are the identity on values
// (their first argument's).
type ElemOps[V any] interface {
	Neg(x V) V
	Abs(x V) V
	Exp(x V) V
	Log(x V) V
	Log1p(x V) V
	ExpM1MinusX(x V) V // e^x − 1 − x, accurate at small |x| (OpExpM1MinusX)
	Sqrt(x V) V
	RoundF32(x V) V // x rounded to float32 precision (OpRoundF32)
	Add(x, y V) V
	Sub(x, y V) V
	Mul(x, y V) V
	Div(x, y V) V
	Min(x, y V) V // NaN if either is NaN; −0 < +0
	Max(x, y V) V // NaN if either is NaN; +0 > −0
	Lt(x, y V) V  // comparisons give 1 or 0
	Le(x, y V) V
	Gt(x, y V) V
	Ge(x, y V) V
	Eq(x, y V) V
	Ne(x, y V) V // true for NaN, as Go's !=
	Where(c, x, y V) V
}

// Elem computes elementwise op on argument values with o.
func Elem[V any](o ElemOps[V], op Op, a []V) V {
	switch op {
	case OpNeg:
		return o.Neg(a[0])
	case OpAbs:
		return o.Abs(a[0])
	case OpExp:
		return o.Exp(a[0])
	case OpLog:
		return o.Log(a[0])
	case OpLog1p:
		return o.Log1p(a[0])
	case OpExpM1MinusX:
		return o.ExpM1MinusX(a[0])
	case OpSqrt:
		return o.Sqrt(a[0])
	case OpRoundF32:
		return o.RoundF32(a[0])
	case OpDetach, OpBroadcast, OpCustomGrad:
		return a[0]
	case OpAdd:
		return o.Add(a[0], a[1])
	case OpSub:
		return o.Sub(a[0], a[1])
	case OpMul:
		return o.Mul(a[0], a[1])
	case OpDiv:
		return o.Div(a[0], a[1])
	case OpMin:
		return o.Min(a[0], a[1])
	case OpMax:
		return o.Max(a[0], a[1])
	case OpLt:
		return o.Lt(a[0], a[1])
	case OpLe:
		return o.Le(a[0], a[1])
	case OpGt:
		return o.Gt(a[0], a[1])
	case OpGe:
		return o.Ge(a[0], a[1])
	case OpEq:
		return o.Eq(a[0], a[1])
	case OpNe:
		return o.Ne(a[0], a[1])
	case OpWhere:
		return o.Where(a[0], a[1], a[2])
	}
	panic(fmt.Sprintf("ir.Elem: %s is not elementwise", op))
}

// Float64Ops is ElemOps on float64: the reference semantics of every elementwise op
// (Apply), which constant folding and the interpreter use and every backend is tested
// against.
type Float64Ops struct{}

func (Float64Ops) Neg(x float64) float64         { return -x }
func (Float64Ops) Abs(x float64) float64         { return math.Abs(x) }
func (Float64Ops) Exp(x float64) float64         { return vmath.Exp(x) }
func (Float64Ops) Log(x float64) float64         { return vmath.Log(x) }
func (Float64Ops) Log1p(x float64) float64       { return vmath.Log1p(x) }
func (Float64Ops) ExpM1MinusX(x float64) float64 { return vmath.ExpM1MinusX(x) }
func (Float64Ops) Sqrt(x float64) float64        { return math.Sqrt(x) }
func (Float64Ops) RoundF32(x float64) float64    { return float64(float32(x)) }
func (Float64Ops) Add(x, y float64) float64      { return x + y }
func (Float64Ops) Sub(x, y float64) float64      { return x - y }
func (Float64Ops) Mul(x, y float64) float64      { return x * y }
func (Float64Ops) Div(x, y float64) float64      { return x / y }
func (Float64Ops) Min(x, y float64) float64      { return min(x, y) }
func (Float64Ops) Max(x, y float64) float64      { return max(x, y) }
func (Float64Ops) Lt(x, y float64) float64       { return b2f(x < y) }
func (Float64Ops) Le(x, y float64) float64       { return b2f(x <= y) }
func (Float64Ops) Gt(x, y float64) float64       { return b2f(x > y) }
func (Float64Ops) Ge(x, y float64) float64       { return b2f(x >= y) }
func (Float64Ops) Eq(x, y float64) float64       { return b2f(x == y) }
func (Float64Ops) Ne(x, y float64) float64       { return b2f(x != y) }
func (Float64Ops) Where(c, x, y float64) float64 {
	if c != 0 {
		return x
	}
	return y
}
