package runtime

import "math"

// The accumulators below are the per-element steps of the reductions in generated Go
// kernels. They work in float64 whatever the kernel's dtype, so a float32 kernel's sums over
// millions of elements keep float32 accuracy in the result. Their semantics are those of
// lossgen's IR (gen/ir): NaN propagates, and infinities follow torch.

// LogSumExp streams torch.logsumexp: m + log Σ exp(x − m) with m the running maximum,
// rescaling the sum when the maximum grows (one exp per element).
type LogSumExp struct {
	M, S float64
}

// NewLogSumExp returns an empty accumulator (result −inf).
func NewLogSumExp() LogSumExp { return LogSumExp{M: math.Inf(-1)} }

// Add accumulates x.
func (a *LogSumExp) Add(x float64) {
	switch {
	case x > a.M:
		a.S = a.S*math.Exp(a.M-x) + 1
		a.M = x
	case x == a.M: // also +inf == +inf and −inf == −inf, where x − m is NaN
		a.S++
	default:
		a.S += math.Exp(x - a.M) // NaN x makes S NaN
	}
}

// Result returns log Σ exp x: +inf if any x is +inf, −inf if all are −inf, NaN if any is NaN.
func (a *LogSumExp) Result() float64 { return a.M + math.Log(a.S) }

// Mean streams a mean: a float64 sum and a count, divided once at the end.
type Mean struct {
	Sum, N float64
}

// Add accumulates x.
func (a *Mean) Add(x float64) {
	a.Sum += x
	a.N++
}

// Result returns Σx/n.
func (a *Mean) Result() float64 { return a.Sum / a.N }

// Welford streams the mean and the sum of squared deviations (Welford 1962), stable in one pass.
type Welford struct {
	N, Mean, M2 float64
}

// Add accumulates x.
func (a *Welford) Add(x float64) {
	a.N++
	d := x - a.Mean
	a.Mean += d / a.N
	a.M2 += d * (x - a.Mean)
}

// Var returns Σ(x − mean)²/(n − correction), as torch.var: NaN when an element is infinite
// or NaN (the mean then is; a state merged by Chan's update may hold an infinite M2).
func (a *Welford) Var(correction int) float64 {
	if a.Mean-a.Mean != 0 {
		return math.NaN()
	}
	return a.M2 / (a.N - float64(correction))
}

// Max returns the NaN-propagating maximum of the running value m and x.
func Max(m, x float64) float64 {
	if x > m || x != x {
		return x
	}
	return m
}

// Min returns the NaN-propagating minimum of the running value m and x.
func Min(m, x float64) float64 {
	if x < m || x != x {
		return x
	}
	return m
}

// ArgMax tracks torch.argmax: the first index of the maximum, a NaN counting as maximal.
type ArgMax struct {
	Best float64
	Idx  int
}

// NewArgMax returns an empty tracker (index 0).
func NewArgMax() ArgMax { return ArgMax{Best: math.Inf(-1)} }

// Add offers x at index i; indices must arrive in increasing order.
func (a *ArgMax) Add(x float64, i int) {
	if a.Best == a.Best && (x > a.Best || x != x) {
		a.Best, a.Idx = x, i
	}
}

// AddReverse offers x at index i; indices must arrive in decreasing order.
func (a *ArgMax) AddReverse(x float64, i int) {
	if x != x || (a.Best == a.Best && x >= a.Best) {
		a.Best, a.Idx = x, i
	}
}

// B2F is a comparison as 0 or 1: the reductions that generated kernels run from their
// description (lossgen's ir.ReductionOf) compute with float64 truth values.
func B2F(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Sel is a where c ≠ 0, else b (torch.where on float64 truth values; see B2F).
func Sel(c, a, b float64) float64 {
	if c != 0 {
		return a
	}
	return b
}

// CutMul is a scan's step product y·c, rounded to T: +0 where c is 0, whatever y holds (a
// done step cuts the recursion, and NaN or ±inf in the padding after it reaches nothing).
func CutMul[T Float](y, c T) T {
	if c == 0 {
		return 0
	}
	return y * c
}
