package golden

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lossgen/lossgen/runtime/internal/check"
)

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// bombSize is the inflated size of a bomb's data: 200 MB of zeros, a few hundred KiB deflated.
const bombSize = 200 << 20

// deflated is the raw deflate stream of hdr followed by bombSize zero bytes.
func deflated(t *testing.T, hdr []byte) []byte {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	check.NoError(t, err)
	_, err = w.Write(hdr)
	check.NoError(t, err)
	_, err = io.CopyN(w, zeros{}, bombSize)
	check.NoError(t, err)
	check.NoError(t, w.Close())
	return buf.Bytes()
}

// bombNPZ writes a .npz with a small array "a" ([1, 2, 3] float64) and an entry "bomb.npy"
// holding hdr and bombSize zero bytes; declare is the inflated size its zip header states
// (the true one, hdr plus bombSize, or a lie).
func bombNPZ(t *testing.T, hdr []byte, declare uint64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bomb.npz")
	f, err := os.Create(p)
	check.NoError(t, err)
	z := zip.NewWriter(f)
	w, err := z.Create("a.npy")
	check.NoError(t, err)
	_, err = w.Write(append(npyHeader("<f8", "(3,)"), 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0x08, 0x40))
	check.NoError(t, err)
	raw := deflated(t, hdr)
	w, err = z.CreateRaw(&zip.FileHeader{Name: "bomb.npy", Method: zip.Deflate,
		CompressedSize64: uint64(len(raw)), UncompressedSize64: declare})
	check.NoError(t, err)
	_, err = w.Write(raw)
	check.NoError(t, err)
	check.NoError(t, z.Close())
	check.NoError(t, f.Close())
	return p
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// Zip bombs: whatever the headers declare, an entry is never inflated past what its headers
// declare, nor past the caller's bound, and an entry not asked for is never inflated.
func TestNPZBombs(t *testing.T) {
	const limit = 4 << 20                     // allocation allowed for any of these reads, far under bombSize
	honest := npyHeader("<f8", "(26214400,)") // bombSize/8 elements: the headers agree
	small := npyHeader("<f8", "(4096,)")      // the .npy header understates the entry
	read := func(p string, maxLen int) (a Array, names []string, err error) {
		z, err := OpenNPZ(p)
		check.NoError(t, err)
		defer z.Close()
		names = z.Names()
		a, err = z.Read("bomb", maxLen)
		return a, names, err
	}

	// Headers that agree, larger than the caller's bound: an error before any data is read.
	p := bombNPZ(t, honest, uint64(len(honest))+bombSize)
	var err error
	var names []string
	n := allocated(func() { _, names, err = read(p, 4096) })
	check.ErrorContains(t, err, "bomb.npz: bomb: shape [26214400] holds 26214400 elements, more than the 4096 read here")
	check.Equal(t, []string{"a", "bomb"}, names)
	check.Less(t, n, uint64(limit), "allocated %d bytes", n)

	// Only the header is inflated to learn the shape; the other array reads alone.
	n = allocated(func() {
		z, err := OpenNPZ(p)
		check.NoError(t, err)
		defer z.Close()
		h, err := z.Header("bomb")
		check.NoError(t, err)
		check.Equal(t, NPYHeader{Descr: "<f8", Shape: []int{26214400}}, h)
		a, err := z.Read("a", 3)
		check.NoError(t, err)
		check.Equal(t, []float64{1, 2, 3}, a.Data)
	})
	check.Less(t, n, uint64(limit), "allocated %d bytes", n)

	// An .npy header that understates the entry: the sizes disagree, nothing is inflated.
	p = bombNPZ(t, small, uint64(len(small))+bombSize)
	n = allocated(func() { _, _, err = read(p, -1) })
	check.ErrorContains(t, err, "bomb: header shape [4096] needs 32768 data bytes, the file has 209715200 (truncated or corrupt)")
	check.Less(t, n, uint64(limit), "allocated %d bytes", n)

	// A zip header that understates the entry (it declares what the .npy header needs): the
	// stream is read no further than declared, and the extra data is an error.
	p = bombNPZ(t, small, uint64(len(small))+4096*8)
	n = allocated(func() { _, _, err = read(p, -1) })
	check.ErrorContains(t, err, "bomb.npz: bomb: the entry does not end at the 32896 bytes its zip header declares (corrupt file)")
	check.Less(t, n, uint64(limit), "allocated %d bytes", n)
	_, err = ReadNPZ(p)
	check.ErrorContains(t, err, "bomb.npz: bomb: the entry does not end at")
}

// Data whose CRC-32 is not the one its zip header declares is an error: reading stops at
// the declared size, and the check at the end still runs.
func TestNPZChecksum(t *testing.T) {
	entry := append(npyHeader("<f8", "(1,)"), 0, 0, 0, 0, 0, 0, 0xf0, 0x3f)
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestSpeed)
	check.NoError(t, err)
	_, err = w.Write(entry)
	check.NoError(t, err)
	check.NoError(t, w.Close())
	p := filepath.Join(t.TempDir(), "crc.npz")
	f, err := os.Create(p)
	check.NoError(t, err)
	z := zip.NewWriter(f)
	zw, err := z.CreateRaw(&zip.FileHeader{Name: "a.npy", Method: zip.Deflate, CRC32: 12345,
		CompressedSize64: uint64(buf.Len()), UncompressedSize64: uint64(len(entry))})
	check.NoError(t, err)
	_, err = zw.Write(buf.Bytes())
	check.NoError(t, err)
	check.NoError(t, z.Close())
	check.NoError(t, f.Close())
	_, err = ReadNPZ(p)
	check.ErrorContains(t, err, "crc.npz: a: zip: checksum error")
}
