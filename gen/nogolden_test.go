package gen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A package generated without -golden says so: its package doc, and a TestGolden that skips
// with a message naming the commands that add goldens. With -golden neither appears. Every
// package doc names where its SEMANTICS.md references are read.
func TestNoGoldenSaysSo(t *testing.T) {
	c, err := Compile("../spec/examples/gae.yaml")
	require.NoError(t, err)
	files, err := Emit(c, Options{OutDir: "out"})
	require.NoError(t, err)
	doc, test := string(files["gae.go"]), string(files["gae_test.go"])
	require.Contains(t, doc, "This package was generated without golden cases (lossgen generate without -golden)")
	require.Contains(t, doc, "lossgen golden -update -dir testdata/golden ../../spec/examples/gae.yaml")
	require.Contains(t, doc, "as SEMANTICS.md §N: lossgen's docs/SEMANTICS.md, https://github.com/lossgen/lossgen/blob/")
	i := strings.Index(test, "func TestGolden(t *testing.T) {\n\tt.Skip(\"no golden cases: generated without -golden")
	require.GreaterOrEqual(t, i, 0, "a skipped TestGolden")
	require.Contains(t, test[i:], "lossgen generate -o . -golden testdata/golden/gae ../../spec/examples/gae.yaml")
	require.NotContains(t, files, ptxSimTestName)

	files, err = Emit(c, Options{OutDir: "out", GoldenDir: "testdata/gae"})
	require.NoError(t, err)
	require.NotContains(t, string(files["gae.go"]), "without golden cases")
	require.NotContains(t, string(files["gae_test.go"]), "no golden cases: generated without -golden")
	require.Contains(t, string(files["gae_test.go"]), "cases, err := golden.OpenCases(goldenDir)")
}

// Generating a package whose PTX test needs a whole simulation over WholeBudget to be sized
// (ClipPPO+GAE at [16, 256]: about 2.8·10^7 instructions a table) reports that step, one line
// per table, through Options.Progress; a small one reports nothing.
func TestGenerateReportsSlowSteps(t *testing.T) {
	var steps []string
	progress := func(s string) { steps = append(steps, s) }
	c, err := CompileDims("../spec/examples/clip_ppo_gae.yaml", map[string]int{"N": 16, "T": 256})
	require.NoError(t, err)
	files, err := Emit(c, Options{OutDir: "out", GoldenDir: "g", Progress: progress})
	require.NoError(t, err)
	require.Len(t, steps, 2, steps)
	require.Regexp(t, `^simulating the forward PTX whole once \(about [0-9.]+e\+07 instructions\) to size the generated test$`, steps[0])
	require.Regexp(t, `^simulating the backward PTX whole once `, steps[1])
	// Both tables are in part, and whole on the two cases (each ≈ 2.8·10^7 < 10^8 together).
	require.Equal(t, 2, strings.Count(string(files[ptxSimTestName]), "wholeTwo: true,"))

	steps = nil
	c, err = Compile("../spec/examples/gae.yaml")
	require.NoError(t, err)
	_, err = Emit(c, Options{OutDir: "out", GoldenDir: "g", Progress: progress})
	require.NoError(t, err)
	require.Empty(t, steps)
}
