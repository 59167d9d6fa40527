package ir

import "math"

// Op is an IR operation.
type Op uint8

// The IR operations. Elementwise ops broadcast by dim name; reductions remove their Axes;
// OpScanRev, OpShiftNext and OpGather work along one axis (Axes[0]).
const (
	OpInput Op = iota // a kernel input
	OpConst           // a constant baked into the kernel

	// Elementwise, one argument.
	OpNeg
	OpAbs
	OpExp
	OpLog
	OpLog1p
	OpSqrt

	// Elementwise, two arguments. Comparisons give 0 or 1.
	OpAdd
	OpSub
	OpMul
	OpDiv
	OpMin // as Go's min: NaN if either is NaN (torch.minimum), and −0 < +0
	OpMax // as Go's max: NaN if either is NaN (torch.maximum), and −0 < +0
	OpLt
	OpLe
	OpGt
	OpGe
	OpEq
	OpNe

	// OpWhere(c, a, b) is a where c ≠ 0, else b (torch.where; c is never NaN in lowered graphs).
	OpWhere

	// Reductions over Axes.
	OpSum       // Σ x
	OpMean      // Σ x / n (one rounding: a float32 mean of equal values is that value)
	OpRMax      // max x, NaN-propagating; −inf for no elements
	OpRMin      // min x, NaN-propagating
	OpLogSumExp // log Σ exp x, computed as torch.logsumexp: m + log Σ exp(x − m), m = max x (m = 0 when infinite)
	OpVar       // Σ (x − mean)² / (n − Corr)
	OpArgMax    // first index of the maximum along the one axis (NaN counts as maximal, as torch.argmax)

	// OpScanRev(x, c) along the last axis t: y[t] = x[t] + c[t]·y[t+1], with y[T] = 0.
	// GAE, TD(λ), TD(1) and V-trace all reduce to it (SEMANTICS.md §3.8).
	OpScanRev
	// OpShiftNext(x, last) along the last axis: y[t] = x[t+1] for t < T−1, y[T−1] = last[T−1].
	OpShiftNext
	// OpGather(x, idx) along axis a of x: y[i] = x[i, idx[i]]; idx is an index in [0, |a|).
	OpGather

	numOps
)

// Class groups ops by how a fused loop handles them.
type Class uint8

// The op classes.
const (
	Leaf        Class = iota // input, const
	Elementwise              // computed at each index of its shape
	Reduce                   // accumulated over Axes; the result is ready after the loop
	Scan                     // a recurrence along the last axis, run in reverse
	Shift                    // reads a neighbour along the last axis
	Gather                   // reads at a data-dependent index
)

var opInfo = [numOps]struct {
	name  string
	arity int
	class Class
}{
	OpInput: {"input", 0, Leaf}, OpConst: {"const", 0, Leaf},
	OpNeg: {"neg", 1, Elementwise}, OpAbs: {"abs", 1, Elementwise}, OpExp: {"exp", 1, Elementwise},
	OpLog: {"log", 1, Elementwise}, OpLog1p: {"log1p", 1, Elementwise}, OpSqrt: {"sqrt", 1, Elementwise},
	OpAdd: {"add", 2, Elementwise}, OpSub: {"sub", 2, Elementwise}, OpMul: {"mul", 2, Elementwise},
	OpDiv: {"div", 2, Elementwise}, OpMin: {"min", 2, Elementwise}, OpMax: {"max", 2, Elementwise},
	OpLt: {"lt", 2, Elementwise}, OpLe: {"le", 2, Elementwise}, OpGt: {"gt", 2, Elementwise},
	OpGe: {"ge", 2, Elementwise}, OpEq: {"eq", 2, Elementwise}, OpNe: {"ne", 2, Elementwise},
	OpWhere: {"where", 3, Elementwise},
	OpSum:   {"sum", 1, Reduce}, OpMean: {"mean", 1, Reduce}, OpRMax: {"reduce_max", 1, Reduce}, OpRMin: {"reduce_min", 1, Reduce},
	OpLogSumExp: {"logsumexp", 1, Reduce}, OpVar: {"var", 1, Reduce}, OpArgMax: {"argmax", 1, Reduce},
	OpScanRev: {"scan_rev", 2, Scan}, OpShiftNext: {"shift_next", 2, Shift}, OpGather: {"gather", 2, Gather},
}

func (o Op) String() string { return opInfo[o].name }

// Arity returns the number of arguments.
func (o Op) Arity() int { return opInfo[o].arity }

// Class returns the op's class.
func (o Op) Class() Class { return opInfo[o].class }

// AllOps lists every op, for tests that check a backend covers them all.
func AllOps() []Op {
	out := make([]Op, 0, numOps)
	for o := Op(0); o < numOps; o++ {
		out = append(out, o)
	}
	return out
}

// Apply evaluates an elementwise op on float64 scalars. It is the one definition of the
// elementwise semantics: the interpreter and constant folding call it, and every backend is
// tested against it.
func Apply(op Op, a ...float64) float64 {
	switch op {
	case OpNeg:
		return -a[0]
	case OpAbs:
		return math.Abs(a[0])
	case OpExp:
		return math.Exp(a[0])
	case OpLog:
		return math.Log(a[0])
	case OpLog1p:
		return math.Log1p(a[0])
	case OpSqrt:
		return math.Sqrt(a[0])
	case OpAdd:
		return a[0] + a[1]
	case OpSub:
		return a[0] - a[1]
	case OpMul:
		return a[0] * a[1]
	case OpDiv:
		return a[0] / a[1]
	case OpMin:
		return min(a[0], a[1])
	case OpMax:
		return max(a[0], a[1])
	case OpLt:
		return b2f(a[0] < a[1])
	case OpLe:
		return b2f(a[0] <= a[1])
	case OpGt:
		return b2f(a[0] > a[1])
	case OpGe:
		return b2f(a[0] >= a[1])
	case OpEq:
		return b2f(a[0] == a[1])
	case OpNe:
		return b2f(a[0] != a[1])
	case OpWhere:
		if a[0] != 0 {
			return a[1]
		}
		return a[2]
	}
	panic("ir.Apply: not an elementwise op: " + op.String())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
