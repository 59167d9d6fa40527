package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/golden"
)

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// bombNPZ writes, to a new .npz in dir, the arrays plus one float64 entry per bomb name
// whose 200 MB of zeros deflate to a few hundred KiB: it declares (honestly) shape
// [25000000] in its .npy header and its inflated size in the zip directory.
func bombNPZ(t *testing.T, dir string, arrays map[string]golden.Array, bombs ...string) string {
	t.Helper()
	small := filepath.Join(dir, "small.npz")
	require.NoError(t, golden.WriteNPZ(small, arrays))
	p := filepath.Join(dir, "bomb.npz")
	f, err := os.Create(p)
	require.NoError(t, err)
	z := zip.NewWriter(f)
	src, err := zip.OpenReader(small)
	require.NoError(t, err)
	for _, e := range src.File {
		require.NoError(t, z.Copy(e))
	}
	src.Close()
	const n = 25_000_000
	for _, b := range bombs {
		w, err := z.CreateHeader(&zip.FileHeader{Name: b + ".npy", Method: zip.Deflate})
		require.NoError(t, err)
		h := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }", n)
		for (10+len(h)+1)%64 != 0 {
			h += " "
		}
		h += "\n"
		_, err = w.Write(append([]byte("\x93NUMPY\x01\x00"), append([]byte{byte(len(h)), byte(len(h) >> 8)}, h...)...))
		require.NoError(t, err)
		_, err = io.CopyN(w, zeros{}, 8*n)
		require.NoError(t, err)
	}
	require.NoError(t, z.Close())
	require.NoError(t, f.Close())
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Less(t, fi.Size(), int64(4<<20), "the bomb is small on disk")
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

// eval reads only the arrays the spec uses, each bounded by the spec's shape: a 200 MB
// (inflated) array of the wrong shape is an error found from its header, and one the spec
// does not read is listed, never inflated. Memory stays far below the inflated size.
func TestEvalZipBomb(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "gae.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("package: g\ndtype: float64\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.9, lmbda: 0.5}\n"), 0o644))
	f64 := func() golden.Array { return golden.Array{Shape: []int{2, 3}, Data: make([]float64, 6)} }
	flags := func() golden.Array { return golden.Array{Shape: []int{2, 3}, Data: make([]bool, 6)} }
	inputs := map[string]golden.Array{"next.done": flags(), "next.terminated": flags(), "state_value": f64(), "next.state_value": f64()}

	// The bomb is an input of the spec, at the wrong shape.
	bomb := bombNPZ(t, t.TempDir(), inputs, "next.reward")
	var out, errb strings.Builder
	code := 0
	n := allocated(func() { code = run([]string{"eval", "-backend", "ref", "-spec", spec, "-in", bomb}, &out, &errb) })
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), `array "next.reward" has shape [25000000], want [2 3] [N T]`)
	require.Less(t, n, uint64(20<<20), "eval allocated %d bytes for a 200 MB entry it rejects", n)

	// The bomb is not read by the spec.
	inputs["next.reward"] = f64()
	bomb = bombNPZ(t, t.TempDir(), inputs, "junk", "more.junk")
	out.Reset()
	errb.Reset()
	n = allocated(func() { code = run([]string{"eval", "-backend", "ref", "-spec", spec, "-in", bomb}, &out, &errb) })
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, errb.String(), "not read by the spec: junk, more.junk\n")
	require.Contains(t, out.String(), "advantage")
	require.Less(t, n, uint64(20<<20), "eval allocated %d bytes for 400 MB of entries it does not read", n)
}
