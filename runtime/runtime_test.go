package runtime

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestCheckLens(t *testing.T) {
	if err := CheckLens("k", Len{"a", 3, 3}); err != nil {
		t.Fatal(err)
	}
	err := CheckLens("k", Len{"in.A", 2, 3}, Len{"in.B", 3, 3}, Len{"out.C", 5, 4})
	var se *ShapeError
	if !errors.As(err, &se) || len(se.Bad) != 2 {
		t.Fatalf("got %v", err)
	}
	if want := "k: shape mismatch: in.A has 2 elements, want 3; out.C has 5 elements, want 4"; err.Error() != want {
		t.Fatalf("got %q, want %q", err, want)
	}
}

func lse(xs ...float64) float64 {
	a := NewLogSumExp()
	for _, x := range xs {
		a.Add(x)
	}
	return a.Result()
}

// The streaming logsumexp against the two-pass formula and torch's infinity rules.
func TestLogSumExp(t *testing.T) {
	xs := []float64{0.5, -3, 2, 2, 100, -1e10}
	m := 100.0
	s := 0.0
	for _, x := range xs {
		s += math.Exp(x - m)
	}
	if got, want := lse(xs...), m+math.Log(s); math.Abs(got-want) > 1e-13 {
		t.Fatalf("lse = %v, want %v", got, want)
	}
	inf := math.Inf(1)
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{1, inf, 2}, inf},
		{[]float64{inf, inf}, inf},
		{[]float64{math.Inf(-1), math.Inf(-1)}, math.Inf(-1)},
		{[]float64{math.Inf(-1), 0}, 0},
		{[]float64{}, math.Inf(-1)},
	} {
		if got := lse(c.xs...); got != c.want {
			t.Errorf("lse%v = %v, want %v", c.xs, got, c.want)
		}
	}
	if got := lse(1, math.NaN(), 2); !math.IsNaN(got) {
		t.Errorf("lse with NaN = %v", got)
	}
}

func TestWelford(t *testing.T) {
	var w Welford
	for _, x := range []float64{1, 3, 3, -1, 0, 2} {
		w.Add(x)
	}
	// mean 4/3; Σ(x−m)² = 104/9 − ... computed directly:
	var ss float64
	for _, x := range []float64{1, 3, 3, -1, 0, 2} {
		ss += (x - 4.0/3) * (x - 4.0/3)
	}
	if math.Abs(w.Var(0)-ss/6) > 1e-14 || math.Abs(w.Var(1)-ss/5) > 1e-14 {
		t.Fatalf("var = %v, %v; want %v, %v", w.Var(0), w.Var(1), ss/6, ss/5)
	}
	var e Welford
	for range 1000 {
		e.Add(0.1)
	}
	if e.Var(1) != 0 || e.Mean != 0.1 {
		t.Fatalf("equal values: var %v, mean %v", e.Var(1), e.Mean)
	}
}

func TestMean(t *testing.T) {
	var m Mean
	x := float64(float32(0.1))
	for range 4096 {
		m.Add(x)
	}
	if m.Result() != x {
		t.Fatalf("mean of equal float32 values = %v, want %v exactly", m.Result(), x)
	}
}

func TestArgMax(t *testing.T) {
	xs := []float64{1, 3, 3, math.Inf(-1)}
	a := NewArgMax()
	for i, x := range xs {
		a.Add(x, i)
	}
	r := NewArgMax()
	for i := len(xs) - 1; i >= 0; i-- {
		r.AddReverse(xs[i], i)
	}
	if a.Idx != 1 || r.Idx != 1 {
		t.Fatalf("first maximum: forward %d, reverse %d, want 1", a.Idx, r.Idx)
	}
	n := []float64{1, math.NaN(), 5, math.NaN()}
	a, r = NewArgMax(), NewArgMax()
	for i, x := range n {
		a.Add(x, i)
	}
	for i := len(n) - 1; i >= 0; i-- {
		r.AddReverse(n[i], i)
	}
	if a.Idx != 1 || r.Idx != 1 {
		t.Fatalf("first NaN: forward %d, reverse %d, want 1", a.Idx, r.Idx)
	}
	if Max(1, math.NaN()) == Max(1, math.NaN()) || Min(math.NaN(), 1) == Min(math.NaN(), 1) {
		t.Fatal("Max/Min must propagate NaN")
	}
}

func TestCheckDisjoint(t *testing.T) {
	a := make([]float32, 8)
	b := make([]float32, 8)
	in := make([]float64, 4)
	ok := []Span{SpanOf("in.X", in, false), SpanOf("in.Y", in, false), SpanOf("out.A", a, true), SpanOf("out.B", b, true)}
	if err := CheckDisjoint("k", ok); err != nil {
		t.Fatalf("inputs may share memory: %v", err)
	}
	for _, c := range []struct {
		spans []Span
		a, b  string
	}{
		{[]Span{SpanOf("out.A", a, true), SpanOf("out.B", a, true)}, "out.A", "out.B"},
		{[]Span{SpanOf("out.A", a, true), SpanOf("out.B", a[7:], true)}, "out.A", "out.B"},
		{[]Span{SpanOf("in.X", b[2:4], false), SpanOf("out.B", b, true)}, "out.B", "in.X"},
	} {
		err := CheckDisjoint("k", c.spans)
		oe, isOverlap := err.(*OverlapError)
		if !isOverlap || oe.A != c.a || oe.B != c.b {
			t.Errorf("%v: got %v, want %s and %s", c.spans, err, c.a, c.b)
		}
	}
	if err := CheckDisjoint("k", []Span{SpanOf("out.A", a[:4], true), SpanOf("out.B", a[4:], true)}); err != nil {
		t.Errorf("adjacent halves do not overlap: %v", err)
	}
}

// TestForBlockChunks checks the cuts of 43 indices into 3 chunks of whole 8-index blocks:
// 5 blocks split 1, 2, 2 (c·5/3), the last chunk with the 3-index tail.
func TestForBlockChunks(t *testing.T) {
	got := make([][2]int, 3)
	ForBlockChunks(3, 43, 8, func(c, lo, hi int) { got[c] = [2]int{lo, hi} })
	if want := [][2]int{{0, 8}, {8, 24}, {24, 43}}; !slices.Equal(got, want) {
		t.Fatalf("chunks %v, want %v", got, want)
	}
}

// TestEnvOn checks LOSSGEN_PUREGO's and LOSSGEN_AVX512's reading: set to a false value
// (ParseBool's, off, no) it is off.
func TestEnvOn(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "FALSE": false, "f": false, "off": false, "OFF": false, "no": false, "No": false, "1": true, "true": true, "yes": true, "on": true, " off ": false, "\t0": false, " 1": true, " ": false} {
		if got := envOn(v); got != want {
			t.Errorf("envOn(%q) = %v, want %v", v, got, want)
		}
	}
}

// FinishStd is the root of FinishVar's float64 variance, also where the variance is far
// beyond float32 (lanes of values 0 and 2e20, and 4e20: M2 ~ 1e40).
func TestFinishStd(t *testing.T) {
	var a, b Welford
	for _, x := range []float64{0, 2e20} {
		a.Add(x)
	}
	b.Add(4e20)
	n, mean, m2 := []float64{a.N, b.N}, []float64{a.Mean, b.Mean}, []float64{a.M2, b.M2}
	v, s := make([]float64, 1), make([]float64, 1)
	FinishVar(v, n, mean, m2, 2, 1)
	FinishStd(s, n, mean, m2, 2, 1)
	if want := 2e20; math.Abs(s[0]-want) > 1e-12*want || s[0] != math.Sqrt(v[0]) {
		t.Fatalf("FinishStd = %v, want %v = √%v", s[0], want, v[0])
	}
}
