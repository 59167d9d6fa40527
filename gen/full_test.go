package gen_test

import (
	"os"
	"testing"
)

// full reports whether LOSSGEN_FULL is set (make test's unit target sets it): the slow
// sweeps of this package run every configuration of their tables then. A default go test
// runs a representative part of each table: configurations that still exercise every backend
// and each code path the sweep was written for, and every reproducer of a past bug.
func full() bool { return os.Getenv("LOSSGEN_FULL") != "" }

// sweepOnly skips the calling (sub)test unless LOSSGEN_FULL is set: a configuration of a
// sweep that the default run's representative ones already cover.
func sweepOnly(t *testing.T) {
	t.Helper()
	if !full() {
		t.Skip("part of the exhaustive sweep: LOSSGEN_FULL=1 runs it")
	}
}
