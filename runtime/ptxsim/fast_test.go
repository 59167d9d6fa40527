package ptxsim

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lossgen/lossgen/runtime/internal/check"

	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
)

// TestFastPathSameBits runs every example package's PTX, whole and in part, with the
// compiled instructions (fast.go) and with exec.step alone, on its first golden case: every
// output bit, the elements a part computes and the instruction counts must be the same.
// By default a table whose whole simulation exceeds fastWholeBudget instructions (the large
// ClipPPO and V-trace examples) is compared in part only, which runs the same instructions on
// its first, middle and last blocks; LOSSGEN_FULL=1 compares every table whole too.
func TestFastPathSameBits(t *testing.T) {
	// lossgen's example packages and their goldens, beside this module in a lossgen checkout.
	if _, err := os.Stat("../../generated/generate.go"); err != nil {
		t.Skip("not in a lossgen checkout: no example packages to run")
	}
	tables, err := filepath.Glob("../../generated/*/launch.json")
	check.NoError(t, err)
	check.NotEmpty(t, tables)
	for _, lf := range tables {
		dir := filepath.Dir(lf)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			js, err := os.ReadFile(lf)
			check.NoError(t, err)
			var table runtime.LaunchTable
			check.NoError(t, json.Unmarshal(js, &table))
			ptx, err := os.ReadFile(filepath.Join(dir, table.PTX))
			check.NoError(t, err)
			cases, err := golden.OpenCases(filepath.Join("../../golden", filepath.Base(dir)))
			check.NoError(t, err)
			check.NotEmpty(t, cases)
			check.NoError(t, cases[0].LoadInputs())
			parts := []Part{Whole, Sampled}
			if os.Getenv("LOSSGEN_FULL") == "" {
				budget := Whole
				budget.Budget = fastWholeBudget
				if _, err := Simulate(string(ptx), table, cases[0].Inputs, budget); errors.Is(err, ErrBudget) {
					t.Logf("over %d instructions whole: compared in part (LOSSGEN_FULL=1 compares it whole too)", fastWholeBudget)
					parts = []Part{Sampled}
				}
			}
			for _, part := range parts {
				run := func(slow bool) *Result {
					noFast = slow
					defer func() { noFast = false }()
					r, err := Simulate(string(ptx), table, cases[0].Inputs, part)
					check.NoError(t, err)
					return r
				}
				fast, slow := run(false), run(true)
				check.Equal(t, slow.Stats, fast.Stats)
				for name, s := range slow.Outputs {
					f := fast.Outputs[name]
					check.Equal(t, s.Index, f.Index, name)
					check.Equal(t, len(s.Value), len(f.Value), name)
					for i := range s.Value {
						if math.Float64bits(s.Value[i]) != math.Float64bits(f.Value[i]) {
							t.Fatalf("%s[%d]: fast %v, step %v", name, i, f.Value[i], s.Value[i])
						}
					}
				}
			}
		})
	}
}

// fastWholeBudget is the largest whole simulation TestFastPathSameBits runs by default.
const fastWholeBudget = 20_000_000
