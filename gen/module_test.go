package gen_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/runner"
)

// scratchModule makes dir a Go module named name that requires this checkout of lossgen (a
// replace directive) with its go.sum, for tests that generate packages into it and build,
// vet or test them as a user's module would.
func scratchModule(t *testing.T, dir, name string) {
	t.Helper()
	root, err := runner.Root()
	require.NoError(t, err)
	gomod := fmt.Sprintf("module %s\n\ngo 1.26\n\nrequire github.com/lossgen/lossgen v0.0.0-00010101000000-000000000000\n\nreplace github.com/lossgen/lossgen => %s\n", name, root)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
}

// goIn runs the go command with args in dir as a user's default run would: without the
// LOSSGEN_FULL and LOSSGEN_REQUIRE_IMPL that lossgen's own make test sets (a default build
// of the scratch module runs AVX2 even under make test-purego), and with no workspace.
func goIn(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool {
		return strings.HasPrefix(e, "LOSSGEN_FULL=") || strings.HasPrefix(e, "LOSSGEN_REQUIRE_IMPL=")
	}), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
