package ir

import (
	"fmt"
	"math"
)

// RedOps is what a reduction's description computes with: the elementwise ops (ElemOps) on
// a backend's float64 values, and float64 constants. Every backend's reduction states are
// float64, whatever the kernel's element type.
type RedOps[V any] interface {
	ElemOps[V]
	Const(c float64) V
}

// Reduction describes one reduction kind once, for every backend, over the backend's float64
// value type V: a fold of per-element states. Each backend runs Single, Merge and Finish
// through its RedOps, so a new reduction needs no backend code, and one whose description
// uses an op a backend lacks does not compile. A backend may override a reduction with a
// faster form of the same semantics (the Go runtime's streaming accumulators, the AVX2
// logsumexp guard); the op zoo (gen/ops_test.go) runs every backend both ways
// (Graph.GenericReductions) against the interpreter.
type Reduction[V any] struct {
	Fields   []string  // the state's fields, one float64 value each
	Identity []float64 // the empty state, one value per field
	// Corrected reports whether Finish reads the node's Corr (torch's correction).
	Corrected bool
	// Single is the state of one element x; idx gives its position along the reduced axis
	// (argmax only calls it: an index costs code in a kernel).
	Single func(o RedOps[V], x V, idx func() V) []V
	// Merge is the state of a's elements followed by b's (a fold's fixed order: argmax
	// breaks ties by index, so merging in another order gives the same result).
	Merge func(o RedOps[V], a, b []V) []V
	// Finish is the reduction's value from a state; corr is the node's Corr.
	Finish func(o RedOps[V], st []V, corr int) V
}

// ReductionOf returns op's description over value type V. Every op of class Reduce has one
// (TestEveryReductionDescribed); asking for another op is a generator bug.
func ReductionOf[V any](op Op) *Reduction[V] {
	var r *Reduction[V]
	switch op {
	case OpSum:
		r = single1[V]("s", func(o RedOps[V], a, b V) V { return o.Add(a, b) }, 0)
	case OpMean:
		r = meanRed[V]()
	case OpRMax:
		r = single1[V]("m", func(o RedOps[V], a, b V) V { return o.Max(a, b) }, math.Inf(-1))
	case OpRMin:
		r = single1[V]("m", func(o RedOps[V], a, b V) V { return o.Min(a, b) }, math.Inf(1))
	case OpLogSumExp:
		r = lseRed[V]()
	case OpVar:
		r = welfordRed[V](false)
	case OpStd:
		r = welfordRed[V](true)
	case OpArgMax:
		r = argMaxRed[V]()
	default:
		panic(fmt.Sprintf("ir: %s has no reduction description", op))
	}
	return r
}

// single1 is a reduction whose state is one value, field name, merged by f from identity id.
func single1[V any](name string, f func(o RedOps[V], a, b V) V, id float64) *Reduction[V] {
	return &Reduction[V]{
		Fields: []string{name}, Identity: []float64{id},
		Single: func(_ RedOps[V], x V, _ func() V) []V { return []V{x} },
		Merge:  func(o RedOps[V], a, b []V) []V { return []V{f(o, a[0], b[0])} },
		Finish: func(_ RedOps[V], st []V, _ int) V { return st[0] },
	}
}

// meanRed is Σx / n from (s, n), divided once at the end.
func meanRed[V any]() *Reduction[V] {
	return &Reduction[V]{
		Fields: []string{"s", "n"}, Identity: []float64{0, 0},
		Single: func(o RedOps[V], x V, _ func() V) []V { return []V{x, o.Const(1)} },
		Merge: func(o RedOps[V], a, b []V) []V {
			return []V{o.Add(a[0], b[0]), o.Add(a[1], b[1])}
		},
		Finish: func(o RedOps[V], st []V, _ int) V { return o.Div(st[0], st[1]) },
	}
}

// lseRed is torch.logsumexp from (m, s) with s = Σ e^(x−m), m the running maximum. A merge
// rescales each s by e^(mᵢ−m), taken as 1 when mᵢ = m (also for equal infinities, where
// mᵢ − m is NaN); an empty state (s = 0) adds nothing; a NaN anywhere makes s NaN.
func lseRed[V any]() *Reduction[V] {
	return &Reduction[V]{
		Fields: []string{"m", "s"}, Identity: []float64{math.Inf(-1), 0},
		Single: func(o RedOps[V], x V, _ func() V) []V { return []V{x, o.Const(1)} },
		Merge: func(o RedOps[V], a, b []V) []V {
			m := o.Max(a[0], b[0])
			scale := func(mi, si V) V {
				e := o.Where(o.Eq(mi, m), o.Const(1), o.Exp(o.Sub(mi, m)))
				return o.Where(o.Eq(si, o.Const(0)), o.Const(0), o.Mul(si, e))
			}
			s := o.Add(scale(a[0], a[1]), scale(b[0], b[1]))
			nan := o.Max(o.Ne(m, m), o.Ne(s, s)) // either is NaN
			return []V{m, o.Where(nan, o.Const(math.NaN()), s)}
		},
		Finish: func(o RedOps[V], st []V, _ int) V { return o.Add(st[0], o.Log(st[1])) },
	}
}

// welfordRed is torch.var (or its square root, torch.std) with a correction, from Welford
// states (n, mean, M2) merged by Chan, Golub and LeVeque's pairwise update; NaN when an
// element is infinite or NaN, as torch's two-pass form.
func welfordRed[V any](std bool) *Reduction[V] {
	return &Reduction[V]{
		Fields: []string{"n", "mean", "m2"}, Identity: []float64{0, 0, 0}, Corrected: true,
		Single: func(o RedOps[V], x V, _ func() V) []V { return []V{o.Const(1), x, o.Const(0)} },
		Merge: func(o RedOps[V], a, b []V) []V {
			n := o.Add(a[0], b[0])
			d := o.Sub(b[1], a[1])
			mean := o.Add(a[1], o.Div(o.Mul(d, b[0]), n))
			m2 := o.Add(o.Add(a[2], b[2]), o.Div(o.Mul(o.Mul(o.Mul(d, d), a[0]), b[0]), n))
			out := []V{n, mean, m2}
			// An empty side contributes nothing (and must not divide 0 by 0).
			ea, eb := o.Eq(a[0], o.Const(0)), o.Eq(b[0], o.Const(0))
			for i := range out {
				out[i] = o.Where(eb, a[i], o.Where(ea, b[i], out[i]))
			}
			return out
		},
		Finish: func(o RedOps[V], st []V, corr int) V {
			v := o.Div(st[2], o.Sub(st[0], o.Const(float64(corr))))
			// An infinite x makes torch's x − mean NaN somewhere (the mean is infinite or
			// NaN); Chan's merge may leave M2 infinite instead.
			v = o.Where(o.Ne(o.Sub(st[1], st[1]), o.Const(0)), o.Const(math.NaN()), v)
			if std {
				return o.Sqrt(v)
			}
			return v
		},
	}
}

// argMaxRed is torch.argmax from (best, idx): the larger best value wins, a NaN counting
// as the largest, ties (and two NaNs) going to the lower index. The empty state's index is
// +inf, so any element's wins; a result with none is index 0.
func argMaxRed[V any]() *Reduction[V] {
	return &Reduction[V]{
		Fields: []string{"best", "idx"}, Identity: []float64{math.Inf(-1), math.Inf(1)},
		Single: func(_ RedOps[V], x V, idx func() V) []V { return []V{x, idx()} },
		Merge: func(o RedOps[V], a, b []V) []V {
			or, and := o.Max, o.Min // on 0/1 truth values
			an, bn := o.Ne(a[0], a[0]), o.Ne(b[0], b[0])
			lower := o.Lt(b[1], a[1])
			take := or(o.Gt(b[0], a[0]), and(o.Eq(b[0], a[0]), lower)) // larger, or equal and earlier
			take = or(take, and(and(an, bn), lower))                   // two NaNs: the earlier
			take = or(take, and(o.Eq(an, o.Const(0)), bn))             // a NaN against a number
			return []V{o.Where(take, b[0], a[0]), o.Where(take, b[1], a[1])}
		},
		Finish: func(o RedOps[V], st []V, _ int) V {
			return o.Where(o.Eq(st[1], o.Const(math.Inf(1))), o.Const(0), st[1])
		},
	}
}

// F64RedOps is RedOps on float64 scalars: the reference semantics of every reduction's
// description (Fold).
type F64RedOps struct{ Float64Ops }

// Const returns c.
func (F64RedOps) Const(c float64) float64 { return c }

// Fold reduces xs in order with op's description on float64 scalars; corr is the node's
// Corr. It is the semantics every backend's reduction (and every override) is tested
// against; xs empty gives the empty state's result.
func Fold(op Op, xs []float64, corr int) float64 {
	r := ReductionOf[float64](op)
	o := F64RedOps{}
	st := append([]float64(nil), r.Identity...)
	for i, x := range xs {
		st = r.Merge(o, st, r.Single(o, x, func() float64 { return float64(i) }))
	}
	return r.Finish(o, st, corr)
}
