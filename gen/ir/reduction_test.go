package ir

import (
	"math"
	"testing"
)

// TestEveryReductionDescribed: every op of class Reduce has a description whose Identity
// and Single match its Fields.
func TestEveryReductionDescribed(t *testing.T) {
	for _, op := range AllOps() {
		if op.Class() != Reduce {
			continue
		}
		func() {
			defer func() {
				if e := recover(); e != nil {
					t.Errorf("%s: %v", op, e)
				}
			}()
			r := ReductionOf[float64](op)
			st := r.Single(F64RedOps{}, 2, func() float64 { return 0 })
			if len(r.Identity) != len(r.Fields) || len(st) != len(r.Fields) {
				t.Errorf("%s: %d fields, %d identity values, %d in a single state", op, len(r.Fields), len(r.Identity), len(st))
			}
		}()
	}
}

// TestFold checks each description's fold against values computed by hand, with the
// special values whose handling the merges spell out.
func TestFold(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		op   Op
		xs   []float64
		corr int
		want float64
	}{
		{OpSum, []float64{1, 2, 3.5}, 0, 6.5},
		{OpMean, []float64{1, 2, 6}, 0, 3},
		{OpRMax, []float64{1, 5, -2}, 0, 5},
		{OpRMax, []float64{1, nan, 5}, 0, nan},
		{OpRMin, []float64{1, 5, -2}, 0, -2},
		{OpLogSumExp, []float64{0, 0}, 0, math.Ln2},
		{OpLogSumExp, []float64{1000, 1000}, 0, 1000 + math.Ln2},
		{OpLogSumExp, []float64{-inf, -inf}, 0, -inf},
		{OpLogSumExp, []float64{1, inf, 2}, 0, inf},
		{OpLogSumExp, []float64{1, nan}, 0, nan},
		{OpVar, []float64{1, 2, 3, 4}, 0, 1.25},
		{OpVar, []float64{1, 2, 3, 4}, 1, 5.0 / 3},
		{OpVar, []float64{1, inf, 2}, 0, nan},
		{OpVar, []float64{1, inf}, 0, nan},
		{OpStd, []float64{2, 4, 4, 4, 5, 5, 7, 9}, 0, 2},
		{OpStd, []float64{1, 3}, 1, math.Sqrt2},
		{OpArgMax, []float64{1, 3, 3, 2}, 0, 1},
		{OpArgMax, []float64{1, nan, 3, nan}, 0, 1},
		{OpArgMax, []float64{-inf, -inf}, 0, 0},
		{OpArgMax, nil, 0, 0},
	}
	for _, c := range cases {
		got := Fold(c.op, c.xs, c.corr)
		if !(got == c.want || got != got && c.want != c.want || math.Abs(got-c.want) <= 1e-15*math.Abs(c.want)) {
			t.Errorf("%s%v corr=%d = %v, want %v", c.op, c.xs, c.corr, got, c.want)
		}
	}
}

// TestMergeAssociates: merging the states of two halves gives the fold of the whole, as the
// lane and block merges of the kernels rely on.
func TestMergeAssociates(t *testing.T) {
	xs := []float64{3, -1, 7, 7, 0.5, -4, 2, 9}
	o := F64RedOps{}
	for _, op := range AllOps() {
		if op.Class() != Reduce {
			continue
		}
		r := ReductionOf[float64](op)
		fold := func(lo, hi int) []float64 {
			st := append([]float64(nil), r.Identity...)
			for i := lo; i < hi; i++ {
				st = r.Merge(o, st, r.Single(o, xs[i], func() float64 { return float64(i) }))
			}
			return st
		}
		whole := r.Finish(o, fold(0, len(xs)), 1)
		split := r.Finish(o, r.Merge(o, fold(0, 3), fold(3, len(xs))), 1)
		if !(math.Abs(whole-split) <= 1e-12*math.Abs(whole)) {
			t.Errorf("%s: fold %v, merged halves %v", op, whole, split)
		}
	}
}
