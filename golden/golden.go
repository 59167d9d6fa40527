// Package golden reads and writes lossgen's golden cases and NumPy .npz files.
//
// A case is two files in golden/<package>/: <case>.in.npz (the kernel inputs, named by data
// key: "log_prob", "next.reward", ...) and <case>.want.npz (every output as computed by the
// reference interpreter, in float64). Arrays are stored as NumPy writes them ("<name>.npy"
// entries) in sorted key order, so the files are byte-stable and numpy.load reads them.
// The generated packages' tests use this package to load their cases; it depends on
// github.com/sbinet/npyio only.
package golden

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/sbinet/npyio/npy"
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

// ReadNPZ reads every array of a .npz file, keyed by name without the ".npy" suffix.
// It accepts little-endian float32, float64, bool and int64 arrays in C order, and uint8
// arrays of 0/1 flags (read as bool).
//
// Each entry is decompressed into memory before npyio parses it: npyio v0.6.0 reads
// elements with single io.Reader.Read calls and mis-reads a short read, which a deflate
// stream returns at block boundaries (corrupting data after ~32 KiB); a bytes.Reader never
// returns one.
func ReadNPZ(path string) (map[string]Array, error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("%s: not a .npz (zip) file: %w", path, err)
	}
	defer z.Close()
	out := map[string]Array{}
	for _, f := range z.File {
		name := strings.TrimSuffix(f.Name, ".npy")
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, name, err)
		}
		raw, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, name, err)
		}
		r, dataBytes, err := newNPYReader(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: not a NumPy array: %w", path, name, err)
		}
		h := r.Header
		if h.Descr.Fortran {
			return nil, fmt.Errorf("%s: %s: Fortran-ordered array; save it C-ordered (np.ascontiguousarray)", path, name)
		}
		if err := checkSize(dataBytes, h.Descr.Type, h.Descr.Shape); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, name, err)
		}
		var data any
		switch h.Descr.Type {
		case "<f4":
			var x []float32
			err = r.Read(&x)
			data = x
		case "<f8":
			var x []float64
			err = r.Read(&x)
			data = x
		case "|b1":
			var x []bool
			err = r.Read(&x)
			data = x
		case "<i8":
			var x []int64
			err = r.Read(&x)
			data = x
		case "|u1": // uint8 flags (torch.uint8, np.uint8): read as bool, 0 or 1 only
			var x []uint8
			if err = r.Read(&x); err == nil {
				b := make([]bool, len(x))
				for i, v := range x {
					if v > 1 {
						return nil, fmt.Errorf("%s: %s: uint8 array holds %d at flat index %d; only 0/1 flags are read from uint8", path, name, v, i)
					}
					b[i] = v == 1
				}
				data = b
			}
		default:
			return nil, fmt.Errorf("%s: %s: unsupported dtype %q (want float32, float64, bool, int64, or uint8 0/1 flags)", path, name, h.Descr.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, name, err)
		}
		out[name] = Array{Shape: append([]int{}, h.Descr.Shape...), Data: data}
	}
	return out, nil
}

// newNPYReader is npy.NewReader with the header's framing checked first and any panic of
// the parser (npyio v0.6.0 slices a too-short header without checking) turned into an error.
func newNPYReader(raw []byte) (r *npy.Reader, dataBytes int, err error) {
	if len(raw) < 10 || string(raw[:6]) != "\x93NUMPY" {
		return nil, 0, fmt.Errorf("no .npy magic")
	}
	// The header length is 2 bytes in format 1.x, 4 bytes in 2.x and 3.x.
	n := 10 + int(binary.LittleEndian.Uint16(raw[8:10]))
	if raw[6] >= 2 {
		if len(raw) < 12 {
			return nil, 0, fmt.Errorf("truncated .npy header")
		}
		n = 12 + int(binary.LittleEndian.Uint32(raw[8:12]))
	}
	if n > len(raw) || !bytes.Contains(raw[:n], []byte("descr")) {
		return nil, 0, fmt.Errorf("truncated or malformed .npy header")
	}
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("malformed .npy header: %v", p)
		}
	}()
	r, err = npy.NewReader(bytes.NewReader(raw))
	return r, len(raw) - n, err
}

// checkSize verifies, before anything is allocated, that an .npy entry's data (have bytes
// after the header) is exactly as long as its header's shape says: a truncated file is an
// error, not zero-padded data, and a header claiming a huge shape is an error, not an
// allocation.
func checkSize(have int, descr string, shape []int) error {
	esize := map[string]int{"<f4": 4, "<f8": 8, "|b1": 1, "|u1": 1, "<i8": 8}[descr]
	if esize == 0 {
		return nil // an unsupported dtype is reported by the caller
	}
	numel := 1
	for _, d := range shape {
		if d < 0 || (d > 0 && numel > have/d) {
			return fmt.Errorf("header shape %v needs more than the %d data bytes present", shape, have)
		}
		numel *= d
	}
	if want := numel * esize; have != want {
		return fmt.Errorf("header shape %v needs %d data bytes, the file has %d (truncated or corrupt)", shape, want, have)
	}
	return nil
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
// only the same infinity.
type Tol struct {
	Abs, Rel, Norm float64
}

// Diff summarises how far got is from want.
type Diff struct {
	MaxAbs, MaxRel float64 // over the finite, non-NaN pairs
	MaxNorm        float64 // MaxAbs / max|want|
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
		ok := true
		switch {
		case math.IsNaN(w) || math.IsNaN(g):
			ok = math.IsNaN(w) && math.IsNaN(g)
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			ok = w == g
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
	}
	return d
}
