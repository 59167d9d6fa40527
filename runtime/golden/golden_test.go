package golden

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lossgen/lossgen/runtime/internal/check"
)

func TestCompare(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	d := Compare([]float64{1, 2, nan, inf, 0}, []float64{1.001, 2, nan, inf, 0}, Tol{Rel: 1e-2})
	check.Equal(t, 0, d.Bad)
	check.InDelta(t, 0.001, d.MaxAbs, 1e-12)
	d = Compare([]float64{1, nan, inf, 5}, []float64{1.1, 0, -inf, 5}, Tol{Rel: 1e-2})
	check.Equal(t, 3, d.Bad)
	check.Equal(t, 0, d.First)
	d = Compare([]float64{0}, []float64{1e-9}, Tol{Abs: 1e-8})
	check.Equal(t, 0, d.Bad)
}

// A gradient whose reference is 0 (or rounding noise of 0) is held to Floor times the
// call's largest gradient, not to its own vanishing Norm term.
func TestTolFloor(t *testing.T) {
	grads := map[string][]float32{"grad.x": {0.5, -2, float32(math.Inf(1))}, "grad.y": {0, 1e-16, 0}}
	get := func(name string) ([]float32, bool) { g, ok := grads[name]; return g, ok }
	gs := GradScale([]string{"grad.x", "grad.y", "grad.z"}, get)
	check.Equal(t, 2.0, gs, "the largest finite |value| of the gradients there are")
	tol := Tol{Abs: 1e-30, Rel: 5e-6, Norm: 1e-2, Floor: 1e-6}
	want := []float64{0, 1.1e-16, 0}
	check.Equal(t, 2, Compare(want, []float64{0, 0, 3e-8}, tol).Bad, "held to 1e−18: collapsed")
	check.Equal(t, 0, Compare(want, []float64{0, 0, 1.9e-6}, tol.At(gs)).Bad)
	check.Equal(t, 1, Compare(want, []float64{0, 0, 2.1e-6}, tol.At(gs)).Bad)
	check.Equal(t, Tol{Abs: 2e-6, Rel: 5e-6, Norm: 1e-2}, tol.At(gs))
	check.Equal(t, Tol{Abs: 1e-8}, Tol{Abs: 1e-8}.At(gs), "no Floor: an output's tolerance is unchanged")
	c := &Case{Want: map[string]Array{"grad.x": {Shape: []int{2}, Data: []float64{-3, 1}}},
		Summary: map[string]*Summary{"grad.y": {AbsMax: 7}}}
	check.Equal(t, []float64{3, 7, 0}, []float64{c.AbsMax("grad.x"), c.AbsMax("grad.y"), c.AbsMax("grad.z")})
}

// npzWith writes a .npz holding one entry "a.npy" of raw bytes.
func npzWith(t *testing.T, raw []byte) string {
	p := filepath.Join(t.TempDir(), "x.npz")
	f, err := os.Create(p)
	check.NoError(t, err)
	z := zip.NewWriter(f)
	w, err := z.Create("a.npy")
	check.NoError(t, err)
	_, err = w.Write(raw)
	check.NoError(t, err)
	check.NoError(t, z.Close())
	check.NoError(t, f.Close())
	return p
}

// npyHeader is a version-1.0 .npy header for descr and shape.
func npyHeader(descr, shape string) []byte {
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	out := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	return append(out, h...)
}

// A truncated entry and a header claiming more data than present are errors, found before
// any allocation of the claimed size; an exact entry reads.
func TestNPZSizeChecks(t *testing.T) {
	data := make([]byte, 8*6)
	binary.LittleEndian.PutUint64(data[8:], math.Float64bits(2.5))
	got, err := ReadNPZ(npzWith(t, append(npyHeader("<f8", "(2, 3)"), data...)))
	check.NoError(t, err)
	check.Equal(t, []float64{0, 2.5, 0, 0, 0, 0}, got["a"].Data)

	_, err = ReadNPZ(npzWith(t, append(npyHeader("<f8", "(2, 3)"), data[:40]...)))
	check.ErrorContains(t, err, "header shape [2 3] needs 48 data bytes, the file has 40 (truncated or corrupt)")

	_, err = ReadNPZ(npzWith(t, append(npyHeader("<f4", "(4000000000, 4000000000)"), data...)))
	check.ErrorContains(t, err, "needs more than the 48 data bytes present")
}

// Malformed headers are errors, not panics of the .npy parser.
func TestNPZMalformedHeader(t *testing.T) {
	for name, raw := range map[string][]byte{
		"empty header":        []byte("\x93NUMPY\x01\x00\x00\x00"),
		"short":               []byte("\x93NU"),
		"no magic":            []byte("PK not numpy at all"),
		"header past end":     []byte("\x93NUMPY\x01\x00\xff\x00{'descr'"),
		"garbage dict":        append([]byte("\x93NUMPY\x01\x00\x10\x00"), []byte("{'descr': ((((\n")...),
		"version 2 too short": []byte("\x93NUMPY\x02\x00\x01\x00"),
	} {
		_, err := ReadNPZ(npzWith(t, raw))
		check.Error(t, err, name)
		check.Contains(t, err.Error(), "x.npz: a: ", name)
	}
}

// uint8 of 0/1 reads as bool flags; a uint8 array with other values reads as int64 indices.
func TestNPZUint8Flags(t *testing.T) {
	got, err := ReadNPZ(npzWith(t, append(npyHeader("|u1", "(3,)"), 1, 0, 1)))
	check.NoError(t, err)
	check.Equal(t, []bool{true, false, true}, got["a"].Data)
	got, err = ReadNPZ(npzWith(t, append(npyHeader("|u1", "(3,)"), 1, 2, 255)))
	check.NoError(t, err)
	check.Equal(t, []int64{1, 2, 255}, got["a"].Data)
}

// Every integer dtype widens exactly to int64, signs and extremes included (NumPy's default
// int is int32 on Windows); a uint64 beyond int64 is an error.
func TestNPZIntegersWiden(t *testing.T) {
	for _, c := range []struct {
		descr string
		data  []byte
		want  []int64
	}{
		{"|i1", []byte{0x80, 0xff, 0x7f}, []int64{-128, -1, 127}},
		{"<i2", []byte{0x00, 0x80, 0xff, 0xff, 0xff, 0x7f}, []int64{-32768, -1, 32767}},
		{"<i4", []byte{0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0}, []int64{-2147483648, -1, 3}},
		{"<u2", []byte{0xff, 0xff, 1, 0, 2, 0}, []int64{65535, 1, 2}},
		{"<u4", []byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0}, []int64{4294967295, 1, 0}},
		{"<u8", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []int64{1<<63 - 1, 1, 0}},
	} {
		got, err := ReadNPZ(npzWith(t, append(npyHeader(c.descr, "(3,)"), c.data...)))
		check.NoError(t, err, c.descr)
		check.Equal(t, c.want, got["a"].Data, c.descr)
	}
	_, err := ReadNPZ(npzWith(t, append(npyHeader("<u8", "(1,)"), 0, 0, 0, 0, 0, 0, 0, 0x80)))
	check.ErrorContains(t, err, "uint64 array holds 9223372036854775808 at flat index 0, beyond int64")
	_, err = ReadNPZ(npzWith(t, append(npyHeader("<c8", "(1,)"), 0, 0, 0, 0, 0, 0, 0, 0)))
	check.ErrorContains(t, err, `unsupported dtype "<c8"`)
}

// A NumPy bool array reads as NumPy reads it: any nonzero byte is True.
func TestNPZBoolNonzeroIsTrue(t *testing.T) {
	got, err := ReadNPZ(npzWith(t, append(npyHeader("|b1", "(5,)"), 0, 1, 2, 255, 0)))
	check.NoError(t, err)
	check.Equal(t, []bool{false, true, true, true, false}, got["a"].Data)
}

// npyHeaderV is a .npy header of format major.0 (2 and 3: a 4-byte header length; 3: the
// header is UTF-8).
func npyHeaderV(major byte, descr, shape string) []byte {
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	for (12+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	out := append([]byte("\x93NUMPY"), major, 0)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(h)))
	return append(out, h...)
}

// Formats 1.0, 2.0 and 3.0 all read (the README says so); 4.0 is an error that names the
// versions read.
func TestNPZHeaderVersions(t *testing.T) {
	data := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	data = binary.LittleEndian.AppendUint32(data, math.Float32bits(-2))
	for _, raw := range [][]byte{npyHeader("<f4", "(2,)"), npyHeaderV(2, "<f4", "(2,)"), npyHeaderV(3, "<f4", "(2,)")} {
		got, err := ReadNPZ(npzWith(t, append(raw, data...)))
		check.NoError(t, err, "format %d", raw[6])
		check.Equal(t, Array{Shape: []int{2}, Data: []float32{1.5, -2}}, got["a"], "format %d", raw[6])
	}
	_, err := ReadNPZ(npzWith(t, append(npyHeaderV(4, "<f4", "(2,)"), data...)))
	check.ErrorContains(t, err, "x.npz: a: not a NumPy array: .npy format 4.0 (lossgen reads 1.x, 2.x and 3.x)")

	// A 3.0 header is UTF-8: a stray byte that is not is an error.
	bad := npyHeaderV(3, "<f4", "(2,)")
	bad[len(bad)-3] = 0xff
	_, err = ReadNPZ(npzWith(t, append(bad, data...)))
	check.ErrorContains(t, err, "x.npz: a: not a NumPy array: .npy 3.0 header is not UTF-8")
}

// Compare's non-finite rules: NaN matches only NaN, an infinity only the same infinity, and a
// mismatch counts as bad under any tolerance, even an infinite one, and makes the max
// differences infinite (never a max abs diff of 0 beside a NaN).
func TestCompareNonFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		want, got float64
		bad       bool
	}{
		{nan, nan, false}, {inf, inf, false}, {-inf, -inf, false},
		{1, nan, true}, {nan, 1, true}, {1, inf, true}, {inf, 1, true},
		{inf, -inf, true}, {-inf, inf, true}, {nan, inf, true}, {inf, nan, true},
		{math.MaxFloat64, -math.MaxFloat64, true}, // a finite pair whose difference overflows
	} {
		for _, tol := range []Tol{{}, {Abs: 1e-6, Rel: 5e-6, Norm: 1e-5}, {Abs: inf}} {
			d := Compare([]float64{2, tc.want}, []float64{2, tc.got}, tol)
			name := fmt.Sprintf("want %v got %v tol %+v", tc.want, tc.got, tol)
			if !tc.bad {
				check.Equal(t, Diff{First: -1}, d, name)
				continue
			}
			if tol.Abs == inf && !math.IsNaN(tc.want) && !math.IsInf(tc.want, 0) && !math.IsNaN(tc.got) && !math.IsInf(tc.got, 0) {
				continue // an infinite tolerance admits any finite pair
			}
			check.Equal(t, 1, d.Bad, name)
			check.Equal(t, 1, d.First, name)
			check.Equal(t, inf, d.MaxAbs, name)
			check.Equal(t, inf, d.MaxRel, name)
			check.Equal(t, inf, d.MaxNorm, name)
		}
	}
}
