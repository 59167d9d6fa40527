package ir_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lossgen/lossgen/gen/ir"
	lgrt "github.com/lossgen/lossgen/runtime"
)

// The runtime's accumulators and lane finishes are generated kernels' faster forms of lossgen's
// reductions; ir.ReductionOf describes each once. These tests check every form against a
// fold of its description (ir.Fold), on data with ties, NaNs and infinities.

// reductionData is rows of test data: random values, ties, and special values.
func reductionData() [][]float64 {
	r := rand.New(rand.NewPCG(1, 2))
	inf, nan, negZero := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	rows := [][]float64{
		{1, 3, 3, 2}, {-inf, -inf, -inf}, {1, inf, 2}, {-inf, 4, -inf}, {nan, 1, 2},
		{1, nan, 5, nan}, {2, 2, 2, 2, 2}, {700, 710, -3}, {negZero, 0, negZero}, {0, negZero}, {negZero, negZero},
	}
	for range 20 {
		row := make([]float64, 1+r.IntN(19))
		for i := range row {
			row[i] = math.Round(r.NormFloat64()*8) / 4 // ties are likely
		}
		rows = append(rows, row)
	}
	return rows
}

func same(got, want, rel float64) bool {
	return got == want || got != got && want != want || math.Abs(got-want) <= rel*math.Abs(want)
}

// TestAccumulatorsFollowDescriptions: the Go kernels' streaming accumulators.
func TestAccumulatorsFollowDescriptions(t *testing.T) {
	for _, xs := range reductionData() {
		lse, mean, w := lgrt.NewLogSumExp(), lgrt.Mean{}, lgrt.Welford{}
		mx, mn := math.Inf(-1), math.Inf(1)
		am, amr := lgrt.NewArgMax(), lgrt.NewArgMax()
		for i, x := range xs {
			lse.Add(x)
			mean.Add(x)
			w.Add(x)
			mx, mn = lgrt.Max(mx, x), lgrt.Min(mn, x)
			am.Add(x, i)
			j := len(xs) - 1 - i
			amr.AddReverse(xs[j], j)
		}
		check := func(op ir.Op, corr int, got float64, rel float64) {
			if want := ir.Fold(op, xs, corr); !same(got, want, rel) {
				t.Errorf("%s%v: accumulator %v, description %v", op, xs, got, want)
			}
		}
		check(ir.OpLogSumExp, 0, lse.Result(), 1e-14)
		check(ir.OpMean, 0, mean.Result(), 1e-14)
		check(ir.OpVar, 1, w.Var(1), 1e-12)
		check(ir.OpRMax, 0, mx, 0)
		check(ir.OpRMin, 0, mn, 0)
		check(ir.OpArgMax, 0, float64(am.Idx), 0)
		check(ir.OpArgMax, 0, float64(amr.Idx), 0)
	}
}

// TestLaneFinishesFollowDescriptions: the AVX2 glue's lane merges, on lane states folded
// from the description (element i in lane i mod lps).
func TestLaneFinishesFollowDescriptions(t *testing.T) {
	o := ir.F64RedOps{}
	for _, xs := range reductionData() {
		for _, lps := range []int{1, 4, 8} {
			lanes := func(op ir.Op) [][]float64 { // field → lane
				red := ir.ReductionOf[float64](op)
				st := make([][]float64, lps)
				for l := range st {
					st[l] = append([]float64(nil), red.Identity...)
				}
				for i, x := range xs {
					l := i % lps
					st[l] = red.Merge(o, st[l], red.Single(o, x, func() float64 { return float64(i) }))
				}
				out := make([][]float64, len(red.Fields))
				for f := range out {
					for l := range st {
						out[f] = append(out[f], st[l][f])
					}
				}
				return out
			}
			dst := make([]float64, 1)
			check := func(op ir.Op, corr int, rel float64) {
				if want := ir.Fold(op, xs, corr); !same(dst[0], want, rel) {
					t.Errorf("%s%v, %d lanes: finish %v, description %v", op, xs, lps, dst[0], want)
				}
			}
			s := lanes(ir.OpSum)
			lgrt.FinishSum(dst, s[0], lps)
			check(ir.OpSum, 0, 1e-14)
			lgrt.FinishMean(dst, s[0], lps, float64(len(xs)))
			check(ir.OpMean, 0, 1e-14)
			lgrt.FinishMax(dst, lanes(ir.OpRMax)[0], lps)
			check(ir.OpRMax, 0, 0)
			lgrt.FinishMin(dst, lanes(ir.OpRMin)[0], lps)
			check(ir.OpRMin, 0, 0)
			v := lanes(ir.OpVar)
			lgrt.FinishVar(dst, v[0], v[1], v[2], lps, 1)
			check(ir.OpVar, 1, 1e-12)
			s = lanes(ir.OpStd)
			lgrt.FinishStd(dst, s[0], s[1], s[2], lps, 1)
			check(ir.OpStd, 1, 1e-12)
			a := lanes(ir.OpArgMax)
			lgrt.FinishArgMax(dst, a[0], a[1], lps)
			check(ir.OpArgMax, 0, 0)
		}
	}
}

// TestMergeVarFollowsDescription: the chunk merge of Welford states.
func TestMergeVarFollowsDescription(t *testing.T) {
	o := ir.F64RedOps{}
	red := ir.ReductionOf[float64](ir.OpVar)
	rows := reductionData()
	for i := 0; i+1 < len(rows); i++ {
		var a, b lgrt.Welford
		for _, x := range rows[i] {
			a.Add(x)
		}
		for _, x := range rows[i+1] {
			b.Add(x)
		}
		n, mean, m2 := []float64{a.N}, []float64{a.Mean}, []float64{a.M2}
		lgrt.MergeVar(n, mean, m2, []float64{b.N}, []float64{b.Mean}, []float64{b.M2})
		want := red.Merge(o, []float64{a.N, a.Mean, a.M2}, []float64{b.N, b.Mean, b.M2})
		for f, got := range []float64{n[0], mean[0], m2[0]} {
			if !same(got, want[f], 0) {
				t.Errorf("rows %d, %d: field %s: MergeVar %v, description %v", i, i+1, red.Fields[f], got, want[f])
			}
		}
	}
}
