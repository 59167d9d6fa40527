// Package golden reads and writes lossgen's golden cases and NumPy .npz files.
//
// A case is two files in golden/<package>/: <case>.in.npz (the kernel inputs, named by data
// key: "log_prob", "next.reward", ...) and <case>.want.npz (every output as computed by the
// reference interpreter, in float64). Arrays are stored as NumPy writes them ("<name>.npy"
// entries) in sorted key order, so the files are byte-stable and numpy.load reads them.
// The generated packages' tests use this package to load their cases. It reads .npz files
// itself (npz.go, npy.go: bounded, one array at a time) and writes them with
// github.com/sbinet/npyio, its only dependency.
package golden

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/sbinet/npyio/npz"
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

// WriteNPZ writes arrays to path as "<name>.npy" entries in sorted name order.
func WriteNPZ(path string, arrays map[string]Array) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := npz.NewWriter(f)
	names := make([]string, 0, len(arrays))
	for n := range arrays {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := w.Write(n+".npy", shaped(arrays[n])); err != nil {
			w.Close()
			f.Close()
			return fmt.Errorf("%s: %s: %w", path, n, err)
		}
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// shaped turns an Array into what npyio writes with the right shape: a scalar for shape [],
// a flat slice for one dim, a nested Go array for more.
func shaped(a Array) any {
	v := reflect.ValueOf(a.Data)
	if len(a.Shape) == 0 {
		return v.Index(0).Interface()
	}
	if len(a.Shape) == 1 {
		return a.Data
	}
	t := v.Type().Elem()
	for i := len(a.Shape) - 1; i >= 0; i-- {
		t = reflect.ArrayOf(a.Shape[i], t)
	}
	arr := reflect.New(t).Elem()
	flat := reflect.NewAt(reflect.ArrayOf(v.Len(), v.Type().Elem()), arr.Addr().UnsafePointer()).Elem()
	reflect.Copy(flat, v)
	return arr.Interface()
}

// Case is one golden case: inputs by data name, and the interpreter's outputs by name.
type Case struct {
	Name   string
	Inputs map[string]Array
	Want   map[string]Array
}

// Suffixes of the two files of a case.
const (
	InSuffix   = ".in.npz"
	WantSuffix = ".want.npz"
)

// LoadCases reads every case in dir, sorted by name.
func LoadCases(dir string) ([]Case, error) {
	ins, err := filepath.Glob(filepath.Join(dir, "*"+InSuffix))
	if err != nil {
		return nil, err
	}
	sort.Strings(ins)
	var cases []Case
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), InSuffix)
		c := Case{Name: name}
		if c.Inputs, err = ReadNPZ(in); err != nil {
			return nil, err
		}
		if c.Want, err = ReadNPZ(filepath.Join(dir, name+WantSuffix)); err != nil {
			return nil, err
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// WriteCase writes a case's two files into dir.
func WriteCase(dir string, c Case) error {
	if err := WriteNPZ(filepath.Join(dir, c.Name+InSuffix), c.Inputs); err != nil {
		return err
	}
	return WriteNPZ(filepath.Join(dir, c.Name+WantSuffix), c.Want)
}

// Tol is a per-output tolerance: elementwise |got − want| ≤ Abs + Rel·|want| + Norm·max|want|,
// the max taken over the output's finite elements. Norm makes the bound normwise for tensors
// whose elements are sums of larger terms (a scan's element can cancel to near zero while its
// rounding error is set by the terms it summed). NaN matches NaN, and an infinity matches
// only the same infinity; any other pair with a NaN or an infinity is out of every tolerance.
type Tol struct {
	Abs, Rel, Norm float64
}

// Diff summarises how far got is from want.
type Diff struct {
	MaxAbs, MaxRel float64 // over the pairs; +Inf if a NaN or infinity meets anything but itself
	MaxNorm        float64 // MaxAbs / max|want| (+Inf when MaxAbs > 0 = max|want|)
	Bad            int     // elements outside the tolerance (or with mismatched NaN/inf)
	First          int     // index of the first bad element, −1 if none
}

// Compare measures got against want under tol. It panics if the lengths differ.
func Compare(want, got []float64, tol Tol) Diff {
	if len(want) != len(got) {
		panic(fmt.Sprintf("golden.Compare: %d values against %d", len(got), len(want)))
	}
	d := Diff{First: -1}
	scale := 0.0
	for _, w := range want {
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			scale = math.Max(scale, math.Abs(w))
		}
	}
	for i := range want {
		w, g := want[i], got[i]
		var ok bool
		switch {
		case math.IsNaN(w) || math.IsNaN(g) || math.IsInf(w, 0) || math.IsInf(g, 0):
			// NaN matches only NaN, an infinity only itself; a mismatch is out of any
			// tolerance and its difference unbounded.
			if ok = w == g || math.IsNaN(w) && math.IsNaN(g); !ok {
				d.MaxAbs, d.MaxRel = math.Inf(1), math.Inf(1)
			}
		default:
			ad := math.Abs(g - w)
			d.MaxAbs = math.Max(d.MaxAbs, ad)
			if w != 0 {
				d.MaxRel = math.Max(d.MaxRel, ad/math.Abs(w))
			} else if ad != 0 {
				d.MaxRel = math.Inf(1)
			}
			ok = ad <= tol.Abs+tol.Rel*math.Abs(w)+tol.Norm*scale
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
