package gen_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/runner"
)

// scratchModule makes dir a Go module named name that uses this checkout's runtime module
// (runner.WriteModule), for tests that generate packages into it and build, vet or test them
// as a user's module would.
func scratchModule(t *testing.T, dir, name string) {
	t.Helper()
	root, err := runner.RuntimeRoot()
	require.NoError(t, err)
	require.NoError(t, runner.WriteModule(dir, name, root))
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
