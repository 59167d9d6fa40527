//go:build unix

package spec_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/spec"
)

// A FIFO with no writer is an error at once, as a spec or as a .npz: opening it would block
// for ever (second adversarial trial of the LLM losses).
func TestFIFOIsNoFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	_, err := spec.ReadFile(fifo)
	require.EqualError(t, err, fifo+": a named pipe, not a regular file; a spec is a YAML file")
	npz := filepath.Join(dir, "fifo.npz")
	require.NoError(t, syscall.Mkfifo(npz, 0o644))
	_, err = golden.OpenNPZ(npz)
	require.EqualError(t, err, npz+": not a regular file (a .npz is a zip file)")
}
