package ir

import (
	"fmt"
	"math"
)

// ElemOps is the elementwise half of the op interface every backend implements, over its
// own value type V: a float64 (the interpreter, constant folding), a Go expression (gogen),
// a vector register (asmgen) or a PTX register (ptxgen). Adding an elementwise op adds a
// method here, so a backend that lacks it does not compile. Elem is the one dispatch.
// OpDetach and OpBroadcast need no method: they are the identity on values.
type ElemOps[V any] interface {
	Neg(x V) V
	Abs(x V) V
	Exp(x V) V
	Log(x V) V
	Log1p(x V) V
	Sqrt(x V) V
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
	case OpSqrt:
		return o.Sqrt(a[0])
	case OpDetach, OpBroadcast:
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

func (Float64Ops) Neg(x float64) float64    { return -x }
func (Float64Ops) Abs(x float64) float64    { return math.Abs(x) }
func (Float64Ops) Exp(x float64) float64    { return math.Exp(x) }
func (Float64Ops) Log(x float64) float64    { return math.Log(x) }
func (Float64Ops) Log1p(x float64) float64  { return math.Log1p(x) }
func (Float64Ops) Sqrt(x float64) float64   { return math.Sqrt(x) }
func (Float64Ops) Add(x, y float64) float64 { return x + y }
func (Float64Ops) Sub(x, y float64) float64 { return x - y }
func (Float64Ops) Mul(x, y float64) float64 { return x * y }
func (Float64Ops) Div(x, y float64) float64 { return x / y }
func (Float64Ops) Min(x, y float64) float64 { return min(x, y) }
func (Float64Ops) Max(x, y float64) float64 { return max(x, y) }
func (Float64Ops) Lt(x, y float64) float64  { return b2f(x < y) }
func (Float64Ops) Le(x, y float64) float64  { return b2f(x <= y) }
func (Float64Ops) Gt(x, y float64) float64  { return b2f(x > y) }
func (Float64Ops) Ge(x, y float64) float64  { return b2f(x >= y) }
func (Float64Ops) Eq(x, y float64) float64  { return b2f(x == y) }
func (Float64Ops) Ne(x, y float64) float64  { return b2f(x != y) }
func (Float64Ops) Where(c, x, y float64) float64 {
	if c != 0 {
		return x
	}
	return y
}

// Reduction describes one reduction kind for every backend: its state (float64 fields),
// the identity each field starts from, the state of one element, how two states merge
// (the later elements' state second) and how a state finishes. These float64 functions are
// the semantics; the runtime's Go accumulators, the AVX2 lane merges and the PTX block
// merges implement them (and are tested against them).
type Reduction struct {
	Fields   []string
	Identity []float64
	// Single is the state of one element x at position i along the reduced axis (i is used
	// by argmax only).
	Single func(x, i float64) []float64
	Merge  func(a, b []float64) []float64
	// Finish gives the result; corr is OpVar's correction.
	Finish func(st []float64, corr int) float64
}

// Reductions holds every reduction op's description. A test checks that every op of class
// Reduce has one.
var Reductions = map[Op]*Reduction{
	OpSum:  sumRed(false),
	OpMean: sumRed(true),
	OpRMax: {
		Fields: []string{"m"}, Identity: []float64{math.Inf(-1)},
		Single: func(x, _ float64) []float64 { return []float64{x} },
		Merge:  func(a, b []float64) []float64 { return []float64{max(a[0], b[0])} },
		Finish: func(st []float64, _ int) float64 { return st[0] },
	},
	OpRMin: {
		Fields: []string{"m"}, Identity: []float64{math.Inf(1)},
		Single: func(x, _ float64) []float64 { return []float64{x} },
		Merge:  func(a, b []float64) []float64 { return []float64{min(a[0], b[0])} },
		Finish: func(st []float64, _ int) float64 { return st[0] },
	},
	OpLogSumExp: {
		Fields: []string{"m", "s"}, Identity: []float64{math.Inf(-1), 0},
		Single: func(x, _ float64) []float64 { return []float64{x, 1} },
		Merge:  mergeLSE,
		Finish: func(st []float64, _ int) float64 { return st[0] + math.Log(st[1]) },
	},
	OpVar: {
		Fields: []string{"n", "mean", "m2"}, Identity: []float64{0, 0, 0},
		Single: func(x, _ float64) []float64 { return []float64{1, x, 0} },
		Merge:  mergeVar,
		Finish: func(st []float64, corr int) float64 { return st[2] / (st[0] - float64(corr)) },
	},
	OpArgMax: {
		Fields: []string{"best", "idx"}, Identity: []float64{math.Inf(-1), math.Inf(1)},
		Single: func(x, i float64) []float64 { return []float64{x, i} },
		Merge:  mergeArgMax,
		Finish: func(st []float64, _ int) float64 {
			if math.IsInf(st[1], 1) {
				return 0
			}
			return st[1]
		},
	},
}

// sumRed is Σx (state s) or, for a mean, Σx / n (state s, n).
func sumRed(mean bool) *Reduction {
	r := &Reduction{Fields: []string{"s"}, Identity: []float64{0},
		Single: func(x, _ float64) []float64 { return []float64{x} },
		Merge:  func(a, b []float64) []float64 { return []float64{a[0] + b[0]} },
		Finish: func(st []float64, _ int) float64 { return st[0] },
	}
	if mean {
		r.Fields, r.Identity = []string{"s", "n"}, []float64{0, 0}
		r.Single = func(x, _ float64) []float64 { return []float64{x, 1} }
		r.Merge = func(a, b []float64) []float64 { return []float64{a[0] + b[0], a[1] + b[1]} }
		r.Finish = func(st []float64, _ int) float64 { return st[0] / st[1] }
	}
	return r
}

// mergeLSE combines (m₁, s₁) and (m₂, s₂) with s = Σ e^(x−m): m = max, each s rescaled by
// e^(mᵢ−m) (1 when mᵢ = m, also for equal infinities); an empty state (s = 0) adds nothing;
// NaN anywhere gives NaN.
func mergeLSE(a, b []float64) []float64 {
	switch {
	case a[0] != a[0] || b[0] != b[0] || a[1] != a[1] || b[1] != b[1]:
		return []float64{math.NaN(), math.NaN()}
	case a[1] == 0:
		return b
	case b[1] == 0:
		return a
	case a[0] == b[0]:
		return []float64{a[0], a[1] + b[1]}
	case a[0] > b[0]:
		return []float64{a[0], a[1] + b[1]*math.Exp(b[0]-a[0])}
	}
	return []float64{b[0], b[1] + a[1]*math.Exp(a[0]-b[0])}
}

// mergeVar is Chan, Golub and LeVeque's pairwise update of Welford states (n, mean, M2).
func mergeVar(a, b []float64) []float64 {
	switch {
	case a[0] == 0:
		return b
	case b[0] == 0:
		return a
	}
	n := a[0] + b[0]
	d := b[1] - a[1]
	return []float64{n, a[1] + d*b[0]/n, a[2] + b[2] + d*d*a[0]*b[0]/n}
}

// mergeArgMax keeps the larger best value, a NaN counting as the largest, ties (and two NaNs)
// going to the lower index: torch.argmax's first maximal index.
func mergeArgMax(a, b []float64) []float64 {
	an, bn := a[0] != a[0], b[0] != b[0]
	take := b[0] > a[0] || (b[0] == a[0] && b[1] < a[1]) || (an && bn && b[1] < a[1]) || (!an && bn)
	if take {
		return b
	}
	return a
}
