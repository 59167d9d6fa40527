package cases

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/runtime/golden"
)

// golden -update that runs out of space (here a file size limit, which fails writes as a full
// disk does) leaves the golden directory byte for byte as it was (issue 17, item 9): it
// used to truncate a committed .want.npz to a partial zip.
func TestUpdateFullDiskChangesNothing(t *testing.T) {
	if os.Getenv("LOSSGEN_FULL_DISK_DIR") != "" {
		updateOnFullDisk(t)
		return
	}
	g := clipPPOGAE(t)
	dir := t.TempDir()
	cs, err := Build(g, "p", "")
	require.NoError(t, err)
	smallest := int64(1 << 62)
	for i := range cs {
		require.NoError(t, Want(g, &cs[i]))
		for name, a := range cs[i].Want { // the committed outputs: other than the interpreter's
			x := a.Float64s()
			for j := range x {
				x[j] = 2*x[j] + 1
			}
			cs[i].Want[name] = golden.Array{Shape: a.Shape, Data: x}
		}
	}
	require.NoError(t, Update(dir, cs))
	was := snapshotDir(t, dir)
	largestJSON := int64(0) // the limit lets the recipes be written, not the outputs
	for name := range was {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		if filepath.Ext(name) == ".npz" {
			smallest = min(smallest, fi.Size())
		} else {
			largestJSON = max(largestJSON, fi.Size())
		}
	}
	require.Less(t, largestJSON, smallest)
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpdateFullDiskChangesNothing$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOSSGEN_FULL_DISK_DIR="+dir, "LOSSGEN_FULL_DISK_LIMIT="+strconv.FormatInt((largestJSON+smallest)/2, 10))
	out, _ := cmd.CombinedOutput()
	require.Contains(t, string(out), "file too large", "the update did not run out of space:\n%s", out)
	require.Equal(t, was, snapshotDir(t, dir), "the update changed the golden directory:\n%s", out)
}

// updateOnFullDisk is the child of TestUpdateFullDiskChangesNothing: the interpreter's cases
// written with no file allowed past LOSSGEN_FULL_DISK_LIMIT bytes.
func updateOnFullDisk(t *testing.T) {
	g := clipPPOGAE(t)
	cs, err := Build(g, "p", "")
	require.NoError(t, err)
	for i := range cs {
		require.NoError(t, Want(g, &cs[i]))
	}
	limit, err := strconv.ParseUint(os.Getenv("LOSSGEN_FULL_DISK_LIMIT"), 10, 64)
	require.NoError(t, err)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}))
	fmt.Println("update:", Update(os.Getenv("LOSSGEN_FULL_DISK_DIR"), cs))
}

// snapshotDir is every entry of dir with its size and a hash of its content.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = fmt.Sprintf("%d bytes, sha256 %x", len(b), sha256.Sum256(b))
	}
	return out
}
