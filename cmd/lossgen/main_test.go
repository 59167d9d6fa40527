package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	goldenw "github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/spec"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script/*.txtar")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"lossgen": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI scenarios in testdata/script: generation, diagnostics, exit
// codes, golden files and eval on the shipped real data.
func TestScripts(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	goenv := map[string]string{}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOROOT"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		goenv[k] = strings.TrimSpace(string(out))
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("LOSSGEN_ROOT", root)
			e.Setenv("ROOT", root)
			for k, v := range goenv {
				e.Setenv(k, v)
			}
			e.Setenv("GOPROXY", "off")
			e.Setenv("GOFLAGS", "-mod=mod")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mknpz": mknpz,
		},
	})
}

// mknpz writes an .npz for eval's error paths: mknpz FILE NAME:DTYPE:D0xD1[:VALUE]...
// (shape "" is a scalar; the value fills every element, 0 by default).
func mknpz(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: mknpz FILE NAME:DTYPE:SHAPE[:VALUE]...")
	}
	arrays := map[string]golden.Array{}
	for _, spec := range args[1:] {
		parts := strings.Split(spec, ":")
		if len(parts) < 3 {
			ts.Fatalf("bad array spec %q", spec)
		}
		shape := []int{}
		n := 1
		if parts[2] != "" {
			for _, d := range strings.Split(parts[2], "x") {
				k, err := strconv.Atoi(d)
				ts.Check(err)
				shape = append(shape, k)
				n *= k
			}
		}
		v := 0.0
		if len(parts) > 3 {
			var err error
			v, err = strconv.ParseFloat(parts[3], 64)
			ts.Check(err)
		}
		var data any
		switch parts[1] {
		case "float32":
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(v)
			}
			data = x
		case "float64":
			x := make([]float64, n)
			for i := range x {
				x[i] = v
			}
			data = x
		case "bool":
			x := make([]bool, n)
			for i := range x {
				x[i] = v != 0
			}
			data = x
		case "int64":
			x := make([]int64, n)
			for i := range x {
				x[i] = int64(v)
			}
			data = x
		case "int32": // NumPy's default int on Windows: written as '<i4'
			x := make([]int32, n)
			for i := range x {
				x[i] = int32(v)
			}
			data = x
		case "uint8": // written as '|u1'
			x := make([]uint8, n)
			for i := range x {
				x[i] = uint8(v)
			}
			data = x
		default:
			ts.Fatalf("unknown dtype %q", parts[1])
		}
		arrays[parts[0]] = golden.Array{Shape: shape, Data: data}
	}
	err := goldenw.WriteNPZ(ts.MkAbs(args[0]), arrays)
	if neg != (err != nil) {
		ts.Fatalf("mknpz: %v", fmt.Sprint(err))
	}
}

// TestExitStatus pins the exit statuses the README states: 0 success, 1 failure, 2 usage.
func TestExitStatus(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(spec, []byte("package: p\ndims: {B: 8}\nbatch: [B]\nloss: {type: clip_ppo}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("package: p\ndims: {B: 0}\nbatch: [B]\nloss: {type: clip_ppo}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"check", spec}, 0},
		{[]string{"check", bad}, 1},
		{[]string{}, 2},
		{[]string{"frobnicate"}, 2},
		{[]string{"check", "-nope", spec}, 2},
		{[]string{"golden", "-update", "-dir", "", spec}, 2},
		{[]string{"generate", spec}, 2},
		{[]string{"eval", "-spec", spec, "-in", spec, "-backend", "cuda"}, 2},
		{[]string{"eval", "-spec", spec, "-in", spec, "-out", spec}, 2},
		{[]string{"eval", "-spec", spec, "-in", spec, "-out", dir}, 2},
		{[]string{"eval", "-spec", spec, "-in", spec, "-out", filepath.Join(dir, "no", "x.npz")}, 2},
		{[]string{"generate", "-h"}, 0},
		{[]string{"version", "extra"}, 2},
		{[]string{"bench", "-sizes", "M=abc", spec}, 2},
		{[]string{"bench", "-count", "0", spec}, 2},
		{[]string{"bench", "-backend", "cuda", spec}, 2},
		{[]string{"bench", "-h"}, 0},
		{[]string{"version", "-h"}, 0},
		{[]string{"help", "generate"}, 0},
		{[]string{"init", "nosuchloss"}, 2}, // a mistyped name is bad usage, as a bad -package is
		{[]string{"init", "clip_ppo", "-transform", "foo"}, 2},
		{[]string{"init", "clip_ppo", "-estimator", "foo"}, 2},
	} {
		var out, errb strings.Builder
		if got := run(tc.args, &out, &errb); got != tc.want {
			t.Errorf("lossgen %s: exit %d, want %d (stderr %q)", strings.Join(tc.args, " "), got, tc.want, errb.String())
		}
	}
}

// An internal panic never shows as a Go panic: one inside the pipeline is reported at the
// spec (FILE:1:1: internal error: ...), any other is caught by run itself; both exit 1.
func TestInternalErrors(t *testing.T) {
	defer func(g func(string, gen.Options) (*gen.Compiled, map[string][]byte, error)) { generate = g }(generate)
	dir := t.TempDir()

	// A hand-made Compiled without a plan makes gen.Emit's backends dereference nil.
	generate = func(path string, opts gen.Options) (*gen.Compiled, map[string][]byte, error) {
		files, err := gen.Emit(&gen.Compiled{Spec: &spec.Spec{File: path, Package: "p"}}, opts)
		return nil, files, err
	}
	var out, errb strings.Builder
	var code int
	require.NotPanics(t, func() { code = run([]string{"generate", "-o", dir, "hand.yaml"}, &out, &errb) })
	require.Equal(t, 1, code)
	require.Equal(t, "hand.yaml:1:1: internal error: runtime error: invalid memory address or nil pointer dereference (please report)\n", errb.String())
	require.Empty(t, out.String())

	// A panic outside the pipeline's entries: run's last resort.
	generate = func(string, gen.Options) (*gen.Compiled, map[string][]byte, error) { panic("boom") }
	out.Reset()
	errb.Reset()
	require.NotPanics(t, func() { code = run([]string{"check", "x.yaml"}, &out, &errb) })
	require.Equal(t, 1, code)
	require.Equal(t, "lossgen: internal error: boom (please report)\n", errb.String())
	require.Empty(t, out.String())
}

// The version names the generator version, the module version and the VCS revision
// lossgen was built from, with "(devel)" and "unknown" for what the build does not record.
func TestVersionText(t *testing.T) {
	const mod = "github.com/lossgen/lossgen"
	main := &debug.BuildInfo{Main: debug.Module{Path: mod, Version: "v0.3.1"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}
	require.Equal(t, "lossgen gen v1\nmodule github.com/lossgen/lossgen v0.3.1\nrevision 0123456789abcdef (modified)\n", versionText(main, true))
	main.Settings[2].Value = "false"
	require.Equal(t, "lossgen gen v1\nmodule github.com/lossgen/lossgen v0.3.1\nrevision 0123456789abcdef\n", versionText(main, true))

	// Built as a dependency (go tool lossgen): its version from the module list; the VCS
	// settings are the main module's, not lossgen's.
	dep := &debug.BuildInfo{Main: debug.Module{Path: "example.com/user", Version: "(devel)"},
		Deps:     []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.30.0"}, {Path: mod, Version: "v0.4.0"}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "ffff"}}}
	require.Equal(t, "lossgen gen v1\nmodule github.com/lossgen/lossgen v0.4.0\nrevision unknown\n", versionText(dep, true))
	dep.Deps[1].Replace = &debug.Module{Path: "../lossgen"}
	require.Equal(t, "lossgen gen v1\nmodule github.com/lossgen/lossgen v0.4.0 => ../lossgen\nrevision unknown\n", versionText(dep, true))

	// Nothing recorded.
	require.Equal(t, "lossgen gen v1\nmodule github.com/lossgen/lossgen (devel)\nrevision unknown\n", versionText(nil, false))
	require.Equal(t, "lossgen gen v1\nmodule github.com/lossgen/lossgen (devel)\nrevision unknown\n", versionText(&debug.BuildInfo{Main: debug.Module{Path: mod}}, true))
}

// TestGoldenDiffLeadsWithSummary: after a change of γ, lossgen golden's first lines are one
// per output that differs, then the command that rewrites the cases; the details follow.
func TestGoldenDiffLeadsWithSummary(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../spec/examples/gae.yaml")
	require.NoError(t, err)
	specPath, changed := filepath.Join(dir, "gae.yaml"), filepath.Join(dir, "changed.yaml")
	require.NoError(t, os.WriteFile(specPath, src, 0o644))
	require.NoError(t, os.WriteFile(changed, []byte(strings.Replace(string(src), "gamma: 0.99", "gamma: 0.98", 1)), 0o644))
	data, g := filepath.Join(dir, "data"), filepath.Join(dir, "g")
	require.NoError(t, os.Mkdir(data, 0o755))
	var out, errb strings.Builder
	defer func(n int) { slowGolden = n }(slowGolden)
	slowGolden = 0 // every batch is slow: the steps are reported
	require.Equal(t, 0, run([]string{"golden", "-update", "-dir", g, "-data", data, specPath}, &out, &errb), errb.String())
	require.Equal(t, "lossgen: "+specPath+": computing golden case random (1 of 3) with the interpreter...\n"+
		"lossgen: "+specPath+": computing golden case flags (2 of 3) with the interpreter...\n"+
		"lossgen: "+specPath+": computing golden case extreme (3 of 3) with the interpreter...\n", errb.String())
	slowGolden = 1 << 30

	out.Reset()
	errb.Reset()
	require.Equal(t, 1, run([]string{"golden", "-dir", g, "-data", data, changed}, &out, &errb))
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	pkg := filepath.Join(g, "gae")
	// gae.yaml's outputs: advantage and value_target, each different in all 3 seeded cases.
	require.Regexp(t, `^`+regexp.QuoteMeta(pkg)+`: output advantage: differs in 3 cases \(extreme, flags, random\): worst relative difference [0-9.e+-]+, [1-9][0-9]* values? out of tolerance$`, lines[0])
	require.Regexp(t, `^`+regexp.QuoteMeta(pkg)+`: output value_target: differs in 3 cases \(extreme, flags, random\): `, lines[1])
	require.Equal(t, "if the change is intended, rewrite the cases: lossgen golden -update -dir "+g+" -data "+data+" "+changed, lines[2])
	require.Equal(t, "details:", lines[3])
	require.True(t, strings.HasPrefix(lines[4], "  "+pkg+": case extreme: output advantage"), lines[4])
	require.Equal(t, "lossgen: golden cases differ from the interpreter", lines[len(lines)-1])
}

// generate -v lists what it changed: every file the first time, none when run again on
// the same spec (only a count of the unchanged), and the one file a changed γ rewrites.
func TestGenerateVerboseListsChanges(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../spec/examples/gae.yaml")
	require.NoError(t, err)
	specPath, out := filepath.Join(dir, "gae.yaml"), filepath.Join(dir, "pkg")
	require.NoError(t, os.WriteFile(specPath, src, 0o644))
	gen := func() []string {
		var stdout, stderr strings.Builder
		require.Equal(t, 0, run([]string{"generate", "-v", "-o", out, specPath}, &stdout, &stderr), stderr.String())
		return strings.Split(strings.TrimSpace(stdout.String()), "\n")
	}
	first := gen()
	require.Greater(t, len(first), 3)
	for _, line := range first {
		require.True(t, strings.HasPrefix(line, out+string(filepath.Separator)), line)
	}
	require.Equal(t, []string{fmt.Sprintf("%d file(s) unchanged", len(first))}, gen())

	require.NoError(t, os.WriteFile(specPath, []byte(strings.Replace(string(src), "gamma: 0.99", "gamma: 0.98", 1)), 0o644))
	again := gen()
	require.Less(t, len(again), len(first)+1)
	require.Contains(t, again, filepath.Join(out, "kernels_amd64.s"), "γ is a constant of the kernels")
	require.Equal(t, fmt.Sprintf("%d file(s) unchanged", len(first)-len(again)+1), again[len(again)-1])
}

// Two specs of one module with the same package name share a golden directory: golden
// -update warns that it replaces another spec's cases, and golden and check on the first
// spec then say the cases are another spec's (not a value difference, nor "ok"); a write
// cut short in the directory is reported by both.
func TestGoldenCasesOfAnotherSpec(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	require.NoError(t, os.WriteFile(a, []byte("package: p\ndims: {B: 16}\nbatch: [B]\nloss: {type: clip_ppo}\n"), 0o644))
	require.NoError(t, os.WriteFile(b, []byte("package: p\ndims: {B: 8}\nbatch: [B]\nloss: {type: clip_ppo}\n"), 0o644))
	data, g := filepath.Join(dir, "data"), filepath.Join(dir, "g")
	require.NoError(t, os.Mkdir(data, 0o755))
	var out, errb strings.Builder
	require.Equal(t, 0, run([]string{"golden", "-update", "-dir", g, "-data", data, a}, &out, &errb), errb.String())
	require.NotContains(t, errb.String(), "warning")
	errb.Reset()
	require.Equal(t, 0, run([]string{"golden", "-update", "-dir", g, "-data", data, b}, &out, &errb), errb.String())
	require.Contains(t, errb.String(), `lossgen: warning: `+filepath.Join(g, "p")+`: case extreme's input "advantage" has 16 elements, the spec's 8: the cases are another spec's; they are replaced`)
	errb.Reset()
	require.Equal(t, 1, run([]string{"golden", "-dir", g, "-data", data, a}, &out, &errb))
	require.Contains(t, errb.String(), a+": "+filepath.Join(g, "p")+`: case extreme's input "advantage" has 8 elements, the spec's 16: the cases are another spec's`)
	errb.Reset()
	require.Equal(t, 1, run([]string{"check", "-golden", filepath.Join(g, "p"), a}, &out, &errb))
	require.Contains(t, errb.String(), "the cases are another spec's; lossgen golden -update -dir "+g+" "+a+" writes this spec's cases")
	require.Equal(t, 0, run([]string{"check", "-golden", filepath.Join(g, "p"), b}, &out, &errb), errb.String())
	// A user's own case may hold arrays the spec does not read: it is not another spec's.
	mine := map[string]golden.Array{"advantage": {Shape: []int{8}, Data: make([]float32, 8)}, "episode_id": {Shape: []int{8}, Data: make([]float32, 8)}}
	require.NoError(t, goldenw.WriteNPZ(filepath.Join(g, "p", "mine.in.npz"), mine))
	require.NoError(t, goldenw.WriteNPZ(filepath.Join(g, "p", "mine.want.npz"), mine))
	require.Equal(t, 0, run([]string{"check", "-golden", filepath.Join(g, "p"), b}, &out, &errb), errb.String())
	require.NoError(t, os.Mkdir(filepath.Join(g, "p", ".lossgen-txn"), 0o755))
	errb.Reset()
	require.Equal(t, 1, run([]string{"check", "-golden", filepath.Join(g, "p"), b}, &out, &errb))
	require.Contains(t, errb.String(), "a write was cut short (.lossgen-txn)")
}

// fullWriter is a standard output on a full disk.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// Output lost to a full disk fails the command: explain, check, version and help exited 0
// with nothing written (the newcomer review; init, reference and schema already failed).
func TestLostOutputFails(t *testing.T) {
	for _, args := range [][]string{{"explain", "../../spec/examples/gae.yaml"}, {"check", "../../spec/examples/gae.yaml"}, {"version"}, {"help"}} {
		var stderr bytes.Buffer
		require.Equal(t, 1, run(args, fullWriter{}, &stderr), "%v", args)
		require.Contains(t, stderr.String(), "writing the output: no space left on device", "%v", args)
	}
}
