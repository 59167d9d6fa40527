package ptxgen_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	lossgen "github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/ptxgen"
	goldenw "github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/runtime/ptxsim"
)

// example is one committed generated package: its PTX, launch table and golden cases.
type example struct {
	dir   string
	ptx   string
	table runtime.LaunchTable
	fb    *runtime.LaunchTable // ForwardBackward's, where the package has gradients
	cases []golden.Case
}

// examples loads every package under generated/ that carries a launch table.
func examples(t *testing.T) []example {
	tables, err := filepath.Glob("../../generated/*/" + ptxgen.LaunchFile)
	require.NoError(t, err)
	require.NotEmpty(t, tables)
	var out []example
	for _, lf := range tables {
		dir := filepath.Dir(lf)
		ex := example{dir: filepath.Base(dir)}
		js, err := os.ReadFile(lf)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(js, &ex.table))
		ptx, err := os.ReadFile(filepath.Join(dir, ex.table.PTX))
		require.NoError(t, err)
		ex.ptx = string(ptx)
		if js, err := os.ReadFile(filepath.Join(dir, ptxgen.LaunchBackwardFile)); err == nil {
			ex.fb = new(runtime.LaunchTable)
			require.NoError(t, json.Unmarshal(js, ex.fb))
		}
		ex.cases, err = golden.LoadCases("../../golden/" + ex.dir)
		require.NoError(t, err)
		require.NotEmpty(t, ex.cases, ex.dir)
		out = append(out, ex)
	}
	return out
}

// specialCase is the example's first golden case with NaN and ±inf placed in its float
// inputs (a NaN every 37 elements from 11, +inf and −inf every 101 from 50 and 51), its
// expected outputs computed by the interpreter: NaN and inf must propagate through the PTX
// exactly as through the interpreter (TorchRL's float semantics, README "NaN propagation").
func specialCase(t *testing.T, ex example) golden.Case {
	_, rest, ok := strings.Cut(ex.table.Generated, " from ")
	require.True(t, ok, "launch.json names its spec")
	specPath, _, _ := strings.Cut(rest, ";")
	c, err := lossgen.Compile(filepath.Join("../../generated", ex.dir, specPath))
	require.NoError(t, err)
	base := ex.cases[0]
	cs := golden.Case{Name: base.Name + "+nan+inf", Inputs: golden.WithSpecials(base.Inputs)}
	require.NoError(t, cases.Want(c.Graph, &cs))
	return cs
}

// TestSpecialValues runs every example's PTX on its special-value case.
func TestSpecialValues(t *testing.T) {
	for _, ex := range examples(t) {
		t.Run(ex.dir, func(t *testing.T) {
			t.Parallel()
			bad, err := check(t, ex.ptx, ex.table, specialCase(t, ex))
			require.NoError(t, err)
			require.Zero(t, bad)
		})
	}
}

// check runs ptx with table on a golden case in the simulator, its output and scratch
// buffers full of NaN bytes rather than zeros (no kernel may read a buffer before writing
// it: the README lets callers reuse buffers uncleared), and returns how many elements
// of its outputs miss the generated tests' tolerances (gen.Tolerance) against the
// interpreter's golden outputs.
func check(t *testing.T, ptx string, table runtime.LaunchTable, cs golden.Case) (bad int, err error) {
	out, st, err := ptxsim.RunTableDirty(ptx, table, cs.Inputs)
	if err != nil {
		return 0, err
	}
	t.Logf("%s: %d instructions, %d barriers, %d shuffles", cs.Name, st.Instructions, st.Barriers, st.Shuffles)
	dt := ir.F32
	if table.DType == "float64" {
		dt = ir.F64
	}
	for name, got := range out {
		if !cs.Has(name) {
			continue
		}
		r, err := cs.Check(name, got.Float64s(), lossgen.Tolerance(dt, len(got.Shape) == 0))
		if err != nil {
			return 0, err
		}
		if r.Bad > 0 {
			t.Logf("%s %s: %d bad: %s", cs.Name, name, r.Bad, r.First)
		} else {
			t.Logf("%s %-22s %s: max rel %.3g normwise %.3g", cs.Name, name, r.Checked, r.MaxRel, r.MaxNorm)
		}
		bad += r.Bad
	}
	for name := range cs.Want {
		if _, ok := out[name]; !ok {
			t.Logf("%s: no output %s", cs.Name, name)
			bad++
		}
	}
	for name := range cs.Summary {
		if _, ok := out[name]; !ok {
			t.Logf("%s: no output %s", cs.Name, name)
			bad++
		}
	}
	return bad, nil
}

// replaceNth replaces the n-th (from 1) occurrence of old in s, failing the test when there
// is none, so a mutation that no longer applies is noticed.
func replaceNth(t *testing.T, s, old, new string, n int) string {
	t.Helper()
	at := -1
	for i := 0; i < n; i++ {
		j := strings.Index(s[at+1:], old)
		require.GreaterOrEqual(t, j, 0, "occurrence %d of %q", i+1, old)
		at += 1 + j
	}
	return s[:at] + new + s[at+len(old):]
}

// launchOf returns the launch of kernel name.
func launchOf(t *testing.T, tb *runtime.LaunchTable, name string) *runtime.Launch {
	for i := range tb.Launches {
		if tb.Launches[i].Kernel == name {
			return &tb.Launches[i]
		}
	}
	t.Fatalf("no launch of %s", name)
	return nil
}

// swapParams exchanges two buffers in a launch's argument list.
func swapParams(t *testing.T, l *runtime.Launch, a, b string) {
	ia, ib := slices.Index(l.Params, a), slices.Index(l.Params, b)
	require.True(t, ia >= 0 && ib >= 0, "%s has params %s and %s", l.Kernel, a, b)
	l.Params[ia], l.Params[ib] = b, a
}

// TestMutationsAreCaught checks the checker: each mutation is a bug a template, an op
// expansion or the launch-table builder could plausibly have — a wrong instruction or
// constant in a copy of a generated package's PTX, or a wrong entry in its launch table —
// and running the mutated kernels on the package's golden cases must fail (outputs outside
// tolerance, or an error such as a shared-memory race).
func TestMutationsAreCaught(t *testing.T) {
	byDir := map[string]example{}
	for _, ex := range examples(t) {
		byDir[ex.dir] = ex
	}
	f64 := func(v float64) string { return fmt.Sprintf("0d%016X", math.Float64bits(v)) }
	for _, m := range []struct {
		name, dir string
		ptx       func(t *testing.T, src string) string
		table     func(t *testing.T, tb *runtime.LaunchTable)
	}{
		{name: "gamma 0.99 emitted as 0.98", dir: "gae", ptx: func(t *testing.T, s string) string {
			// param_dtype float32: the float64 kernel holds γ as float32(0.99) does.
			g, g2 := f64(float64(float32(0.99))), f64(float64(float32(0.98)))
			return strings.ReplaceAll(replaceNth(t, s, g, g2, 1), g, g2)
		}},
		{name: "first warp-shuffle step with offset 8 instead of 16", dir: "gae", ptx: func(t *testing.T, s string) string {
			return replaceNth(t, s, ", 16, 31, 0xffffffff;", ", 8, 31, 0xffffffff;", 1)
		}},
		{name: "barrier between shared-memory write and read dropped", dir: "gae", ptx: func(t *testing.T, s string) string {
			return replaceNth(t, s, "\tbar.sync 0;\n", "", 1)
		}},
		{name: "scan subtracts delta instead of adding it", dir: "gae", ptx: func(t *testing.T, s string) string {
			i := strings.Index(s, "= scan(")
			require.Greater(t, i, 0)
			return s[:i] + replaceNth(t, s[i:], "add.rn.f64", "sub.rn.f64", 1)
		}},
		{name: "done and terminated passed in each other's place", dir: "gae", table: func(t *testing.T, tb *runtime.LaunchTable) {
			swapParams(t, launchOf(t, tb, "pass0"), "in/next.done", "in/next.terminated")
		}},
		{name: "block of the scan too small for the rows", dir: "gae", table: func(t *testing.T, tb *runtime.LaunchTable) {
			launchOf(t, tb, "pass0").Block[0] = 32
		}},
		{name: "merge of block partials not launched", dir: "gae", table: func(t *testing.T, tb *runtime.LaunchTable) {
			tb.Launches = slices.DeleteFunc(tb.Launches, func(l runtime.Launch) bool { return l.Kernel == "pass0_merge" })
		}},
		{name: "one block too few", dir: "clipppo", table: func(t *testing.T, tb *runtime.LaunchTable) {
			launchOf(t, tb, "pass0").Grid[0]--
		}},
		{name: "min.NaN.f32 emitted as min.f32 (NaN dropped)", dir: "clipppo", ptx: func(t *testing.T, s string) string {
			return strings.ReplaceAll(s, "min.NaN.f32", "min.f32")
		}},
		{name: "polynomial coefficient 0.5 emitted as 0.25", dir: "clipppo", ptx: func(t *testing.T, s string) string {
			return replaceNth(t, s, ", 0f3F000000;", ", 0f3E800000;", 1)
		}},
		{name: "state_value and next.state_value swapped", dir: "clipppogae", table: func(t *testing.T, tb *runtime.LaunchTable) {
			swapParams(t, launchOf(t, tb, "pass0"), "in/state_value", "in/next.state_value")
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ex, ok := byDir[m.dir]
			require.True(t, ok, m.dir)
			ptx, tb := ex.ptx, ex.table
			tb.Launches = slices.Clone(tb.Launches)
			for i := range tb.Launches {
				tb.Launches[i].Params = slices.Clone(tb.Launches[i].Params)
			}
			if m.ptx != nil {
				ptx = m.ptx(t, ptx)
				require.NotEqual(t, ex.ptx, ptx)
			}
			if m.table != nil {
				m.table(t, &tb)
			}
			run := append([]golden.Case{specialCase(t, ex)}, ex.cases...)
			if m.dir == "clipppogae" {
				run = run[:2] // seconds each in the simulator
			}
			caught := false
			for _, cs := range run {
				bad, err := check(t, ptx, tb, cs)
				if err != nil {
					t.Logf("%s: %v", cs.Name, err)
				}
				caught = caught || err != nil || bad > 0
			}
			require.True(t, caught, "the mutated PTX passed every golden case")
		})
	}
}

// numpyPython is a Python 3 with NumPy, or "" when there is none.
func numpyPython() string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import numpy").Run() == nil {
			return py
		}
	}
	return ""
}

// TestGPUCheckScript runs scripts/gpu-check without a GPU (--dry-run) on the simulator's
// outputs for the "random" case of every example, from Forward's launch table and from
// ForwardBackward's (gradients under their Floor, DQN's float fault output too): it must accept
// them, and must reject them once one element of an output or of a gradient is off; and it
// must draw every seeded case's inputs as lossgen does — so the script's buffer plumbing and
// comparison are tested here, and only the CUDA calls wait for a GPU.
func TestGPUCheckScript(t *testing.T) {
	py := numpyPython()
	if py == "" {
		t.Skip("no python3 with NumPy (CI installs python3-numpy)")
	}
	out := t.TempDir()
	var dirs []string
	var first, firstFB string
	for _, ex := range examples(t) {
		i := slices.IndexFunc(ex.cases, func(c golden.Case) bool { return c.Name == "random" })
		require.GreaterOrEqual(t, i, 0, ex.dir)
		res, _, err := ptxsim.RunTable(ex.ptx, ex.table, ex.cases[i].Inputs)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(out, ex.dir), 0o755))
		f := filepath.Join(out, ex.dir, "random.npz")
		require.NoError(t, goldenw.WriteNPZ(f, res))
		if ex.fb != nil {
			res, _, err := ptxsim.RunTable(ex.ptx, *ex.fb, ex.cases[i].Inputs)
			require.NoError(t, err)
			ffb := filepath.Join(out, ex.dir, "random.fb.npz")
			require.NoError(t, goldenw.WriteNPZ(ffb, res))
			if ex.dir == "clipppo" {
				firstFB = ffb
			}
		}
		dirs = append(dirs, filepath.Join("../../generated", ex.dir))
		if ex.dir == "gae" {
			first = f
		}
	}
	run := func() (string, error) {
		cmd := exec.Command(py, append([]string{"../../scripts/gpu-check", "--dry-run", "--cases", "random", "--outputs", out}, dirs...)...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	// Every seeded case of every example: the script's NumPy port of the input generator
	// must draw each recipe's inputs to the checksums the recipe stores.
	all, err := exec.Command(py, append([]string{"../../scripts/gpu-check", "--dry-run"}, dirs...)...).CombinedOutput()
	require.NoError(t, err, string(all))
	require.Contains(t, string(all), "RESULT ok 0 failures")

	got, err := run()
	require.NoError(t, err, got)
	require.Contains(t, got, "RESULT ok 0 failures")
	require.Contains(t, got, "CASE gae random advantage ok")
	require.Contains(t, got, "CASE clipppo random.fb grad.log_prob ok")
	require.Contains(t, got, "CASE distdqn random invalid_target ok")
	require.Contains(t, got, "PLAN clipppogae pass0_merge grid=")

	require.NotEmpty(t, first)
	res, err := golden.ReadNPZ(first)
	require.NoError(t, err)
	adv := res["advantage"].Data.([]float64)
	adv[100] += 1e-3
	require.NoError(t, goldenw.WriteNPZ(first, res))
	got, err = run()
	require.Error(t, err, got)
	require.Contains(t, got, "CASE gae random advantage FAIL")
	require.Regexp(t, `CASE gae random advantage FAIL .* bad=[1-9][0-9]*/[0-9]+checks`, got)
	require.Contains(t, got, "RESULT FAIL 1 failures")

	// A gradient off by 5% of the largest (the Norm term allows 1%): caught in ForwardBackward's table.
	require.NotEmpty(t, firstFB)
	fbRes, err := golden.ReadNPZ(firstFB)
	require.NoError(t, err)
	g := fbRes["grad.log_prob"].Float64s()
	g[7] += 0.05 * golden.AbsMax(g)
	fbRes["grad.log_prob"] = golden.Array{Shape: fbRes["grad.log_prob"].Shape, Data: g}
	require.NoError(t, goldenw.WriteNPZ(firstFB, fbRes))
	got, err = run()
	require.Error(t, err, got)
	require.Regexp(t, `CASE clipppo random.fb grad.log_prob FAIL .* bad=1/`, got)
	require.Contains(t, got, "RESULT FAIL 2 failures")
}

// TestOddShapes runs the PTX of specs with awkward shapes — dims that fill no warp or block,
// a three-dim batch whose explained variance keeps a middle dim, normalisation that excludes
// a dim, float64 — in the simulator on Build's cases and compares with the interpreter.
func TestOddShapes(t *testing.T) {
	for name, src := range map[string]string{
		"gae_3x5": "dims: {N: 3, T: 5}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.9, lmbda: 0.8, average_gae: true}\n",
		"clip_ppo_gae_3x5": "dims: {N: 3, T: 5}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\n" +
			"loss: {type: clip_ppo, normalize_advantage: true, clip_value: 0.1}\n",
		"clip_ppo_3d": "dims: {A: 2, B: 3, C: 37}\nbatch: [A, B, C]\n" +
			"loss: {type: clip_ppo, normalize_advantage: true, normalize_advantage_exclude_dims: [1], clip_value: 0.2, loss_critic_type: l1}\n",
		"clip_ppo_1001_f64": "dtype: float64\ndims: {B: 1001}\nbatch: [B]\n" +
			"loss: {type: clip_ppo, entropy_coeff: 0.02, loss_critic_type: l2, reduction: sum}\n",
		"clip_ppo_gae_300x3": "dims: {N: 300, T: 3}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\n" +
			"loss: {type: clip_ppo, reduction: none}\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "s.yaml")
			require.NoError(t, os.WriteFile(path, []byte("package: p\n"+src), 0o644))
			c, err := lossgen.Compile(path)
			require.NoError(t, err)
			mod, err := ptxgen.Emit(c.Plan, c.Backward, gogen.Meta{Package: "p", SpecFile: "s.yaml", GenVersion: 1})
			require.NoError(t, err)
			cs, err := cases.Build(c.Graph, "p", "")
			require.NoError(t, err)
			for i := range cs {
				require.NoError(t, cases.Want(c.Graph, &cs[i]))
				bad, err := check(t, string(mod.PTX), mod.Launch, cs[i])
				require.NoError(t, err, cs[i].Name)
				require.Zero(t, bad, cs[i].Name)
			}
		})
	}
}

// TestPartialMatchesWhole runs every example's launch tables whole and in part
// (ptxsim.Sampled) on its golden cases: every element the part computes must have the bits
// the whole simulation gives it (the taint tracking never lets a value that depends on
// skipped work through), the same elements on every case (which ones depends on the table,
// not on the values), and some element at all where a generated test simulates the table in
// part by default (where it is larger than lossgen.WholeBudget).
func TestPartialMatchesWhole(t *testing.T) {
	for _, ex := range examples(t) {
		t.Run(ex.dir, func(t *testing.T) {
			t.Parallel()
			var cover map[string]ptxsim.Coverage
			for _, c := range ex.cases[:2] {
				whole, err := ptxsim.Simulate(ex.ptx, ex.table, c.Inputs, ptxsim.Whole)
				require.NoError(t, err)
				part, err := ptxsim.Simulate(ex.ptx, ex.table, c.Inputs, ptxsim.Sampled)
				require.NoError(t, err)
				// A small table's part is all of it (every block is a first, middle or last one,
				// and its loops fit the iterations the part runs).
				require.LessOrEqual(t, part.Stats.Instructions, whole.Stats.Instructions)
				got := map[string]ptxsim.Coverage{}
				computed := 0
				for name, p := range part.Outputs {
					w := whole.Outputs[name]
					for k, i := range p.Index {
						require.Equal(t, math.Float64bits(w.Value[i]), math.Float64bits(p.Value[k]), "%s %s[%d]", c.Name, name, i)
					}
					got[name] = p.Coverage()
					computed += len(p.Index)
				}
				budget := ptxsim.Whole
				budget.Budget = lossgen.WholeBudget
				if _, err := ptxsim.Simulate(ex.ptx, ex.table, c.Inputs, budget); errors.Is(err, ptxsim.ErrBudget) {
					require.Positive(t, computed, c.Name)
				}
				if cover == nil {
					cover = got
				}
				require.Equal(t, cover, got, "the elements computed depend on the case")
			}
		})
	}
}
