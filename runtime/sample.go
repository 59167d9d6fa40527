package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// This file is lossgen's one generator of golden-case inputs. lossgen's `golden -update`
// draws a seeded case's inputs with it and stores only the recipe (CaseRecipe); a generated
// package's test draws the same inputs again from the recipe. The bits must therefore be the
// same on every platform and Go version, so the generator uses only integer arithmetic,
// integer-to-float conversions and single IEEE float64 operations whose results Go defines
// exactly: no math/rand (whose streams may change between Go versions), no transcendental
// functions (math.Log and friends may differ by an ulp between platforms), and every
// product explicitly rounded (float64(a*b)) so that no compiler may fuse it into an FMA.
//
// The draws (GeneratorName "splitmix64-ctr/1"):
//
//   - mix(z) is SplitMix64's output function: z ^= z>>30; z *= 0xbf58476d1ce4e5b9;
//     z ^= z>>27; z *= 0x94d049bb133111eb; z ^= z>>31 (uint64, wrapping).
//   - An input's stream key is s = mix(seed ^ fnv1a64(logical key)): the case seed and the
//     input's logical key (so a spec that renames its data keys gets the same values).
//   - Draw j (0 ≤ j < 8) of element i (its row-major flat index) is
//     d(i, j) = mix(s + (8·i + j + 1)·0x9e3779b97f4a7c15): counter-based, so any element is
//     drawn on its own and an input is filled in parallel.
//   - A uniform u(i, j) = (d(i, j) >> 11) · 2^-53, in [0, 1) with 53 random bits (exact).
//   - A normal z(i) is Irwin–Hall: the sum S of the eight 16-bit lanes of d(i, 0) and
//     d(i, 1) (exact), then z = (S − 262140) · c with c = 1.224744871391589 · 2^-16 (√1.5 to
//     the nearest float64, scaled exactly; one rounding): mean 0, variance 1 within 2^-32,
//     within ±4.9.
//
// Sample kinds (Sample.Dist), each value computed in float64 and then stored as the input's
// type (float32(v) rounds to nearest even; bools are v ≠ 0; indices int64(v)):
//
//   - "uniform": Lo + float64((Hi−Lo)·u(i, 0)).
//   - "normal": Mean + float64(Std·z(i)).
//   - "flag": 1 if u(i, 0) < P, else 0.
//   - "index": (d(i, 0)>>32 · IndexRange) >> 32, uniform over [0, IndexRange).
//   - "onehot": a one-hot vector along the last dim (of size IndexRange): element i is 1
//     where i mod IndexRange is the "index" draw of the row's first element i − i mod IndexRange.
//   - "const": Mean (kernel state, which starts where the package's NewState does).
//
// Case variants (InputRecipe.Mode):
//
//   - "" (typical): the sample above.
//   - "extreme": the sample, then with ExtremeLog element i%4 = 0 is 0 and i%4 = 1 is
//     6·(2·u(i, 3) − 1); else with ExtremeBig i%5 = 0 is 0 and i%5 = 1 is multiplied by
//     1000; else with ExtremeNil i%3 = 0 is 0; else with ExtremeAction i%3 = 0 is
//     1 − 2·((i/3)%2) (exactly on the bounds ±1). Then, with L the last dim's size, r = i/L
//     the row and j = i%L the column: with ExtremeLogits, row r%5 = 0 has −inf at even
//     j < L−1, row r%5 = 1 has the dtype's most negative finite value at j = 0, row r%5 = 2
//     is 10000 − j (huge near-equal logits), row r%5 = 3 is 0.5 everywhere (exact ties).
//     Then with ExtremeTie every odd j copies element i−1's value as computed so far (ties
//     along the last dim); else with ExtremeRows every row r%3 = 1 is 0 (all-masked rows).
//   - "pattern": the done/terminated situations (no randomness), one per line along the
//     time axis, cycling over six lines: none; done and terminated in the middle (step
//     T/2); done only in the middle (a truncation); terminated only in the middle; both on
//     the last step; done at every step, terminated at every even step. Key "done" gets the
//     done flags, any other key the terminated ones. (Within then applies as below, so where
//     terminated is Within done the terminated-only line has no flag.)
//
// Then, in recipe order, Offset adds the (already final) values of the input whose key it
// names (log_prob = sample_log_prob + a small offset) and Within multiplies by them
// (terminated ⊆ done). Last, Pins (K values) set element i ≥ 2 with (i − 2) mod 4(K+1) =
// 4k, k < K, to Pins[k] (log-ratios exactly on the clip bounds).
//
// To add a distribution: a Sample field or Dist value, its case in draw (and its JSON name);
// lossgen's case building and every generated test use this code, so nothing else changes.

// GeneratorName names the generator algorithm above; a recipe made by another one is
// refused rather than silently regenerated differently.
const GeneratorName = "splitmix64-ctr/1"

// GoldenFormat is the version of lossgen's golden case format: seeded cases stored as a
// recipe (<case>.in.json) plus sampled outputs. Format 1 stored every input.
const GoldenFormat = 2

// Sample says how golden cases draw a key's values (the spec registry's KeyDef.Sample):
// uniform in [Lo, Hi), normal (Mean, Std), a flag true with probability P, or an index
// along the stage's action dim. Offset adds the values of another key (log_prob =
// sample_log_prob + a small offset); Within keeps a flag true only where another one is
// (terminated ⊆ done).
type Sample struct {
	Dist       string  `json:"dist"` // "uniform", "normal", "flag", "index", "onehot", "const"
	Lo         float64 `json:"lo,omitempty"`
	Hi         float64 `json:"hi,omitempty"`
	Mean       float64 `json:"mean,omitempty"`
	Std        float64 `json:"std,omitempty"`
	P          float64 `json:"p,omitempty"`
	Offset     string  `json:"offset,omitempty"`
	Within     string  `json:"within,omitempty"`
	ExtremeLog bool    `json:"extreme_log,omitempty"` // the "extreme" case pushes it to ±6 nats of its offset base and exact ties
	ExtremeBig bool    `json:"extreme_big,omitempty"` // the "extreme" case puts zeros and ±1e3 values in it
	ExtremeNil bool    `json:"extreme_nil,omitempty"` // the "extreme" case puts exact zeros in every third element
	// ExtremeLogits: the "extreme" case puts −inf, the most negative finite value, huge
	// near-equal logits (10000, 9999) and exact ties in some rows.
	ExtremeLogits bool `json:"extreme_logits,omitempty"`
	// ExtremeAction: the "extreme" case puts continuous actions exactly on the bounds ±1.
	ExtremeAction bool `json:"extreme_action,omitempty"`
	// ExtremeTie: the "extreme" case makes every second element along the last dim equal
	// to the one before it (tied maxima, tied expected values over atoms).
	ExtremeTie bool `json:"extreme_tie,omitempty"`
	// ExtremeRows: the "extreme" case clears every third row (all elements along the last
	// dim) of a flag: all-masked rows.
	ExtremeRows bool `json:"extreme_rows,omitempty"`
}

// InputRecipe is how one input of a seeded case is drawn.
type InputRecipe struct {
	Name  string `json:"name"`  // the data name (the kernel's input name)
	Key   string `json:"key"`   // the logical key: it seeds the stream; Offset and Within name keys
	Kind  string `json:"kind"`  // "float", "bool" or "index"
	Shape []int  `json:"shape"` // row-major
	// Mode is "" (the typical sample), "extreme" or "pattern" (see the file comment).
	Mode   string `json:"mode,omitempty"`
	Sample Sample `json:"sample"`
	// IndexRange is the extent an index input selects along (a one-hot input's last dim).
	IndexRange int `json:"index_range,omitempty"`
	// Pins are values set at fixed elements after everything else (see the file comment).
	Pins []float64 `json:"pins,omitempty"`
	// TimeAxis is the axis of Shape the "pattern" flags run along.
	TimeAxis int `json:"time_axis,omitempty"`
	// Checksum is InputChecksum of the stored values: a regenerated input that differs in
	// any bit is reported, not silently tested.
	Checksum string `json:"checksum"`
}

// CaseRecipe is a seeded golden case as stored: everything needed to draw its inputs again,
// bit for bit.
type CaseRecipe struct {
	Format    int           `json:"format"`    // GoldenFormat
	Generator string        `json:"generator"` // GeneratorName
	Case      string        `json:"case"`      // random, flags, extreme
	Seed      uint64        `json:"seed"`
	DType     string        `json:"dtype"` // the kernel's float type: float32 or float64
	Inputs    []InputRecipe `json:"inputs"`
}

// ParseRecipe decodes a stored recipe and checks that this generator can draw it.
func ParseRecipe(data []byte) (*CaseRecipe, error) {
	var r CaseRecipe
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // a misspelt field would otherwise draw its default silently
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a lossgen case recipe: %w", err)
	}
	if r.Format != GoldenFormat {
		return nil, fmt.Errorf("golden format %d, this lossgen reads format %d: run lossgen golden -update", r.Format, GoldenFormat)
	}
	if r.Generator != GeneratorName {
		return nil, fmt.Errorf("inputs drawn by generator %q, this lossgen has %q: run lossgen golden -update", r.Generator, GeneratorName)
	}
	if r.DType != "float32" && r.DType != "float64" {
		return nil, fmt.Errorf("dtype %q (want float32 or float64)", r.DType)
	}
	for _, in := range r.Inputs {
		if err := in.check(); err != nil {
			return nil, fmt.Errorf("input %q: %w", in.Name, err)
		}
	}
	return &r, nil
}

// maxInputElements bounds an input a recipe may ask for (2^31 − 1 elements).
const maxInputElements = math.MaxInt32

func (in *InputRecipe) check() error {
	n := 1
	for _, d := range in.Shape {
		if d <= 0 || n > maxInputElements/d {
			return fmt.Errorf("shape %v is empty or too large", in.Shape)
		}
		n *= d
	}
	switch in.Kind {
	case "float", "bool":
		if len(in.Shape) == 0 && in.Sample.Dist == "onehot" {
			return fmt.Errorf("a one-hot input needs a last dim")
		}
	case "index":
		if in.IndexRange < 1 || in.IndexRange > math.MaxInt32 {
			return fmt.Errorf("index range %d out of [1, 2^31)", in.IndexRange)
		}
	default:
		return fmt.Errorf("kind %q (want float, bool or index)", in.Kind)
	}
	switch in.Sample.Dist {
	case "uniform", "normal", "flag", "index", "onehot", "const":
	case "":
		if in.Mode != "pattern" { // the done/terminated patterns draw nothing
			return fmt.Errorf("no sample dist")
		}
	default:
		return fmt.Errorf("sample dist %q (want uniform, normal, flag, index, onehot or const)", in.Sample.Dist)
	}
	if in.Sample.Dist == "onehot" && (in.IndexRange < 1 || in.IndexRange != in.Shape[len(in.Shape)-1]) {
		return fmt.Errorf("one-hot range %d is not the last dim of shape %v", in.IndexRange, in.Shape)
	}
	switch in.Mode {
	case "", "extreme":
	case "pattern":
		if in.TimeAxis < 0 || in.TimeAxis >= len(in.Shape) {
			return fmt.Errorf("time axis %d out of shape %v", in.TimeAxis, in.Shape)
		}
	default:
		return fmt.Errorf("mode %q (want \"\", extreme or pattern)", in.Mode)
	}
	return nil
}

// Len is the number of elements of the input.
func (in *InputRecipe) Len() int {
	n := 1
	for _, d := range in.Shape {
		n *= d
	}
	return n
}

// mix is SplitMix64's output function.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

const golden64 = 0x9e3779b97f4a7c15

func fnv1a64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Stream is one input's counter-based stream of draws.
type Stream uint64

// NewStream is the stream of the input with logical key key in the case seeded seed.
func NewStream(seed uint64, key string) Stream { return Stream(mix(seed ^ fnv1a64(key))) }

// Draw is draw j (0 ≤ j < 8) of element i.
func (s Stream) Draw(i, j int) uint64 { return mix(uint64(s) + (8*uint64(i)+uint64(j)+1)*golden64) }

// Uniform is draw j of element i as a float64 uniform in [0, 1) (53 random bits).
func (s Stream) Uniform(i, j int) float64 { return float64(s.Draw(i, j)>>11) * 0x1p-53 }

// irwinScale scales a sum of eight centred 16-bit lanes to variance 1: √1.5 · 2^-16.
const irwinScale = 1.224744871391589 * 0x1p-16

// Normal is element i's Irwin–Hall normal: the eight 16-bit lanes of draws 0 and 1 summed,
// centred and scaled by irwinScale (one rounding; mean 0, variance 1, within ±4.9).
func (s Stream) Normal(i int) float64 {
	c := uint64(s) + (8*uint64(i)+1)*golden64
	d0, d1 := mix(c), mix(c+golden64)
	// Two 16-bit lanes of a draw at a time: the sums of lanes 0+2 and 1+3 fit 17 bits.
	lanes := func(d uint64) uint64 { return d&0xffff0000ffff + d>>16&0xffff0000ffff }
	t := lanes(d0) + lanes(d1) // two 32-bit sums of four lanes each
	return float64(int64(t&0xffffffff+t>>32)-262140) * irwinScale
}

// Index is draw 0 of element i as an integer uniform over [0, n), n < 2^32.
func (s Stream) Index(i, n int) int64 { return int64((s.Draw(i, 0) >> 32 * uint64(n)) >> 32) }

// draw writes elements start, start+1, ... of input in into v (their typical values, or
// their variant's), before Offset and Within.
func (in *InputRecipe) draw(s Stream, pat *pattern, dtype string, start int, v []float64) {
	sm := &in.Sample
	if in.Mode == "pattern" {
		done := in.Key == "done"
		for k := range v {
			v[k] = pat.at(start+k, done)
		}
		return
	}
	switch sm.Dist {
	case "uniform":
		lo, w := sm.Lo, sm.Hi-sm.Lo
		for k := range v {
			v[k] = lo + float64(w*s.Uniform(start+k, 0))
		}
	case "flag":
		for k := range v {
			v[k] = 0
			if s.Uniform(start+k, 0) < sm.P {
				v[k] = 1
			}
		}
	case "index":
		for k := range v {
			v[k] = float64(s.Index(start+k, in.IndexRange))
		}
	case "onehot":
		a := in.IndexRange
		for k := range v {
			i := start + k
			v[k] = 0
			if int64(i%a) == s.Index(i-i%a, a) {
				v[k] = 1
			}
		}
	case "const":
		for k := range v {
			v[k] = sm.Mean
		}
	default:
		mean, std := sm.Mean, sm.Std
		for k := range v {
			v[k] = mean + float64(std*s.Normal(start+k))
		}
	}
	if in.Mode != "extreme" {
		return
	}
	for k := range v {
		i := start + k
		switch {
		case sm.ExtremeLog:
			switch i % 4 {
			case 0:
				v[k] = 0
			case 1:
				v[k] = float64(6 * (2*s.Uniform(i, 3) - 1))
			}
		case sm.ExtremeBig:
			switch i % 5 {
			case 0:
				v[k] = 0
			case 1:
				v[k] = float64(v[k] * 1e3)
			}
		case sm.ExtremeNil:
			if i%3 == 0 {
				v[k] = 0
			}
		case sm.ExtremeAction:
			if i%3 == 0 {
				v[k] = float64(1 - 2*(i/3%2))
			}
		}
	}
	last := 1
	if len(in.Shape) > 0 {
		last = in.Shape[len(in.Shape)-1]
	}
	if sm.ExtremeLogits {
		for k := range v {
			i := start + k
			r, j := i/last, i%last
			switch r % 5 {
			case 0:
				if j%2 == 0 && j < last-1 {
					v[k] = math.Inf(-1)
				}
			case 1:
				if j == 0 {
					v[k] = -maxFinite(dtype)
				}
			case 2:
				v[k] = float64(10000 - j)
			case 3:
				v[k] = 0.5
			}
		}
	}
	if sm.ExtremeTie || sm.ExtremeRows {
		for k := range v {
			i := start + k
			switch {
			case sm.ExtremeTie && i%last%2 == 1:
				if k > 0 {
					v[k] = v[k-1]
				} else { // the chunk's first element: draw the one before it on its own
					var prev [1]float64
					in.draw(s, pat, dtype, i-1, prev[:])
					v[k] = prev[0]
				}
			case sm.ExtremeRows && (i/last)%3 == 1:
				v[k] = 0
			}
		}
	}
}

// maxFinite is the largest finite value of the recipe's float type.
func maxFinite(dtype string) float64 {
	if dtype == "float64" {
		return math.MaxFloat64
	}
	return math.MaxFloat32
}

// pin applies Pins to elements start, start+1, ... (v).
func (in *InputRecipe) pin(start int, v []float64) {
	p := len(in.Pins)
	if p == 0 {
		return
	}
	period := 4 * (p + 1)
	for k := range v {
		i := start + k
		if i < 2 {
			continue
		}
		if m := (i - 2) % period; m%4 == 0 && m/4 < p {
			v[k] = in.Pins[m/4]
		}
	}
}

// pattern places the flag patterns of Mode "pattern" along one axis.
type pattern struct{ T, stride int }

func newPattern(shape []int, axis int) *pattern {
	if axis < 0 || axis >= len(shape) {
		return &pattern{T: 1, stride: 1}
	}
	stride := 1
	for _, d := range shape[axis+1:] {
		stride *= d
	}
	return &pattern{T: shape[axis], stride: stride}
}

// at is the flag at flat index i: done's when done, else terminated's.
func (p *pattern) at(i int, done bool) float64 {
	t := (i / p.stride) % p.T
	line := (i/(p.stride*p.T))*p.stride + i%p.stride
	mid := p.T / 2
	set := false
	switch line % 6 {
	case 1:
		set = t == mid
	case 2:
		set = done && t == mid
	case 3:
		set = !done && t == mid
	case 4:
		set = t == p.T-1
	case 5:
		set = done || t%2 == 0
	}
	if set {
		return 1
	}
	return 0
}

// stream is input in's stream in this case.
func (r *CaseRecipe) stream(in *InputRecipe) Stream { return NewStream(r.Seed, in.Key) }

// Generate draws every input of the case (Draw) and checks each against its recipe's
// Checksum when the recipe has one: an error names the input whose bits differ.
func (r *CaseRecipe) Generate() (map[string]any, error) {
	vals, err := r.alloc()
	if err != nil {
		return nil, err
	}
	return vals, r.GenerateInto(vals)
}

// GenerateInto is Generate drawing into the caller's slices: dst holds, for every input of
// the recipe, a slice of its stored type and length (as Generate returns them), which it
// overwrites. A large batch's tests draw every case into one set of buffers this way (fresh
// memory is what drawing a large input mostly costs).
func (r *CaseRecipe) GenerateInto(dst map[string]any) error {
	check := false
	for i := range r.Inputs {
		in := &r.Inputs[i]
		if err := in.check(); err != nil {
			return fmt.Errorf("input %q: %w", in.Name, err)
		}
		check = check || in.Checksum != ""
		d := dst[in.Name]
		if typ := r.storedType(in); fmt.Sprintf("%T", d) != typ || sliceLen(d) != in.Len() {
			return fmt.Errorf("input %q: the buffer is %T of %d elements, the recipe draws %s of %d", in.Name, d, sliceLen(d), typ, in.Len())
		}
	}
	sums := r.fill(dst, check)
	for i, in := range r.Inputs {
		if got := checksumString(sums[i]); in.Checksum != "" && got != in.Checksum {
			return fmt.Errorf("input %q drew checksum %s, the recipe has %s: the recipe was edited (its seed, shape or sample), or this platform draws other bits than the one that wrote it (then please report); lossgen golden -update rewrites it", in.Name, got, in.Checksum)
		}
	}
	return nil
}

// sliceLen is the length of one of the slices the generator stores into (−1 for anything else).
func sliceLen(x any) int {
	switch d := x.(type) {
	case []float32:
		return len(d)
	case []float64:
		return len(d)
	case []bool:
		return len(d)
	case []int64:
		return len(d)
	}
	return -1
}

// Draw draws every input of the case into a new slice of its stored type — []float32 or
// []float64 (by DType) for floats, []bool for flags, []int64 for indices — in parallel, in
// chunks, and returns each input's InputChecksum, in recipe order.
func (r *CaseRecipe) Draw() (map[string]any, []string, error) {
	out, err := r.alloc()
	if err != nil {
		return nil, nil, err
	}
	total := r.fill(out, true)
	strs := make([]string, len(total))
	for i, s := range total {
		strs[i] = checksumString(s)
	}
	return out, strs, nil
}

// storedType is the Go type of the slice input in is stored in.
func (r *CaseRecipe) storedType(in *InputRecipe) string {
	switch {
	case in.Kind == "bool":
		return "[]bool"
	case in.Kind == "index":
		return "[]int64"
	case r.DType == "float64":
		return "[]float64"
	}
	return "[]float32"
}

// alloc checks the recipe's inputs and makes a zero slice of its stored type for each.
func (r *CaseRecipe) alloc() (map[string]any, error) {
	out := map[string]any{}
	for i := range r.Inputs {
		in := &r.Inputs[i]
		if err := in.check(); err != nil {
			return nil, fmt.Errorf("input %q: %w", in.Name, err)
		}
		n := in.Len()
		switch r.storedType(in) {
		case "[]bool":
			out[in.Name] = make([]bool, n)
		case "[]int64":
			out[in.Name] = make([]int64, n)
		case "[]float64":
			out[in.Name] = make([]float64, n)
		default:
			out[in.Name] = make([]float32, n)
		}
	}
	return out, nil
}

// chunk is how many elements a worker draws at a time.
const chunk = 1 << 14

// fill draws every input into dst (slices Generate made) and returns each input's checksum
// sum. Inputs of different lengths are drawn over their own lengths; Offset and Within apply
// where the two inputs have the same length.
func (r *CaseRecipe) fill(dst map[string]any, withSums bool) []uint64 {
	n := 0
	for i := range r.Inputs {
		n = max(n, r.Inputs[i].Len())
	}
	byKey := map[string]int{}
	for i, in := range r.Inputs {
		byKey[in.Key] = i
	}
	type link struct{ offset, within int }
	links := make([]link, len(r.Inputs))
	pats := make([]*pattern, len(r.Inputs))
	streams := make([]Stream, len(r.Inputs))
	lens := make([]int, len(r.Inputs))
	for i := range r.Inputs {
		in := &r.Inputs[i]
		links[i] = link{-1, -1}
		if j, ok := byKey[in.Sample.Offset]; ok && in.Sample.Offset != "" && r.Inputs[j].Len() == in.Len() {
			links[i].offset = j
		}
		if j, ok := byKey[in.Sample.Within]; ok && in.Sample.Within != "" && r.Inputs[j].Len() == in.Len() {
			links[i].within = j
		}
		pats[i] = newPattern(in.Shape, in.TimeAxis)
		streams[i] = r.stream(in)
		lens[i] = in.Len()
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk))
	sums := make([][]uint64, workers)
	var wg sync.WaitGroup
	next := make(chan int, (n+chunk-1)/chunk)
	for c := 0; c < n; c += chunk {
		next <- c
	}
	close(next)
	for w := 0; w < workers; w++ {
		sums[w] = make([]uint64, len(r.Inputs))
		wg.Add(1)
		go func(sum []uint64) {
			defer wg.Done()
			vals := make([][]float64, len(r.Inputs))
			for i := range vals {
				vals[i] = make([]float64, chunk)
			}
			for start := range next {
				// Draw every input's chunk, then apply Offset and Within in recipe order (an
				// earlier input's values are final by then, a later one's still as drawn).
				for k := range r.Inputs {
					if end := min(start+chunk, lens[k]); start < end {
						r.Inputs[k].draw(streams[k], pats[k], r.DType, start, vals[k][:end-start])
					}
				}
				for k := range r.Inputs {
					in := &r.Inputs[k]
					end := min(start+chunk, lens[k])
					if start >= end {
						continue
					}
					v := vals[k][:end-start]
					if l := links[k]; l.offset >= 0 {
						for i, b := range vals[l.offset][:end-start] {
							v[i] += b
						}
					}
					if l := links[k]; l.within >= 0 {
						for i, b := range vals[l.within][:end-start] {
							v[i] *= b
						}
					}
					in.pin(start, v)
					sum[k] += store(dst[in.Name], v, start, withSums)
				}
			}
		}(sums[w])
	}
	wg.Wait()
	total := make([]uint64, len(r.Inputs))
	for _, s := range sums {
		for k := range total {
			total[k] += s[k]
		}
	}
	return total
}

// store writes v into dst from index start in dst's type and returns the checksum terms
// (when sums is set).
func store(dst any, v []float64, start int, sums bool) uint64 {
	if !sums {
		switch d := dst.(type) {
		case []float32:
			for i, x := range v {
				d[start+i] = float32(x)
			}
		case []float64:
			copy(d[start:], v)
		case []bool:
			for i, x := range v {
				d[start+i] = x != 0
			}
		case []int64:
			for i, x := range v {
				d[start+i] = int64(x)
			}
		}
		return 0
	}
	var sum uint64
	switch d := dst.(type) {
	case []float32:
		for i, x := range v {
			f := float32(x)
			d[start+i] = f
			sum += checkTerm(uint64(math.Float32bits(f)), start+i)
		}
	case []float64:
		for i, x := range v {
			d[start+i] = x
			sum += checkTerm(math.Float64bits(x), start+i)
		}
	case []bool:
		for i, x := range v {
			b := x != 0
			d[start+i] = b
			if b {
				sum += checkTerm(1, start+i)
			} else {
				sum += checkTerm(0, start+i)
			}
		}
	case []int64:
		for i, x := range v {
			d[start+i] = int64(x)
			sum += checkTerm(uint64(int64(x)), start+i)
		}
	}
	return sum
}

func checkTerm(bits uint64, i int) uint64 { return (bits + uint64(i)*golden64) * (2*uint64(i) + 1) }

// InputChecksum is the checksum a recipe stores for an input's values: the wrapping sum over
// elements i of (bits_i + i·0x9e3779b97f4a7c15)·(2i + 1), where bits_i is the element's IEEE bits
// (float32 or float64), 0/1 for a bool, the two's-complement int64 for an index; written as
// 16 hex digits. It is order-independent, so it is summed while the input is drawn.
func InputChecksum(data any) string {
	var sum uint64
	switch d := data.(type) {
	case []float32:
		for i, x := range d {
			sum += checkTerm(uint64(math.Float32bits(x)), i)
		}
	case []float64:
		for i, x := range d {
			sum += checkTerm(math.Float64bits(x), i)
		}
	case []bool:
		for i, x := range d {
			if x {
				sum += checkTerm(1, i)
			} else {
				sum += checkTerm(0, i)
			}
		}
	case []int64:
		for i, x := range d {
			sum += checkTerm(uint64(x), i)
		}
	}
	return checksumString(sum)
}

func checksumString(sum uint64) string { return fmt.Sprintf("%016x", sum) }
