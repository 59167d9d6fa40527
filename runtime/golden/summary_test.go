package golden

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lossgen/lossgen/runtime/internal/check"
)

// output is a [rows, cols] output of scan-like values and its summary.
func output(rows, cols int) ([]float64, *Summary) {
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float64, rows*cols)
	for i := range w {
		w[i] = 3*r.NormFloat64() + 0.5
	}
	return w, Summarize("advantage", []int{rows, cols}, w)
}

var tol = Tol{Abs: 1e-6, Rel: 5e-6, Norm: 1e-5}

// withinTol is w with every element moved by up to its full tolerance, in random directions.
func withinTol(w []float64, m float64) []float64 {
	r := rand.New(rand.NewPCG(3, 4))
	got := make([]float64, len(w))
	for i, x := range w {
		b := tol.Abs + tol.Rel*math.Abs(x) + tol.Norm*m
		got[i] = x + b*(2*r.Float64()-1)*0.999
	}
	return got
}

// A kernel within the element tolerance everywhere passes every check, even pushed to the
// bound; the summary stays small.
func TestSummaryAcceptsWithinTolerance(t *testing.T) {
	for _, sh := range [][2]int{{64, 2048}, {300, 301}, {1, 5000}, {5000, 1}} {
		w, s := output(sh[0], sh[1])
		r, err := s.Check(withinTol(w, s.AbsMax), tol)
		check.NoError(t, err)
		check.Zero(t, r.Bad, "%v: %s", sh, r.First)
		// Systematic errors at the bound, all one way: sums at their bound still pass.
		up := make([]float64, len(w))
		for i, x := range w {
			up[i] = x + 0.999*(tol.Abs+tol.Rel*math.Abs(x)+tol.Norm*s.AbsMax)
		}
		r, err = s.Check(up, tol)
		check.NoError(t, err)
		check.Zero(t, r.Bad, "%v: %s", sh, r.First)
		check.LessOrEqual(t, len(s.Tiles), MaxTiles)
		check.LessOrEqual(t, len(s.Rows), MaxSegments)
		check.LessOrEqual(t, len(s.Cols), MaxSegments)
		check.Len(t, s.Index, SampleSize)
	}
}

// What the checksums catch beyond the sample: a wrong element, a wrong row, a wrong last
// step, an element out of its row's range, a NaN.
func TestSummaryCatches(t *testing.T) {
	w, s := output(64, 2048)
	sampled := map[int64]bool{}
	for _, i := range s.Index {
		sampled[i] = true
	}
	at := int64(5*2048 + 1000)
	for sampled[at] {
		at++
	}
	for _, c := range []struct {
		name string
		edit func(g []float64)
		want string
	}{
		{"one element off by 0.05 (130 tolerances)", func(g []float64) { g[at] += 0.05 }, "tile rows 5..5"},
		{"a row's unsampled elements shifted by 3 tolerances", func(g []float64) {
			for i := 7 * 2048; i < 8*2048; i++ {
				if !sampled[int64(i)] {
					g[i] += 3 * (tol.Abs + tol.Rel*math.Abs(w[i]) + tol.Norm*s.AbsMax)
				}
			}
		}, "row segment 7"},
		{"the last step of every row off by 0.01", func(g []float64) {
			for r := 0; r < 64; r++ {
				g[r*2048+2047] += 0.01
			}
		}, "column segment 255"},
		{"one element far out of range", func(g []float64) { g[at] = 1e3 }, "max"},
		{"a NaN", func(g []float64) { g[at] = math.NaN() }, "NaN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := append([]float64(nil), w...)
			c.edit(g)
			r, err := s.Check(g, tol)
			check.NoError(t, err)
			check.NotZero(t, r.Bad)
			check.Contains(t, strings.Join(r.Some, "\n"), c.want)
		})
	}
}

// CheckAt compares a partial result at the sampled positions it holds.
func TestSummaryCheckAt(t *testing.T) {
	w, s := output(64, 2048)
	idx := []int64{s.Index[3], s.Index[3] + 1, s.Index[10]}
	got := []float64{w[idx[0]], 99, w[idx[2]] + 1}
	r := s.CheckAt(idx, got, tol)
	check.Equal(t, "2 samples", r.Checked)
	check.Equal(t, 1, r.Bad)
	check.Contains(t, r.First, "flat index")
}

// Stored summaries are checked when read: a missing part or inconsistent boundaries are
// errors, not panics.
func TestReadSummaryRejects(t *testing.T) {
	_, s := output(8, 600)
	for _, c := range []struct {
		name string
		edit func(a map[string]Array)
		want string
	}{
		{"missing part", func(a map[string]Array) { delete(a, "y#tiles") }, "lacks y#tiles"},
		{"wrong type", func(a map[string]Array) { a["y#index"] = Array{Shape: []int{1}, Data: []float64{0}} }, "y#index is float64"},
		{"bounds", func(a map[string]Array) { a["y#rowseg"] = Array{Shape: []int{2}, Data: []int64{0, 7}} }, "do not cover 0..8"},
		{"sample outside", func(a map[string]Array) { a["y#index"].Data.([]int64)[1023] = 1 << 40 }, "outside"},
		{"tiles", func(a map[string]Array) { a["y#tiles"] = Array{Shape: []int{1, 1}, Data: []float64{0}} }, "tile sums"},
	} {
		a := s.Arrays("y")
		for k, x := range a {
			switch d := x.Data.(type) {
			case []int64:
				x.Data = append([]int64(nil), d...)
			case []float64:
				x.Data = append([]float64(nil), d...)
			}
			a[k] = x
		}
		c.edit(a)
		_, err := readSummary("y", a)
		check.ErrorContains(t, err, c.want, c.name)
	}
}
