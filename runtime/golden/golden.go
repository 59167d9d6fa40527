// Package golden reads lossgen's golden cases and NumPy .npz files, and compares kernel
// outputs with them: what a generated package's tests need, with nothing but the standard
// library (lossgen writes the files with its own module's golden package).
//
// A case is two files in golden/<package>/ (golden format 2, runtime.GoldenFormat):
//
//   - its inputs: for a seeded case (random, flags, extreme), <case>.in.json, the recipe
//     lossgen's runtime generator draws the inputs from again, bit for bit
//     (runtime.CaseRecipe); for any other case (real data, or one written by hand),
//     <case>.in.npz, the inputs themselves, named by data key ("log_prob", "next.reward", ...);
//   - <case>.want.npz: the reference interpreter's outputs in float64, each whole, or, for an
//     output of a seeded case larger than WholeMax elements, a Summary: a fixed sample of
//     its elements and checksums of its rows, columns and tiles (summary.go states exactly what is
//     checked), so a package's golden directory stays well under a megabyte at any shape.
//
// Arrays are stored as NumPy writes them ("<name>.npy" entries, deflated) in sorted key
// order, so the files are byte-stable and numpy.load reads them. This package reads them with
// archive/zip and its own .npy parser (npz.go, npy.go: bounded, one array at a time).
package golden

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/lossgen/lossgen/runtime"
)

// Array is one n-dimensional array: its shape (empty for a scalar) and its row-major data,
// a []float32, []float64, []bool or []int64.
type Array struct {
	Shape []int
	Data  any
}

// Len returns the number of elements.
func (a Array) Len() int { return reflect.ValueOf(a.Data).Len() }

// DType names the element type as NumPy does (float32, float64, bool, int64).
func (a Array) DType() string {
	switch a.Data.(type) {
	case []float32:
		return "float32"
	case []float64:
		return "float64"
	case []bool:
		return "bool"
	case []int64:
		return "int64"
	}
	return fmt.Sprintf("%T", a.Data)
}

// Float64s returns the data converted to float64 (bools as 0/1).
func (a Array) Float64s() []float64 {
	switch d := a.Data.(type) {
	case []float64:
		return append([]float64(nil), d...)
	case []float32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case []bool:
		out := make([]float64, len(d))
		for i, x := range d {
			if x {
				out[i] = 1
			}
		}
		return out
	case []int64:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	}
	panic(fmt.Sprintf("golden: unsupported array type %T", a.Data))
}

// Case is one golden case: inputs by data name, and the interpreter's outputs by name.
//
// A seeded case (Recipe set) is stored as its recipe and its outputs, each whole (Want) or,
// when large, as a Summary; its inputs are drawn again from the recipe (LoadInputs). Any
// other case (real data, or a user's own <name>.in.npz + <name>.want.npz) is stored and
// compared whole.
type Case struct {
	Name    string
	Inputs  map[string]Array
	Want    map[string]Array    // outputs held whole
	Summary map[string]*Summary // outputs held as a sample and checksums (seeded cases)
	Recipe  *runtime.CaseRecipe // how a seeded case's inputs are drawn; nil for a stored-input case
}

// Suffixes of the files of a case: the inputs (stored, or a seeded case's recipe) and the
// expected outputs.
const (
	InSuffix     = ".in.npz"
	RecipeSuffix = ".in.json"
	WantSuffix   = ".want.npz"
)

// SeededCases are the names of the cases lossgen draws from a seed (gen/cases): stored as
// recipes since golden format 2 (runtime.GoldenFormat).
var SeededCases = []string{"random", "flags", "extreme"}

// IsSeeded reports whether name is one of SeededCases.
func IsSeeded(name string) bool { return slices.Contains(SeededCases, name) }

// LoadCases reads every case in dir, sorted by name, with its inputs (a seeded case's drawn
// from its recipe).
func LoadCases(dir string) ([]Case, error) {
	cases, err := OpenCases(dir)
	if err != nil {
		return nil, err
	}
	for i := range cases {
		if err := cases[i].LoadInputs(); err != nil {
			return nil, err
		}
	}
	return cases, nil
}

// OpenCases reads every case in dir, sorted by name: its expected outputs, and the inputs of
// a stored-input case; a seeded case's inputs are left to LoadInputs (large batches draw
// them one case at a time). A directory holding a seeded case in golden format 1 (its
// inputs stored in <case>.in.npz) is read as it is: such a case is still a valid
// stored-input case, and StaleFormat reports it.
func OpenCases(dir string) ([]Case, error) {
	ins, err := filepath.Glob(filepath.Join(dir, "*"+InSuffix))
	if err != nil {
		return nil, err
	}
	recipes, err := filepath.Glob(filepath.Join(dir, "*"+RecipeSuffix))
	if err != nil {
		return nil, err
	}
	names := map[string]string{} // case -> its input file
	for _, f := range append(ins, recipes...) {
		base := filepath.Base(f)
		name := strings.TrimSuffix(strings.TrimSuffix(base, InSuffix), RecipeSuffix)
		if other, dup := names[name]; dup {
			return nil, fmt.Errorf("%s: case %s has both %s and %s; remove the stale one (lossgen golden -update does)", dir, name, filepath.Base(other), base)
		}
		names[name] = f
	}
	wants, err := filepath.Glob(filepath.Join(dir, "*"+WantSuffix))
	if err != nil {
		return nil, err
	}
	for _, f := range wants {
		if name := strings.TrimSuffix(filepath.Base(f), WantSuffix); names[name] == "" {
			return nil, fmt.Errorf("%s: case %s has expected outputs but no inputs (%s%s or %s%s); restore them, or remove %s (lossgen golden -update rewrites its own cases)",
				dir, name, name, RecipeSuffix, name, InSuffix, filepath.Base(f))
		}
	}
	var cases []Case
	for _, name := range slices.Sorted(maps.Keys(names)) {
		c := Case{Name: name}
		if strings.HasSuffix(names[name], RecipeSuffix) {
			data, err := os.ReadFile(names[name])
			if err != nil {
				return nil, err
			}
			if c.Recipe, err = runtime.ParseRecipe(data); err != nil {
				return nil, fmt.Errorf("%s: %w", names[name], err)
			}
		} else if c.Inputs, err = ReadNPZ(names[name]); err != nil {
			return nil, err
		}
		want, err := ReadNPZ(filepath.Join(dir, name+WantSuffix))
		if err != nil {
			return nil, err
		}
		if c.Want, c.Summary, err = splitWant(want); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name+WantSuffix), err)
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// splitWant separates a want file's whole outputs from its summaries ("<name>#<part>").
func splitWant(a map[string]Array) (map[string]Array, map[string]*Summary, error) {
	want, sums := map[string]Array{}, map[string]*Summary{}
	for n, x := range a {
		name, _, isPart := strings.Cut(n, "#")
		if !isPart {
			want[n] = x
			continue
		}
		if _, done := sums[name]; done {
			continue
		}
		s, err := readSummary(name, a)
		if err != nil {
			return nil, nil, err
		}
		sums[name] = s
	}
	return want, sums, nil
}

// LoadInputs draws a seeded case's inputs from its recipe (a no-op when they are loaded).
func (c *Case) LoadInputs() error {
	if c.Inputs != nil || c.Recipe == nil {
		return nil
	}
	vals, err := c.Recipe.Generate()
	if err != nil {
		return fmt.Errorf("case %s: %w", c.Name, err)
	}
	c.holdInputs(vals)
	return nil
}

// holdInputs makes c.Inputs the recipe's inputs drawn into vals (data name → slice).
func (c *Case) holdInputs(vals map[string]any) {
	c.Inputs = map[string]Array{}
	for _, in := range c.Recipe.Inputs {
		c.Inputs[in.Name] = Array{Shape: append([]int{}, in.Shape...), Data: vals[in.Name]}
	}
}

// LoadInputsInto is LoadInputs for a seeded case, drawing into the caller's buffers (dst:
// data name → a slice of the input's stored type and length, see runtime.CaseRecipe.
// GenerateInto); c.Inputs then holds those slices. A case with stored inputs is left as it is.
func (c *Case) LoadInputsInto(dst map[string]any) error {
	if c.Recipe == nil {
		return nil
	}
	if err := c.Recipe.GenerateInto(dst); err != nil {
		return fmt.Errorf("case %s: %w", c.Name, err)
	}
	c.holdInputs(dst)
	return nil
}

// Compact turns a seeded case into what is stored of it: every output of more than
// WholeMax elements into its Summary, and no inputs (the recipe draws them again). Other
// cases are left as they are.
func (c *Case) Compact() {
	if c.Recipe == nil {
		return
	}
	for name, a := range c.Want {
		if NeedsSummary(a.Len()) {
			if c.Summary == nil {
				c.Summary = map[string]*Summary{}
			}
			c.Summary[name] = Summarize(name, a.Shape, a.Float64s())
			delete(c.Want, name)
		}
	}
	c.Inputs = nil
}

// WithSpecials is a copy of a case's inputs with, in every float input, a NaN every 37
// elements from 11, and +inf and −inf every 101 from 50 and 51: the special values the PTX
// and CPU kernels must propagate as the interpreter does.
func WithSpecials(inputs map[string]Array) map[string]Array {
	out := map[string]Array{}
	for name, a := range inputs {
		switch x := a.Data.(type) {
		case []float32:
			a.Data = slices.Clone(x)
		case []float64:
			a.Data = slices.Clone(x)
		}
		out[name] = a
	}
	InjectSpecials(out)
	return out
}

// InjectSpecials is WithSpecials in place: it writes the NaNs and infinities into the float
// arrays themselves.
func InjectSpecials(inputs map[string]Array) {
	for _, a := range inputs {
		switch x := a.Data.(type) {
		case []float32:
			withSpecials(x)
		case []float64:
			withSpecials(x)
		}
	}
}

func withSpecials[T float32 | float64](x []T) {
	for i := range x {
		switch {
		case i%37 == 11:
			x[i] = T(math.NaN())
		case i%101 == 50:
			x[i] = T(math.Inf(1))
		case i%101 == 51:
			x[i] = T(math.Inf(-1))
		}
	}
}

// Tol is a per-output tolerance: elementwise |got − want| ≤ Abs + Rel·|want| + Norm·max|want|,
// the max taken over the output's finite elements. Norm makes the bound normwise for tensors
// whose elements are sums of larger terms (a scan's element can cancel to near zero while its
// rounding error is set by the terms it summed). NaN matches NaN, and an infinity matches
// only the same infinity; any other pair with a NaN or an infinity is out of every tolerance.
//
// A gradient's Norm term vanishes where its reference is 0 everywhere (or is the rounding
// noise of 0: a gradient that cancels), though its rounding comes from terms of about the
// size of the other gradients. Floor keeps it from collapsing: At(g), with g the largest
// finite |value| of all the call's gradients (GradScale), raises Abs to Floor·g.
type Tol struct {
	Abs, Rel, Norm float64
	Floor          float64 // the least Abs per unit of the call's gradient scale (gradients only)
}

// At is the tolerance on a call whose gradients' largest finite |value| is scale: Abs at
// least Floor·scale.
func (t Tol) At(scale float64) Tol {
	t.Abs = math.Max(t.Abs, t.Floor*scale)
	t.Floor = 0
	return t
}

// GradScale is the largest finite |value| over the named outputs (a call's gradients), got
// by get; an output get has not is skipped.
func GradScale[T Float](names []string, get func(string) ([]T, bool)) float64 {
	m := 0.0
	for _, name := range names {
		if x, ok := get(name); ok {
			m = math.Max(m, AbsMax(x))
		}
	}
	return m
}

// AbsMax is the largest finite |value| of the case's golden output name, held whole or as a
// Summary (0 if the case has none).
func (c *Case) AbsMax(name string) float64 {
	if w, ok := c.Want[name]; ok {
		return AbsMax(w.Float64s())
	}
	if s, ok := c.Summary[name]; ok {
		return s.AbsMax
	}
	return 0
}

// Diff summarises how far got is from want.
type Diff struct {
	MaxAbs, MaxRel float64 // over the pairs; +Inf if a NaN or infinity meets anything but itself
	MaxNorm        float64 // MaxAbs / max|want| (+Inf when MaxAbs > 0 = max|want|)
	Bad            int     // elements outside the tolerance (or with mismatched NaN/inf)
	First          int     // index of the first bad element, −1 if none
}

// Float is an element type of kernel outputs.
type Float interface{ ~float32 | ~float64 }

// Compare measures got against want under tol. It panics if the lengths differ.
func Compare(want, got []float64, tol Tol) Diff {
	return CompareScaled(want, got, tol, AbsMax(want))
}

// CompareOf is Compare for outputs of any float type (no float64 copies of large outputs).
func CompareOf[W, G Float](want []W, got []G, tol Tol) Diff {
	return CompareScaled(want, got, tol, AbsMax(want))
}

// AbsMax is the largest |x| over the finite elements of x (0 if none).
func AbsMax[T Float](x []T) float64 {
	m := 0.0
	for _, v := range x {
		if a := math.Abs(float64(v)); a > m && a <= math.MaxFloat64 { // not NaN, not inf
			m = a
		}
	}
	return m
}

// CompareScaled is Compare with the scale of the Norm term given: the largest finite |w| of
// the whole output, when want and got hold only some of its elements.
func CompareScaled[W, G Float](want []W, got []G, tol Tol, scale float64) Diff {
	if len(want) != len(got) {
		panic(fmt.Sprintf("golden.Compare: %d values against %d", len(got), len(want)))
	}
	d := Diff{First: -1}
	slack := tol.Abs + tol.Norm*scale
	for i := range want {
		w, g := float64(want[i]), float64(got[i])
		var ok bool
		switch {
		case w-w != 0 || g-g != 0: // a NaN or an infinity
			// NaN matches only NaN, an infinity only itself; a mismatch is out of any
			// tolerance and its difference unbounded.
			if ok = w == g || math.IsNaN(w) && math.IsNaN(g); !ok {
				d.MaxAbs, d.MaxRel = math.Inf(1), math.Inf(1)
			}
		default:
			ad, aw := math.Abs(g-w), math.Abs(w)
			if ad > d.MaxAbs {
				d.MaxAbs = ad
			}
			if ad > d.MaxRel*aw { // ad/aw > MaxRel, without a division per element
				if aw != 0 {
					d.MaxRel = ad / aw
				} else {
					d.MaxRel = math.Inf(1)
				}
			}
			ok = ad <= slack+tol.Rel*aw
		}
		if !ok {
			d.Bad++
			if d.First < 0 {
				d.First = i
			}
		}
	}
	if scale > 0 {
		d.MaxNorm = d.MaxAbs / scale
	} else if d.MaxAbs > 0 {
		d.MaxNorm = math.Inf(1)
	}
	return d
}
