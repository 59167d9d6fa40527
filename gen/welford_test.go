package gen_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/runtime/golden"
)

// The AVX2 kernels run a float32 barrier variance (ClipPPO's explained variance: var of
// value_target − state_value and of value_target over the batch) as float32 shifted sums of
// the last eight blocks a lane, about one of the lane's elements, merged into float64 Welford
// states by Chan's formula (asmgen welfordPartial, flushWelford). Values far from 0 (a mean
// of 1e4, std 0.5) and an outlier first element must give the interpreter's explained
// variance on every backend, the AVX2 kernel's own (no fallback to the Go kernel); an
// outlier whose squared deviation overflows float32 (1e20) sends the pass to the Go kernel.
// The block loop has no float64 widening and no division left.
func TestWelfordPartials(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	c, err := gen.Compile("../spec/examples/clip_ppo.yaml")
	require.NoError(t, err)
	files, err := gen.Emit(c, gen.Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	loop := regexp.MustCompile(`(?s)TEXT ·pass1AVX2.*?\nblocks_\d+:(.*?)\n\tJNZ +noflush`).FindStringSubmatch(string(files["kernels_amd64.s"]))
	require.NotNil(t, loop, "pass 1's block loop")
	require.Equal(t, 1, strings.Count(loop[1], "// var("+"diff) over [B]"), "one variance of diff")
	require.NotContains(t, loop[1], "VCVTPS2PD")
	require.NotContains(t, loop[1], "VDIVSD")

	// Each case as a function and as its Go source, for the probe inside the package.
	type wcase struct {
		vt       func(i int) (target, value float64)
		src      string
		fallback bool
	}
	cases := map[string]wcase{
		"ordinary": {func(i int) (float64, float64) { return math.Sin(float64(i)), math.Cos(float64(i)) / 2 },
			"return math.Sin(float64(i)), math.Cos(float64(i)) / 2", false},
		"mean_1e4": {func(i int) (float64, float64) { return 1e4 + math.Sin(float64(i))/2, 1e4 + math.Cos(float64(i))/4 },
			"return 1e4 + math.Sin(float64(i))/2, 1e4 + math.Cos(float64(i))/4", false},
		"first_outlier": {func(i int) (float64, float64) {
			return map[bool]float64{true: 1e3}[i == 0] + math.Sin(float64(i)), math.Cos(float64(i)) / 2
		}, "return map[bool]float64{true: 1e3}[i == 0] + math.Sin(float64(i)), math.Cos(float64(i)) / 2", false},
		// (1e20 − c)² overflows var(value_target)'s float32 partial; var(value_target) =
		// 1e40/4096 does not overflow, nor do the critic's loss (V = V_old = 9e19: its
		// difference is 1e19, squared 1e38) and var(y − V).
		"overflowing": {func(i int) (float64, float64) {
			return map[bool]float64{true: 1e20}[i == 77] + math.Sin(float64(i)), map[bool]float64{true: 9e19}[i == 77]
		}, "return map[bool]float64{true: 1e20}[i == 77] + math.Sin(float64(i)), map[bool]float64{true: 9e19}[i == 77]", true},
	}
	run := everyBackend(t, c)
	// Each variance within 9·9·2^−24 ≈ 5e-6 of its value, relative (welfordPartial); the
	// explained variance 1 − r, r ≈ 1 for first_outlier, within twice that, absolute.
	tol := golden.Tol{Abs: 1e-5, Rel: 2e-6}
	for name, wc := range cases {
		t.Run(name, func(t *testing.T) {
			in, want := perturb(c.Graph, func(key string, v []float64) {
				for i := range v {
					switch key {
					case "value_target":
						v[i], _ = wc.vt(i)
					case "value", "old_value": // state_value, old_state_value
						_, v[i] = wc.vt(i)
					}
				}
			})
			outs := run(in)
			ev := want.Want["explained_variance"].Float64s()
			require.False(t, math.IsNaN(ev[0]) || math.IsInf(ev[0], 0), "explained variance %v", ev[0])
			for _, b := range []string{"go", "default", "ptx"} {
				sameSpecials(t, b+" explained_variance", ev, outs[b]["explained_variance"].Float64s(), tol)
			}
		})
	}

	// Inside the package: which of these the AVX2 kernel computes itself.
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		return
	}
	m, err := runner.NewTestModule(c)
	require.NoError(t, err)
	defer m.Close()
	var probe strings.Builder
	fmt.Fprintf(&probe, welfordProbe, c.Spec.Package)
	for name, wc := range cases {
		fmt.Fprintf(&probe, "\tcheck(%q, %v, func(i int) (float64, float64) { %s })\n", name, wc.fallback, wc.src)
	}
	probe.WriteString("}\n")
	require.NoError(t, os.WriteFile(filepath.Join(m.Dir, "kernel", "welfordprobe_test.go"), []byte(probe.String()), 0o644))
	out, err := m.Test("^TestWelfordProbe$")
	require.NoError(t, err, out)
	require.Contains(t, out, "--- PASS: TestWelfordProbe")
}

// welfordProbe is the start of a test added to the ClipPPO package: check runs Forward on
// random inputs with value_target and the state values replaced, on the AVX2 kernels and the
// Go kernel, and asserts whether the AVX2 pass fell back, and that explained_variance agrees.
const welfordProbe = `package %s

import (
	"math"
	"testing"
)

func TestWelfordProbe(t *testing.T) {
	if Implementation() != "avx2" {
		t.Skip("the AVX2 kernels do not run here")
	}
	check := func(name string, fallback bool, vt func(i int) (float64, float64)) {
		in := *randomInputs(1)
		in.ValueTarget = make([]float32, len(in.ValueTarget))
		in.StateValue = make([]float32, len(in.ValueTarget))
		in.OldStateValue = make([]float32, len(in.ValueTarget))
		for i := range in.ValueTarget {
			y, v := vt(i)
			in.ValueTarget[i], in.StateValue[i], in.OldStateValue[i] = float32(y), float32(v), float32(v)
		}
		avx2Fallbacks.Store(0)
		out, ref := NewOutputs(), NewOutputs()
		if err := Forward(&in, out); err != nil {
			t.Fatal(err)
		}
		fell := avx2Fallbacks.Load() != 0
		if err := forward(impls[0], &in, ref); err != nil {
			t.Fatal(err)
		}
		got, want := float64(out.ExplainedVariance), float64(ref.ExplainedVariance)
		if fell != fallback || math.IsNaN(got) || math.Abs(got-want) > 1e-5+2e-6*math.Abs(want) {
			t.Errorf("%%s: AVX2 explained_variance %%v, Go %%v; fell back %%v", name, got, want, fell)
		}
	}
`
