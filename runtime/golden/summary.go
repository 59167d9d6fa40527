package golden

import (
	"fmt"
	"math"
	goruntime "runtime"
	"sort"
	"sync"

	"github.com/lossgen/lossgen/runtime"
)

// What a seeded case stores of an output, so that a package's golden directory does not grow
// with its shapes:
//
//   - an output of at most WholeMax elements (every scalar, and reduction-shaped outputs such
//     as a per-step explained variance up to 4096 steps) is stored whole, in float64, and
//     compared element by element;
//   - a larger output is stored as a Summary: SampleSize elements at fixed positions
//     (SampleIndex), compared element by element, per-segment checksums over its rows and
//     over its columns (Segments), and the sums of at most MaxTiles tiles (Tiles), compared
//     within bounds derived from the element tolerance.
//
// Rows and columns view the output as a matrix whose columns are its last dim (for an [N, T]
// batch: a row is a trajectory, a column a time step; a flat [B] output is one row). Each of
// at most MaxSegments row segments is a run of whole rows, the first and last row each a
// segment of their own; column segments likewise. For each segment the Summary holds the
// float64 sum (Neumaier-compensated, in row-major order), the sum of absolute values, the
// minimum and the maximum of the interpreter's values. For got values meeting the element
// tolerance |g − w| ≤ Abs + Rel·|w| + Norm·M (M: the output's largest finite |w|, stored
// as AbsMax) everywhere,
//
//	|Σg − Σw| ≤ n·(Abs + Norm·M) + Rel·Σ|w| + 4·n·2^-53·Σ|w|   (n elements in the segment)
//	|min g − min w|, |max g − max w| ≤ Abs + Rel·A + Norm·M   (A: the segment's largest |w|)
//
// and for a tile of n elements (whose Σ|w| is at most n·M)
//
//	|Σg − Σw| ≤ n·(Abs + (Rel + Norm)·M) + 4·n²·2^-53·M
//
// so these checks never fail a kernel that is within tolerance, and they catch what a
// sample can miss: a systematic error in one row (a trajectory) or one column (a time step,
// e.g. a wrong bootstrap at the last step) larger than its segment's sum bound, a wrong
// element or patch larger than its tile's sum bound, and any single element that falls
// outside its segment's range. NaN matches only NaN and an infinity only itself, in the
// samples and in the statistics alike.
const (
	WholeMax    = 4096
	SampleSize  = 1024
	MaxSegments = 256
	MaxTiles    = 2048
	// MaxTileRows is the most row runs of the tiles (each a run of whole rows; the columns
	// in MaxTiles/MaxTileRows runs or fewer).
	MaxTileRows = 64
)

// Summary is the stored form of a large output of a seeded case (see the constants).
type Summary struct {
	Shape  []int
	AbsMax float64   // the largest finite |w|
	Index  []int64   // the sampled flat indices, sorted
	Value  []float64 // the interpreter's values there
	RowSeg []int64   // row segment boundaries: segment k is rows [RowSeg[k], RowSeg[k+1])
	Rows   [][4]float64
	ColSeg []int64 // column segment boundaries
	Cols   [][4]float64
	// Tiles: the sums over tile (i, j) = rows [TileRows[i], TileRows[i+1]) × columns
	// [TileCols[j], TileCols[j+1]), row-major.
	TileRows, TileCols []int64
	Tiles              []float64
}

// Statistic fields of a segment.
const (
	StatSum = iota
	StatAbsSum
	StatMin
	StatMax
)

// NeedsSummary reports whether an output of n elements is stored as a Summary in a seeded
// case.
func NeedsSummary(n int) bool { return n > WholeMax }

// SampleIndex is the fixed sample of an output of n > SampleSize elements named name:
// stratified, one position in each of SampleSize equal strata of the flat index, drawn by
// lossgen's runtime generator (runtime.NewStream(n, "sample/"+name), draw 0 of the stratum),
// with the first element and the last one always in it. Sorted.
func SampleIndex(n int, name string) []int64 {
	if n <= SampleSize {
		idx := make([]int64, n)
		for i := range idx {
			idx[i] = int64(i)
		}
		return idx
	}
	s := runtime.NewStream(uint64(n), "sample/"+name)
	idx := make([]int64, SampleSize)
	for k := range idx {
		lo, hi := int64(k)*int64(n)/SampleSize, int64(k+1)*int64(n)/SampleSize
		idx[k] = lo + int64((s.Draw(k, 0)>>32*uint64(hi-lo))>>32)
	}
	idx[0], idx[SampleSize-1] = 0, int64(n-1)
	return idx
}

// Segments returns the boundaries of the segments of n rows (or columns): each its own
// segment when n ≤ MaxSegments, else the first and the last alone and the others in
// MaxSegments−2 runs of near-equal length.
func Segments(n int) []int64 {
	if n <= MaxSegments {
		b := make([]int64, n+1)
		for i := range b {
			b[i] = int64(i)
		}
		return b
	}
	b := []int64{0}
	for k := 0; k <= MaxSegments-2; k++ {
		b = append(b, 1+int64(k)*int64(n-2)/(MaxSegments-2))
	}
	return append(b, int64(n))
}

// lastDim is the length of a row of shape (its last dim; 1 for a scalar).
func lastDim(shape []int) int {
	if len(shape) == 0 {
		return 1
	}
	return shape[len(shape)-1]
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Summarize computes the Summary of output name (shape, the interpreter's values w).
func Summarize(name string, shape []int, w []float64) *Summary {
	s := &Summary{Shape: append([]int{}, shape...), AbsMax: AbsMax(w)}
	s.Index = SampleIndex(len(w), name)
	s.Value = make([]float64, len(s.Index))
	for k, i := range s.Index {
		s.Value[k] = w[i]
	}
	L := lastDim(shape)
	s.RowSeg, s.ColSeg = Segments(len(w)/L), Segments(L)
	s.TileRows, s.TileCols = Tiles(len(w)/L, L)
	st := computeStats(w, s.layout(), true)
	s.Rows, s.Cols, s.Tiles = st.rows, st.cols, st.tiles
	return s
}

// Tiles returns the row and column boundaries of the tiles of an output of rows × cols:
// the rows in min(rows, MaxTileRows) runs of near-equal length, the columns in
// min(cols, MaxTiles/row runs) runs.
func Tiles(rows, cols int) (tileRows, tileCols []int64) {
	split := func(n, k int) []int64 {
		b := make([]int64, k+1)
		for i := range b {
			b[i] = int64(i) * int64(n) / int64(k)
		}
		return b
	}
	r := min(rows, MaxTileRows)
	return split(rows, r), split(cols, min(cols, MaxTiles/r))
}

// acc is one segment's statistics being accumulated.
type acc struct {
	sum, c, abs, lo, hi float64
	nan                 bool
}

func newAcc() acc { return acc{lo: math.Inf(1), hi: math.Inf(-1)} }

// add folds x in with a Neumaier-compensated sum (exact adds for the stored statistics).
func (a *acc) add(x float64) {
	t := a.sum + x
	if math.Abs(a.sum) >= math.Abs(x) {
		a.c += (a.sum - t) + x
	} else {
		a.c += (x - t) + a.sum
	}
	a.sum = t
	a.addRest(x)
}

// addRest folds x into everything but the sum.
func (a *acc) addRest(x float64) {
	a.abs += math.Abs(x)
	if x != x {
		a.nan = true
	}
	if x < a.lo {
		a.lo = x
	}
	if x > a.hi {
		a.hi = x
	}
}

// merge folds another accumulator of the same segment in.
func (a *acc) merge(o acc) {
	a.sum += o.sum
	a.c += o.c
	a.abs += o.abs
	a.nan = a.nan || o.nan
	a.lo, a.hi = math.Min(a.lo, o.lo), math.Max(a.hi, o.hi)
}

func (a *acc) stats() [4]float64 {
	if a.nan {
		return [4]float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	}
	sum := a.sum + a.c
	if math.IsInf(a.sum, 0) || a.sum != a.sum {
		sum = a.sum // the compensation of an infinite sum is NaN
	}
	return [4]float64{sum, a.abs, a.lo, a.hi}
}

// layout is how a summary's statistics cut an output viewed as rows of L.
type layout struct {
	L                int
	rowSeg, tileRows []int64
	colOf, tileColOf []int32 // each column's segment and tile column
	ncols, ntileCols int
}

func (s *Summary) layout() layout {
	L := lastDim(s.Shape)
	idx := func(b []int64) []int32 {
		of := make([]int32, L)
		for k := 0; k+1 < len(b); k++ {
			for c := b[k]; c < b[k+1]; c++ {
				of[c] = int32(k)
			}
		}
		return of
	}
	return layout{L: L, rowSeg: s.RowSeg, tileRows: s.TileRows, colOf: idx(s.ColSeg), tileColOf: idx(s.TileCols),
		ncols: len(s.ColSeg) - 1, ntileCols: len(s.TileCols) - 1}
}

// stats are an output's segment statistics and tile sums.
type stats struct {
	rows, cols [][4]float64
	tiles      []float64
}

// computeStats computes the statistics of x under lay: with exact, compensated sums (what
// a summary stores), else plain float64 sums (a kernel's output under check: their rounding,
// below n·2^-53·Σ|x|, is inside the checks' bounds). Rows are split over goroutines in a
// fixed partition, so the result does not depend on scheduling.
func computeStats[T Float](x []T, lay layout, exact bool) stats {
	nrows := len(x) / lay.L
	rowTile := make([]int32, nrows)
	for k := 0; k+1 < len(lay.tileRows); k++ {
		for r := lay.tileRows[k]; r < lay.tileRows[k+1]; r++ {
			rowTile[r] = int32(k)
		}
	}
	nseg := len(lay.rowSeg) - 1
	ntiles := (len(lay.tileRows) - 1) * lay.ntileCols
	type part struct {
		cols  []acc
		tiles []acc
	}
	workers := max(1, min(goruntime.GOMAXPROCS(0), nseg, len(x)/(1<<16)))
	parts := make([]part, workers)
	ra := make([]acc, nseg)
	var wg sync.WaitGroup
	for w := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := part{cols: newAccs(lay.ncols), tiles: newAccs(ntiles)}
			for k := w * nseg / workers; k < (w+1)*nseg/workers; k++ {
				a := newAcc()
				for r := lay.rowSeg[k]; r < lay.rowSeg[k+1]; r++ {
					tiles := p.tiles[int(rowTile[r])*lay.ntileCols:]
					for c, v := range x[int(r)*lay.L : int(r+1)*lay.L] {
						f := float64(v)
						cs, ts := &p.cols[lay.colOf[c]], &tiles[lay.tileColOf[c]]
						if exact {
							a.add(f)
							cs.add(f)
							ts.add(f)
						} else {
							a.sum += f
							a.addRest(f)
							cs.sum += f
							cs.addRest(f)
							ts.sum += f
						}
					}
				}
				ra[k] = a
			}
			parts[w] = p
		}()
	}
	wg.Wait()
	p := parts[0]
	for _, q := range parts[1:] {
		for i := range p.cols {
			p.cols[i].merge(q.cols[i])
		}
		for i := range p.tiles {
			p.tiles[i].merge(q.tiles[i])
		}
	}
	st := stats{rows: statsOf(ra), cols: statsOf(p.cols), tiles: make([]float64, ntiles)}
	for i := range p.tiles {
		st.tiles[i] = p.tiles[i].stats()[StatSum]
	}
	return st
}

func newAccs(n int) []acc {
	a := make([]acc, n)
	for i := range a {
		a[i] = newAcc()
	}
	return a
}

func statsOf(a []acc) [][4]float64 {
	out := make([][4]float64, len(a))
	for i := range a {
		out[i] = a[i].stats()
	}
	return out
}

// Result is how an output compares with its golden values.
type Result struct {
	Checked string   // what was compared: "all 26944 elements", "1024 samples, 64 row and 256 column segments"
	Bad     int      // checks that failed (elements, or segment statistics)
	First   string   // the first failure, described
	Some    []string // the first few failures of a summary's checks, described
	MaxAbs  float64  // over the elements compared
	MaxRel  float64
	MaxNorm float64
}

// Check compares an output's values got with the case's golden values for it (whole or a
// Summary) under tol. An output the case does not hold is an error.
func (c *Case) Check(name string, got []float64, tol Tol) (Result, error) {
	return CheckOutput(c, name, got, tol)
}

// CheckOutput is Case.Check for outputs of any float type.
func CheckOutput[T Float](c *Case, name string, got []T, tol Tol) (Result, error) {
	if w, ok := c.Want[name]; ok {
		if w.Len() != len(got) {
			return Result{}, fmt.Errorf("case %s: %s has %d elements, the golden %d", c.Name, name, len(got), w.Len())
		}
		want := w.Float64s()
		d := CompareOf(want, got, tol)
		r := Result{Checked: fmt.Sprintf("all %d elements", len(got)), Bad: d.Bad, MaxAbs: d.MaxAbs, MaxRel: d.MaxRel, MaxNorm: d.MaxNorm}
		if d.Bad > 0 {
			r.First = fmt.Sprintf("%d of %d elements outside %+v; first at %d: got %v, want %v", d.Bad, len(got), tol, d.First, got[d.First], want[d.First])
		}
		return r, nil
	}
	if s, ok := c.Summary[name]; ok {
		return CheckSummary(s, got, tol)
	}
	return Result{}, fmt.Errorf("case %s has no golden %q", c.Name, name)
}

// Has reports whether the case holds golden values for output name.
func (c *Case) Has(name string) bool {
	_, w := c.Want[name]
	_, s := c.Summary[name]
	return w || s
}

// Check compares all of an output's values with the summary.
func (s *Summary) Check(got []float64, tol Tol) (Result, error) { return CheckSummary(s, got, tol) }

// CheckSummary is Summary.Check for outputs of any float type.
func CheckSummary[T Float](s *Summary, got []T, tol Tol) (Result, error) {
	if len(got) != numel(s.Shape) {
		return Result{}, fmt.Errorf("%d values against a summary of shape %v", len(got), s.Shape)
	}
	L := lastDim(s.Shape)
	g := computeStats(got, s.layout(), false)
	r := Result{Checked: fmt.Sprintf("%d samples, %d row and %d column segments, %d tiles (of %d elements)", len(s.Index), len(s.Rows), len(s.Cols), len(s.Tiles), len(got))}
	sg := make([]float64, len(s.Index))
	for k, i := range s.Index {
		sg[k] = float64(got[i])
	}
	s.checkSamples(&r, sg, s.Index, s.Value, tol)
	s.checkSegments(&r, "row", s.RowSeg, s.Rows, g.rows, L, tol)
	s.checkSegments(&r, "column", s.ColSeg, s.Cols, g.cols, len(got)/L, tol)
	s.checkTiles(&r, g.tiles, tol)
	return r, nil
}

// CheckAt compares the values got[k] at flat indices idx (sorted; a partial result such as
// a sampled PTX simulation) with the summary's samples at those indices; segments are not
// checked. It returns how many samples it compared in Checked.
func (s *Summary) CheckAt(idx []int64, got []float64, tol Tol) Result {
	var gi []int64
	var gv, wv []float64
	j := 0
	for k, i := range s.Index {
		for j < len(idx) && idx[j] < i {
			j++
		}
		if j < len(idx) && idx[j] == i {
			gi = append(gi, i)
			gv, wv = append(gv, got[j]), append(wv, s.Value[k])
		}
	}
	r := Result{Checked: fmt.Sprintf("%d samples", len(gv))}
	s.checkSamples(&r, gv, gi, wv, tol)
	return r
}

func (s *Summary) checkSamples(r *Result, got []float64, idx []int64, want []float64, tol Tol) {
	for k := range want {
		w, g := want[k], got[k]
		ok, ad := elementOK(w, g, tol, s.AbsMax)
		r.MaxAbs = math.Max(r.MaxAbs, ad)
		if w != 0 && !math.IsInf(ad, 0) {
			r.MaxRel = math.Max(r.MaxRel, ad/math.Abs(w))
		} else if ad != 0 {
			r.MaxRel = math.Inf(1)
		}
		if !ok {
			r.fail(fmt.Sprintf("sample at flat index %d: got %v, want %v (outside %+v)", idx[k], g, w, tol))
		}
	}
	if s.AbsMax > 0 {
		r.MaxNorm = r.MaxAbs / s.AbsMax
	} else if r.MaxAbs > 0 {
		r.MaxNorm = math.Inf(1)
	}
}

func (r *Result) fail(msg string) {
	if r.Bad == 0 {
		r.First = msg
	}
	if len(r.Some) < 10 {
		r.Some = append(r.Some, msg)
	}
	r.Bad++
}

// elementOK is Compare's test of one element, with the output's scale m; it also returns the
// absolute difference (+Inf for a NaN or infinity mismatch).
func elementOK(w, g float64, tol Tol, m float64) (bool, float64) {
	if math.IsNaN(w) || math.IsNaN(g) || math.IsInf(w, 0) || math.IsInf(g, 0) {
		if w == g || math.IsNaN(w) && math.IsNaN(g) {
			return true, 0
		}
		return false, math.Inf(1)
	}
	ad := math.Abs(g - w)
	return ad <= tol.Abs+tol.Rel*math.Abs(w)+tol.Norm*m, ad
}

// checkSegments compares per-segment statistics; other is the extent of the other axis (a
// row segment of k rows holds k·L elements, a column segment of k columns k·rows).
func (s *Summary) checkSegments(r *Result, what string, seg []int64, want, got [][4]float64, other int, tol Tol) {
	m := s.AbsMax
	for k := range want {
		w, g := want[k], got[k]
		n := float64(seg[k+1]-seg[k]) * float64(other)
		a := math.Max(math.Abs(w[StatMin]), math.Abs(w[StatMax]))
		sumTol := Tol{Abs: n*(tol.Abs+tol.Norm*m) + (tol.Rel+4*n*0x1p-53)*w[StatAbsSum]}
		rangeTol := Tol{Abs: tol.Abs + tol.Rel*a + tol.Norm*m}
		for _, c := range []struct {
			stat int
			name string
			tol  Tol
		}{{StatSum, "sum", sumTol}, {StatMin, "min", rangeTol}, {StatMax, "max", rangeTol}} {
			if ok, _ := elementOK(w[c.stat], g[c.stat], c.tol, 0); !ok {
				r.fail(fmt.Sprintf("%s segment %d (%ss %d..%d): %s %v, want %v within %.3g",
					what, k, what, seg[k], seg[k+1]-1, c.name, g[c.stat], w[c.stat], c.tol.Abs))
			}
		}
	}
}

// checkTiles compares the tile sums.
func (s *Summary) checkTiles(r *Result, got []float64, tol Tol) {
	nc := len(s.TileCols) - 1
	for k, w := range s.Tiles {
		i, j := k/nc, k%nc
		n := float64(s.TileRows[i+1]-s.TileRows[i]) * float64(s.TileCols[j+1]-s.TileCols[j])
		t := Tol{Abs: n*(tol.Abs+(tol.Rel+tol.Norm)*s.AbsMax) + 4*n*n*0x1p-53*s.AbsMax}
		if ok, _ := elementOK(w, got[k], t, 0); !ok {
			r.fail(fmt.Sprintf("tile rows %d..%d × columns %d..%d: sum %v, want %v within %.3g",
				s.TileRows[i], s.TileRows[i+1]-1, s.TileCols[j], s.TileCols[j+1]-1, got[k], w, t.Abs))
		}
	}
}

// Equal lists how two summaries differ: their positions and segments, or their values
// beyond tol (none: equal; lossgen golden compares stored and recomputed summaries).
func (s *Summary) Equal(o *Summary, tol Tol) []SummaryDiff {
	var diffs []SummaryDiff
	if fmt.Sprint(s.Shape, s.Index, s.RowSeg, s.ColSeg, s.TileRows, s.TileCols) != fmt.Sprint(o.Shape, o.Index, o.RowSeg, o.ColSeg, o.TileRows, o.TileCols) {
		return []SummaryDiff{{What: "shape, sample positions or segments"}}
	}
	flat := func(x [][4]float64) []float64 {
		out := make([]float64, 0, 4*len(x))
		for _, v := range x {
			out = append(out, v[:]...)
		}
		return out
	}
	for _, c := range []struct {
		what string
		a, b []float64
	}{{"absmax", []float64{s.AbsMax}, []float64{o.AbsMax}}, {"samples", s.Value, o.Value},
		{"row statistics", flat(s.Rows), flat(o.Rows)}, {"column statistics", flat(s.Cols), flat(o.Cols)},
		{"tile sums", s.Tiles, o.Tiles}} {
		if d := Compare(c.a, c.b, tol); d.Bad > 0 {
			diffs = append(diffs, SummaryDiff{What: c.what, Bad: d.Bad, MaxRel: d.MaxRel})
		}
	}
	return diffs
}

// SummaryDiff is one part of two summaries that differs (Summary.Equal): What (samples, row
// statistics, ...) at Bad values, the largest relative difference MaxRel. Bad 0: the
// summaries' layouts differ.
type SummaryDiff struct {
	What   string
	Bad    int
	MaxRel float64
}

func (d SummaryDiff) String() string {
	if d.Bad == 0 {
		return d.What + " differ"
	}
	return fmt.Sprintf("%s differ at %d values (max rel %.3g)", d.What, d.Bad, d.MaxRel)
}

// Arrays is the summary of output name as the .npz entries "<name>#<part>" of a want file
// (what lossgen writes, and OpenCases reads back).
func (s *Summary) Arrays(name string) map[string]Array {
	shape := make([]int64, len(s.Shape))
	for i, d := range s.Shape {
		shape[i] = int64(d)
	}
	flat := func(x [][4]float64) Array {
		out := make([]float64, 0, 4*len(x))
		for _, v := range x {
			out = append(out, v[:]...)
		}
		return Array{Shape: []int{len(x), 4}, Data: out}
	}
	return map[string]Array{
		name + "#shape":    {Shape: []int{len(shape)}, Data: shape},
		name + "#absmax":   {Shape: []int{}, Data: []float64{s.AbsMax}},
		name + "#index":    {Shape: []int{len(s.Index)}, Data: s.Index},
		name + "#value":    {Shape: []int{len(s.Value)}, Data: s.Value},
		name + "#rowseg":   {Shape: []int{len(s.RowSeg)}, Data: s.RowSeg},
		name + "#rows":     flat(s.Rows),
		name + "#colseg":   {Shape: []int{len(s.ColSeg)}, Data: s.ColSeg},
		name + "#cols":     flat(s.Cols),
		name + "#tilerows": {Shape: []int{len(s.TileRows)}, Data: s.TileRows},
		name + "#tilecols": {Shape: []int{len(s.TileCols)}, Data: s.TileCols},
		name + "#tiles":    {Shape: []int{len(s.TileRows) - 1, len(s.TileCols) - 1}, Data: s.Tiles},
	}
}

// summaryParts are the entries of a stored summary.
var summaryParts = []string{"shape", "absmax", "index", "value", "rowseg", "rows", "colseg", "cols", "tilerows", "tilecols", "tiles"}

// readSummary assembles a summary from its entries, checking that they fit together.
func readSummary(name string, a map[string]Array) (*Summary, error) {
	get := func(part, dtype string) (Array, error) {
		x, ok := a[name+"#"+part]
		if !ok {
			return Array{}, fmt.Errorf("summary of %s lacks %s#%s", name, name, part)
		}
		if x.DType() != dtype {
			return Array{}, fmt.Errorf("%s#%s is %s, want %s", name, part, x.DType(), dtype)
		}
		return x, nil
	}
	parts := map[string]Array{}
	for _, p := range summaryParts {
		dt := "float64"
		switch p {
		case "shape", "index", "rowseg", "colseg", "tilerows", "tilecols":
			dt = "int64"
		}
		x, err := get(p, dt)
		if err != nil {
			return nil, err
		}
		parts[p] = x
	}
	s := &Summary{AbsMax: parts["absmax"].Data.([]float64)[0]}
	n := 1
	for _, d := range parts["shape"].Data.([]int64) {
		if d <= 0 || int64(n) > math.MaxInt32/d {
			return nil, fmt.Errorf("%s#shape %v is empty or too large", name, parts["shape"].Data)
		}
		s.Shape = append(s.Shape, int(d))
		n *= int(d)
	}
	s.Index, s.Value = parts["index"].Data.([]int64), parts["value"].Data.([]float64)
	s.RowSeg, s.ColSeg = parts["rowseg"].Data.([]int64), parts["colseg"].Data.([]int64)
	L := lastDim(s.Shape)
	if len(s.Index) != len(s.Value) || !sort.SliceIsSorted(s.Index, func(i, j int) bool { return s.Index[i] < s.Index[j] }) {
		return nil, fmt.Errorf("%s: %d sample positions (sorted?) for %d values", name, len(s.Index), len(s.Value))
	}
	for _, i := range s.Index {
		if i < 0 || i >= int64(n) {
			return nil, fmt.Errorf("%s: sample position %d outside %d elements", name, i, n)
		}
	}
	var err error
	if s.Rows, err = segs(name, "row", s.RowSeg, parts["rows"], n/L); err != nil {
		return nil, err
	}
	if s.Cols, err = segs(name, "column", s.ColSeg, parts["cols"], L); err != nil {
		return nil, err
	}
	s.TileRows, s.TileCols = parts["tilerows"].Data.([]int64), parts["tilecols"].Data.([]int64)
	s.Tiles = parts["tiles"].Data.([]float64)
	for _, b := range []struct {
		what   string
		seg    []int64
		extent int
	}{{"tile row", s.TileRows, n / L}, {"tile column", s.TileCols, L}} {
		if err := checkBounds(name, b.what, b.seg, b.extent); err != nil {
			return nil, err
		}
	}
	if len(s.Tiles) != (len(s.TileRows)-1)*(len(s.TileCols)-1) {
		return nil, fmt.Errorf("%s: %d tile sums for %d×%d tiles", name, len(s.Tiles), len(s.TileRows)-1, len(s.TileCols)-1)
	}
	return s, nil
}

// checkBounds checks that boundaries cut 0..extent into non-empty runs.
func checkBounds(name, what string, seg []int64, extent int) error {
	if len(seg) < 2 || seg[0] != 0 || seg[len(seg)-1] != int64(extent) {
		return fmt.Errorf("%s: %s boundaries %v do not cover 0..%d", name, what, seg, extent)
	}
	for k := 1; k < len(seg); k++ {
		if seg[k] <= seg[k-1] {
			return fmt.Errorf("%s: %s boundaries are not increasing", name, what)
		}
	}
	return nil
}

func segs(name, what string, seg []int64, a Array, extent int) ([][4]float64, error) {
	if err := checkBounds(name, what+" segment", seg, extent); err != nil {
		return nil, err
	}
	v := a.Data.([]float64)
	if len(a.Shape) != 2 || a.Shape[0] != len(seg)-1 || a.Shape[1] != 4 {
		return nil, fmt.Errorf("%s: %s statistics of shape %v for %d segments", name, what, a.Shape, len(seg)-1)
	}
	out := make([][4]float64, len(seg)-1)
	for k := range out {
		copy(out[k][:], v[4*k:])
	}
	return out, nil
}
