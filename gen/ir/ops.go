package ir

// Op is an IR operation.
type Op uint8

// The IR operations. Elementwise ops broadcast by dim name; reductions remove their Axes;
// OpScan, OpShiftNext and OpGather work along one axis (Axes[0]).
const (
	OpInput Op = iota // a kernel input
	OpConst           // a constant baked into the kernel
	// OpIota is the index along its one axis (Axes[0]; its Shape is that dim): 0, 1, ...,
	// |axis|−1, or counted from the end (|axis|−1, ..., 0) when the node is Reverse. Every
	// backend computes it from the loop index, so no kernel holds a constant that grows with
	// a dim (a one-hot over a 256k-token vocabulary). Indices past 2^24 are not exact in
	// float32: Reverse marks the last index exactly on any axis.
	OpIota

	// Elementwise, one argument.
	OpNeg
	OpAbs
	OpExp
	OpLog
	OpLog1p
	// OpExpM1MinusX is e^x − 1 − x (Schulman's k3 KL estimator, TorchRL's expm1(x) − x)
	// without the cancellation of that difference at small |x|: every backend evaluates
	// x²·Σ x^k/(k+2)! there (from its exp's own polynomial) and e^x − 1 − x elsewhere. It is
	// ≥ 0; NaN at +inf (∞ − ∞, as torch), +inf at −inf.
	OpExpM1MinusX
	OpSqrt
	// OpRoundF32 is x rounded to the nearest float32 (ties to even), held in the kernel's type:
	// a value TorchRL keeps in a float32 tensor inside a float64 computation (KLPEN's β after
	// its in-place update). The identity in a float32 kernel; its gradient is g (a cast's).
	OpRoundF32
	// OpDetach is the identity that stops gradients (torch's .detach()): every backend
	// computes nothing for it; the autodiff pass sends no gradient through it.
	OpDetach
	// OpBroadcast is the identity onto a larger shape (its node's Shape): a value with fewer
	// dims repeated along the others, as any elementwise op repeats its operands. The autodiff
	// pass makes a gradient its input's shape with it.
	OpBroadcast

	// Elementwise, two arguments. Comparisons give 0 or 1.
	OpAdd
	OpSub
	OpMul
	OpDiv
	OpMin // as Go's min: NaN if either is NaN (torch.minimum), and −0 < +0; see Node.TieFirst
	OpMax // as Go's max: NaN if either is NaN (torch.maximum), and −0 < +0; see Node.TieFirst
	OpLt
	OpLe
	OpGt
	OpGe
	OpEq
	OpNe

	// OpWhere(c, a, b) is a where c ≠ 0, else b (torch.where; c is never NaN in lowered graphs).
	OpWhere
	// OpCustomGrad(y, x, d) is y, whose derivative with respect to x is d (JAX's custom_jvp,
	// a torch.autograd.Function's backward): the autodiff pass sends g·d to x and nothing
	// into y's own graph or d. The custom-grad pass replaces it by y before planning (after
	// autodiff, for ForwardBackward), so no kernel computes d unless a gradient reads it. A
	// lowering gives a closed-form derivative where differentiating y's formula costs more
	// (a series whose derivative has a closed form).
	OpCustomGrad

	// Reductions over Axes. A reduction over batch dims is a barrier (its result exists once
	// the whole batch has been seen); one over other dims (actions, atoms, ensemble members)
	// is finished inside the element loop (see package plan).
	OpSum       // Σ x
	OpMean      // Σ x / n (one rounding: a float32 mean of equal values is that value)
	OpRMax      // max x, NaN-propagating; −inf for no elements
	OpRMin      // min x, NaN-propagating
	OpLogSumExp // log Σ exp x, computed as torch.logsumexp: m + log Σ exp(x − m), m = max x (m = 0 when infinite)
	OpVar       // Σ (x − mean)² / (n − Corr)
	OpStd       // √(Σ (x − mean)² / (n − Corr)), torch.std (GRPO's per-group advantage scale)
	OpArgMax    // first index of the maximum along the one axis (NaN counts as maximal, as torch.argmax)

	// OpScan(x, c) along axis t: y[t] = x[t] + c[t]·y[t+1] with y[T] = 0 when the node is
	// Reverse (the discounted returns of GAE, TD(λ), TD(1) and V-trace, SEMANTICS.md §3.8),
	// y[t] = x[t] + c[t]·y[t−1] with y[−1] = 0 otherwise. With Node.Cut a c[t] of 0 cuts
	// the line: its product is +0 whatever y[t±1] holds, so NaN or ±inf past a done step
	// (padding) does not reach y[t] (0·NaN would be NaN); on finite values this is c[t]·y[t±1]
	// but for the sign of a zero.
	OpScan
	// OpShiftNext(x, last) along axis t: y[t] = x[t+1] for t < T−1, y[T−1] = last[T−1].
	OpShiftNext
	// OpGather(x, idx) along axis a of x: y[i] = x[i, idx[i]]; idx is an index in [0, |a|).
	OpGather

	numOps
)

// Class groups ops by how a fused loop handles them.
type Class uint8

// The op classes.
const (
	Leaf        Class = iota // input, const, iota
	Elementwise              // computed at each index of its shape
	Reduce                   // accumulated over Axes; the result is ready after the loop
	Scan                     // a recurrence along one axis, in its direction
	Shift                    // reads a neighbour along one axis
	Gather                   // reads at a data-dependent index
)

var opInfo = [numOps]struct {
	name  string
	arity int
	class Class
}{
	OpInput: {"input", 0, Leaf}, OpConst: {"const", 0, Leaf}, OpIota: {"iota", 0, Leaf},
	OpNeg: {"neg", 1, Elementwise}, OpAbs: {"abs", 1, Elementwise}, OpExp: {"exp", 1, Elementwise},
	OpLog: {"log", 1, Elementwise}, OpLog1p: {"log1p", 1, Elementwise}, OpExpM1MinusX: {"expm1_minus_x", 1, Elementwise}, OpSqrt: {"sqrt", 1, Elementwise},
	OpRoundF32: {"round_f32", 1, Elementwise},
	OpDetach:   {"detach", 1, Elementwise}, OpBroadcast: {"broadcast", 1, Elementwise},
	OpAdd: {"add", 2, Elementwise}, OpSub: {"sub", 2, Elementwise}, OpMul: {"mul", 2, Elementwise},
	OpDiv: {"div", 2, Elementwise}, OpMin: {"min", 2, Elementwise}, OpMax: {"max", 2, Elementwise},
	OpLt: {"lt", 2, Elementwise}, OpLe: {"le", 2, Elementwise}, OpGt: {"gt", 2, Elementwise},
	OpGe: {"ge", 2, Elementwise}, OpEq: {"eq", 2, Elementwise}, OpNe: {"ne", 2, Elementwise},
	OpWhere: {"where", 3, Elementwise}, OpCustomGrad: {"custom_grad", 3, Elementwise},
	OpSum: {"sum", 1, Reduce}, OpMean: {"mean", 1, Reduce}, OpRMax: {"reduce_max", 1, Reduce}, OpRMin: {"reduce_min", 1, Reduce},
	OpLogSumExp: {"logsumexp", 1, Reduce}, OpVar: {"var", 1, Reduce}, OpStd: {"std", 1, Reduce}, OpArgMax: {"argmax", 1, Reduce},
	OpScan: {"scan", 2, Scan}, OpShiftNext: {"shift_next", 2, Shift}, OpGather: {"gather", 2, Gather},
}

func (o Op) String() string { return opInfo[o].name }

// Aliases reports whether the op's value is its first argument's (detach, broadcast,
// custom_grad): backends compute nothing for it and read that argument's value.
func (o Op) Aliases() bool { return o == OpDetach || o == OpBroadcast || o == OpCustomGrad }

// Arity returns the number of arguments.
func (o Op) Arity() int { return opInfo[o].arity }

// Class returns the op's class.
func (o Op) Class() Class { return opInfo[o].class }

// Welford reports whether o is a variance or a standard deviation: the same Welford states
// (count, mean, M2), merged alike; a std takes the root of the finished float64 variance.
func (o Op) Welford() bool { return o == OpVar || o == OpStd }

// AllOps lists every op, for tests that check a backend covers them all.
func AllOps() []Op {
	out := make([]Op, 0, numOps)
	for o := Op(0); o < numOps; o++ {
		out = append(out, o)
	}
	return out
}

// Apply evaluates an elementwise op on float64 scalars (Float64Ops): the one definition of
// the elementwise semantics. The interpreter and constant folding call it, and every
// backend is tested against it.
func Apply(op Op, a ...float64) float64 { return Elem[float64](Float64Ops{}, op, a) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
