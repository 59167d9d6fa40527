// Package testdir holds what tests of directory writes share: a snapshot of a directory to
// compare before and after, and a way to lay files down.
package testdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Snapshot is every entry of dir (dot files included) with its content; a directory reads
// as "<dir>".
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range es {
		if e.IsDir() {
			out[e.Name()] = "<dir>"
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// WriteAll creates files (name → content) in dir.
func WriteAll(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, s := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644))
	}
}
