package golden

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
)

// NPZ is an open .npz file whose arrays are read one at a time, only when asked for. Every
// read is bounded: the sizes an entry's zip header and .npy header declare are checked
// against each other (and against the caller's bound) before any data is read, and the entry
// is read through a reader limited to its declared size, so a file whose headers lie cannot
// make lossgen inflate or allocate more than they declare. Arrays never asked for are never
// decompressed.
type NPZ struct {
	path    string
	zr      *zip.ReadCloser
	entries map[string]*zip.File
}

// OpenNPZ opens a .npz file and reads its zip directory (no array data).
func OpenNPZ(path string) (*NPZ, error) {
	// Stat first: opening a FIFO blocks until something writes to it.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (a .npz is a zip file)", path)
	}
	zr, err := zip.OpenReader(path)
	var perr *fs.PathError
	switch {
	case errors.As(err, &perr):
		return nil, err // missing, unreadable: as os.Open says it
	case err != nil:
		return nil, fmt.Errorf("%s: not a .npz (zip) file: %w", path, err)
	}
	z := &NPZ{path: path, zr: zr, entries: map[string]*zip.File{}}
	for _, f := range zr.File {
		z.entries[strings.TrimSuffix(f.Name, ".npy")] = f
	}
	return z, nil
}

// Close closes the file.
func (z *NPZ) Close() error { return z.zr.Close() }

// Names lists the arrays in the file (entry names without ".npy"), sorted.
func (z *NPZ) Names() []string {
	names := make([]string, 0, len(z.entries))
	for n := range z.entries {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Header reads only the .npy header of array name: its dtype and shape.
func (z *NPZ) Header(name string) (NPYHeader, error) {
	f, ok := z.entries[name]
	if !ok {
		return NPYHeader{}, fmt.Errorf("%s: no array %q", z.path, name)
	}
	rc, err := f.Open()
	if err != nil {
		return NPYHeader{}, fmt.Errorf("%s: %s: %w", z.path, name, err)
	}
	defer rc.Close()
	h, _, err := readNPYHeader(io.LimitReader(rc, declared(f)))
	if err != nil {
		return NPYHeader{}, fmt.Errorf("%s: %s: not a NumPy array: %w", z.path, name, err)
	}
	return h, nil
}

// Read reads array name. It accepts little-endian float32, float64, bool and integer arrays
// in C order (readNPYData: integers widen to int64, a uint8 array of 0/1 reads as bool flags). maxLen, when not negative, bounds
// the number of elements: a header declaring more is an error before anything is allocated.
func (z *NPZ) Read(name string, maxLen int) (Array, error) {
	f, ok := z.entries[name]
	if !ok {
		return Array{}, fmt.Errorf("%s: no array %q", z.path, name)
	}
	fail := func(err error) (Array, error) { return Array{}, fmt.Errorf("%s: %s: %w", z.path, name, err) }
	rc, err := f.Open()
	if err != nil {
		return fail(err)
	}
	defer rc.Close()
	size := declared(f)
	r := io.LimitReader(rc, size)
	h, hlen, err := readNPYHeader(r)
	if err != nil {
		return fail(fmt.Errorf("not a NumPy array: %w", err))
	}
	if h.Fortran {
		return fail(fmt.Errorf("array in Fortran order; save it C-ordered (np.ascontiguousarray)"))
	}
	dt, ok := dtypes[h.Descr]
	if !ok {
		return fail(unsupported(h.Descr))
	}
	if err := checkSize(uint64(size)-uint64(hlen), dt.size, h.Shape); err != nil {
		return fail(err)
	}
	n := h.Len()
	if maxLen >= 0 && n > maxLen {
		return fail(fmt.Errorf("shape %v holds %d elements, more than the %d read here", h.Shape, n, maxLen))
	}
	data, err := readNPYData(r, h.Descr, n)
	if err != nil {
		return fail(err)
	}
	// Reading past the data makes archive/zip check the entry's length and CRC-32.
	var one [1]byte
	if _, err := io.ReadFull(rc, one[:]); err != io.EOF {
		if err == nil || errors.Is(err, zip.ErrFormat) {
			err = fmt.Errorf("the entry does not end at the %d bytes its zip header declares (corrupt file)", size)
		}
		return fail(err)
	}
	return Array{Shape: h.Shape, Data: data}, nil
}

// declared is the uncompressed size f's zip header declares (archive/zip fails a stream that
// inflates to more or less).
func declared(f *zip.File) int64 { return int64(min(f.UncompressedSize64, math.MaxInt64)) }

// checkSize verifies, before anything is allocated, that an .npy entry's data (have bytes
// after the header, as its zip header declares) is exactly as long as its header's shape
// says: a truncated file is an error, not zero-padded data, and a header claiming a huge
// shape is an error, not an allocation.
func checkSize(have uint64, esize int, shape []int) error {
	numel := uint64(1)
	for _, d := range shape {
		if d > 0 && numel > have/uint64(d) {
			return fmt.Errorf("header shape %v needs more than the %d data bytes present", shape, have)
		}
		numel *= uint64(d)
	}
	if numel > math.MaxUint64/uint64(esize) {
		return fmt.Errorf("header shape %v needs more than the %d data bytes present", shape, have)
	}
	if want := numel * uint64(esize); have != want {
		return fmt.Errorf("header shape %v needs %d data bytes, the file has %d (truncated or corrupt)", shape, want, have)
	}
	return nil
}

// ReadNPZ reads every array of a .npz file, keyed by name without the ".npy" suffix, as
// NPZ.Read reads them (each bounded by the sizes its headers declare). Callers that need
// only some arrays, or know how large they may be, use OpenNPZ.
func ReadNPZ(path string) (map[string]Array, error) {
	z, err := OpenNPZ(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	out := map[string]Array{}
	for _, name := range z.Names() {
		a, err := z.Read(name, -1)
		if err != nil {
			return nil, err
		}
		out[name] = a
	}
	return out, nil
}
