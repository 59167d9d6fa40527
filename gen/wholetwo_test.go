package gen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
)

// TestCheapTablesWholeOnTwoCases generates a package whose launch tables are too large to
// simulate whole on every case by default (over gen.WholeBudget) but within
// gen.CaseWholeBudget, with its golden cases, and runs its default go test: the tables are
// simulated whole on the special-value case and on "random", in part on the others, and it
// passes. Then, with min.NaN emitted as min in its PTX — a bug whose only effect is on the
// mean losses of an input with NaN, which a partial simulation cannot compute — the default
// test fails in TestPTXSimulated.
func TestCheapTablesWholeOnTwoCases(t *testing.T) {
	if testing.Short() {
		t.Skip("generates, compiles and runs a package")
	}
	t.Parallel()
	// Without normalize_advantage: with it, advantage sinks into the pass after the scan,
	// whose part simulation computes so few of its elements that estimateWhole overshoots
	// the gate and no table is tried whole (the size stops fitting the test's premise).
	mod := t.TempDir()
	spec := filepath.Join(mod, "ppo.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("package: ppo\ndtype: float32\ndims: {N: 32, T: 384}\nbatch: [N, T]\n"+
		"estimator: {type: gae, gamma: 0.99, lmbda: 0.95}\nloss: {type: clip_ppo, entropy_coeff: 0.01}\n"), 0o644))
	dir, goldenDir := filepath.Join(mod, "ppo"), filepath.Join(mod, "testdata", "ppo")
	c, files, err := gen.Generate(spec, gen.Options{OutDir: dir, GoldenDir: goldenDir})
	require.NoError(t, err)
	require.NoError(t, gen.Write(dir, files))
	cs, err := cases.Build(c.Graph, c.Spec.Package, "")
	require.NoError(t, err)
	for i := range cs {
		require.NoError(t, cases.Want(c.Reference(), &cs[i]))
		cs[i].Compact()
	}
	require.NoError(t, cases.Update(goldenDir, cs))

	// Both tables: in part by default, whole on two cases, the instruction counts documented.
	src := string(files["ptxsim_test.go"])
	require.Equal(t, 2, strings.Count(src, "wholeTwo: true,"), src)
	docs := regexp.MustCompile(`whole \((\d+) instructions\)[\s/]+on[\s/]+the[\s/]+special-value[\s/]+case[\s/]+and[\s/]+the[\s/]+golden[\s/]+case[\s/]+random`).FindAllStringSubmatch(src, -1)
	require.Len(t, docs, 2)
	for _, d := range docs {
		var n int64
		_, err := fmt.Sscan(d[1], &n)
		require.NoError(t, err)
		require.Greater(t, n, int64(gen.WholeBudget))
	}

	scratchModule(t, mod, "wholetwo")
	goTest := func() (string, error) {
		return goIn(mod, "test", "-count=1", "-v", "-run", "TestPTXSimulated|TestGolden", "./ppo")
	}
	out, err := goTest()
	require.NoError(t, err, out)
	// Whole runs stop no thread; partial ones do. Two cases × two tables whole, and the
	// other two cases in part.
	require.Equal(t, 4, len(regexp.MustCompile(`(?m)instructions, \d+ blocks, \d+ barriers, \d+ shuffles, 0 threads stopped$`).FindAllString(out, -1)), out)
	require.Equal(t, 4, len(regexp.MustCompile(`(?m)instructions, \d+ blocks, \d+ barriers, \d+ shuffles, [1-9]\d* threads stopped$`).FindAllString(out, -1)), out)

	ptx := filepath.Join(dir, "kernels.ptx")
	b, err := os.ReadFile(ptx)
	require.NoError(t, err)
	require.Contains(t, string(b), "min.NaN.f32")
	require.NoError(t, os.WriteFile(ptx, []byte(strings.ReplaceAll(string(b), "min.NaN.f32", "min.f32")), 0o644))
	out, err = goTest()
	require.Error(t, err, out)
	require.Contains(t, out, "--- FAIL: TestPTXSimulated", out)
}
