package gen_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/asmgen"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/ptxgen"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/runtime/ptxsim"
)

// everyBackend builds c's pure-Go and default (AVX2 where the CPU has AVX2 and FMA) kernels
// and returns a function running them and the PTX, in lossgen's simulator, on the same
// inputs: outputs by backend ("go", "default", "ptx").
func everyBackend(t *testing.T, c *gen.Compiled) func(in map[string]golden.Array) map[string]map[string]golden.Array {
	return everyBackendOf(t, c, false)
}

// everyBackendOf is everyBackend, running ForwardBackward (outputs and gradients) when
// backward is set.
func everyBackendOf(t *testing.T, c *gen.Compiled, backward bool) func(in map[string]golden.Array) map[string]map[string]golden.Array {
	m, err := runner.NewModule(c)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	goBin, err := m.Build("purego")
	require.NoError(t, err)
	defBin, err := m.Build("")
	require.NoError(t, err)
	impl, err := m.Impl(defBin)
	require.NoError(t, err)
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		require.Equal(t, "avx2", impl, "the default build must run the AVX2 kernels on this CPU")
	}
	fb := c.Backward
	if !backward {
		fb = nil
	}
	mod, err := ptxgen.Emit(c.Plan, fb, gogen.Meta{Package: c.Spec.Package, GenVersion: runtime.GenVersion})
	require.NoError(t, err)
	run, launch := m.Run, mod.Launch
	if backward {
		run, launch = m.RunBackward, *mod.Backward
	}
	return func(in map[string]golden.Array) map[string]map[string]golden.Array {
		out := map[string]map[string]golden.Array{}
		var err error
		out["go"], err = run(goBin, in)
		require.NoError(t, err)
		out["default"], err = run(defBin, in)
		require.NoError(t, err)
		out["ptx"], _, err = ptxsim.RunTable(string(mod.PTX), launch, in)
		require.NoError(t, err)
		return out
	}
}

// agreeEverywhere asserts that the AVX2 (default build) and PTX outputs have NaN, +Inf and
// −Inf exactly where the Go kernel's have them, and finite values within tol of its ones.
func agreeEverywhere(t *testing.T, outs map[string]map[string]golden.Array, tol golden.Tol) {
	t.Helper()
	for name, want := range outs["go"] {
		for _, b := range []string{"default", "ptx"} {
			w, got := want.Float64s(), outs[b][name].Float64s()
			if d := golden.Compare(w, got, tol); d.Bad > 0 {
				t.Errorf("%s: %s differs from go at %d elements; first [%d]: %s %v, go %v", name, b, d.Bad, d.First, b, got[d.First], w[d.First])
			}
		}
	}
}

// countSpecial counts NaN and infinite elements.
func countSpecial(v []float64) (nan, inf int) {
	for _, x := range v {
		switch {
		case math.IsNaN(x):
			nan++
		case math.IsInf(x, 0):
			inf++
		}
	}
	return nan, inf
}

// cancelling edits a case of a [N, T] GAE batch from element from on: in each group of 8
// steps t0..t0+7 (t0 = 0 mod 8) reward −3e38 and done at t0, 3e38 at t0+6 and t0+7, 0
// elsewhere, values 0. Step by step A[t0+7] = 3e38 − 0.9405·3e38 and A[t0+6] ≈ 3.17e38 stay
// finite; composing t0+6 with t0+7 before adding the carry A[t0+8] = −3e38 overflows.
func cancelling(T, from int) func(key string, v []float64) {
	return func(key string, v []float64) {
		for i := from; i < len(v); i++ {
			tt := i % T
			switch key {
			case "reward":
				v[i] = map[int]float64{0: -3e38, 6: 3e38, 7: 3e38}[tt%8]
			case "done":
				v[i] = float64(map[bool]int{true: 1}[tt%8 == 0])
			case "terminated", "value", "next_value":
				v[i] = 0
			}
		}
	}
}

// TestOverflowSameOnEveryBackend: where float32 (or float64) arithmetic overflows, every
// backend puts NaN and ±Inf at the same elements of every output (README, "Overflow is the
// same on every backend").
// The recursion of GAE is where the backends' orders differ most: the Go and PTX kernels walk
// it step by step, y = x + c·y', the AVX2 kernel composes 8 steps at once, whose partial sums
// overflow elsewhere; its guard sends such a pass to the Go kernel. Likewise a float32 partial
// sum of the AVX2 reductions that overflows where the Go kernel's float64 sum does not.
func TestOverflowSameOnEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	tol := golden.Tol{Abs: 1e-6, Rel: 5e-5, Norm: 1e-5}
	const T = 421
	c, err := gen.Compile("../spec/examples/clip_ppo_gae.yaml")
	require.NoError(t, err)
	run := everyBackend(t, c)
	g := c.Graph

	t.Run("reward_3e38", func(t *testing.T) {
		// Issue 8 item 12. δ = 3e38 everywhere: A[T−1] = 3e38 and A[T−2] = 3e38 + 0.9405·3e38
		// overflows to +Inf; the first done before it multiplies that +Inf by 0, so from there
		// back every step is NaN (TorchRL's float32 loop does the same). The AVX2 kernel's
		// composed steps met the done before the +Inf and said +Inf or a finite value there.
		var done []float64
		in, _ := perturb(g, func(key string, v []float64) {
			switch key {
			case "reward":
				for i := range v {
					v[i] = 3e38
				}
			case "done":
				done = v
			}
		})
		outs := run(in)
		adv := outs["go"]["advantage"].Float64s()
		for n := range 64 {
			seenInf := false // walking back from T−1: has A been +Inf yet?
			for tt := T - 1; tt >= 0; tt-- {
				a := adv[n*T+tt]
				switch {
				case tt == T-1:
					require.Equal(t, float32(3e38), float32(a), "A[%d, T−1]", n)
				case seenInf && done[n*T+tt] != 0:
					require.True(t, math.IsNaN(a), "A[%d,%d] after +Inf at a done: 0·Inf", n, tt)
				}
				seenInf = seenInf || math.IsInf(a, 1)
			}
		}
		nan, inf := countSpecial(adv)
		require.Positive(t, nan)
		require.Positive(t, inf)
		agreeEverywhere(t, outs, tol)
	})

	t.Run("cancelling_rewards", func(t *testing.T) {
		// Finite step by step, +Inf when 8 steps are composed (see cancelling).
		in, _ := perturb(g, cancelling(T, 0))
		outs := run(in)
		adv := outs["go"]["advantage"].Float64s()
		for n := range 64 {
			for tt := 0; tt+8 < T; tt += 8 {
				require.InEpsilon(t, 3.1678e38, adv[n*T+tt+6], 1e-4, "A[%d,%d]", n, tt+6)
			}
		}
		nan, inf := countSpecial(adv)
		require.Zero(t, nan+inf)
		agreeEverywhere(t, outs, tol)
	})

	t.Run("entropy_3e38", func(t *testing.T) {
		// mean(entropy) = 3e38: the Go kernel's float64 sum holds it, an AVX2 float32 partial
		// of 8 blocks would overflow.
		in, _ := perturb(g, func(key string, v []float64) {
			if key == "entropy" {
				for i := range v {
					v[i] = 3e38
				}
			}
		})
		outs := run(in)
		require.Equal(t, float32(3e38), float32(outs["go"]["entropy"].Float64s()[0]))
		agreeEverywhere(t, outs, tol)
	})

	t.Run("chunked", func(t *testing.T) {
		// At T = 1100 the scan pass runs as 8 chunks of 8 rows; cancelling rewards in the
		// last chunk only must still send the whole pass to the Go kernel.
		c, err := gen.CompileDims("../spec/examples/clip_ppo_gae.yaml", map[string]int{"T": 1100})
		require.NoError(t, err)
		run := everyBackend(t, c)
		in, _ := perturb(c.Graph, cancelling(1100, 60*1100))
		outs := run(in)
		require.InEpsilon(t, 3.1678e38, outs["go"]["advantage"].Float64s()[63*1100+6], 1e-4)
		agreeEverywhere(t, outs, tol)
	})

	t.Run("vtrace_c_above_1", func(t *testing.T) {
		// V-trace with c̄ = 4 and log-ratios of 2: trace coefficients c = 0.99·4 = 3.96, which
		// the guard must test at run time (they are not ≤ 1 by construction). With rewards X
		// at t = 0..7 and a carry of −X/c from a done at t = 8 the recursion stays finite step
		// by step (A[7] ≈ 0, A[0] ≈ X·(c⁷−1)/(c−1) ≈ 1.7e38), while composing t = 0..7 first
		// gives X·(c⁸−1)/(c−1), past float32's largest value. X = 3.3e34 is small enough for
		// the test of |x| alone to pass.
		path := filepath.Join(t.TempDir(), "vtrace.yaml")
		require.NoError(t, os.WriteFile(path, []byte("package: vt\ndims: {N: 8, T: 16}\nbatch: [N, T]\n"+
			"estimator: {type: vtrace, gamma: 0.99, rho_thresh: 1.0, c_thresh: 4.0}\n"), 0o644))
		c, err := gen.Compile(path)
		require.NoError(t, err)
		run := everyBackend(t, c)
		const X = 3.3e34
		in, _ := perturb(c.Graph, func(key string, v []float64) {
			for i := range v {
				tt := i % 16
				switch key {
				case "log_prob":
					v[i] = 2
				case "sample_log_prob", "terminated", "value", "next_value":
					v[i] = 0
				case "done":
					v[i] = float64(map[bool]int{true: 1}[tt == 8])
				case "reward":
					v[i] = map[bool]float64{true: X}[tt < 8]
					if tt == 8 {
						v[i] = -X / 3.96
					}
				}
			}
		})
		outs := run(in)
		vt := outs["go"]["value_target"].Float64s()
		nan, inf := countSpecial(vt)
		require.Zero(t, nan+inf)
		require.InEpsilon(t, 1.67e38, vt[0], 0.02)
		agreeEverywhere(t, outs, tol)
	})

	t.Run("float64_reward_1.5e308", func(t *testing.T) {
		// The same recursion in float64 (the GAE example: average_gae, so every advantage
		// is NaN; the value targets show the recursion).
		c, err := gen.Compile("../spec/examples/gae.yaml")
		require.NoError(t, err)
		run := everyBackend(t, c)
		in, _ := perturb(c.Graph, func(key string, v []float64) {
			if key == "reward" {
				for i := range v {
					v[i] = 1.5e308
				}
			}
		})
		outs := run(in)
		nan, inf := countSpecial(outs["go"]["value_target"].Float64s())
		require.Positive(t, nan)
		require.Positive(t, inf)
		agreeEverywhere(t, outs, golden.Tol{Abs: 1e-12, Rel: 1e-9, Norm: 1e-10})
	})
}

// guardProbe is a test added to a generated package: random inputs (three seeds) must never
// make an AVX2 pass fall back to the Go kernel, and inputs of the dtype's largest value must.
const guardProbe = `package %s

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/lossgen/lossgen/runtime"
)

// probeForward is Forward, where a *runtime.DataError (random inputs may break a precondition
// TorchRL checks) still leaves every output written.
func probeForward(t *testing.T, in *Inputs, out *Outputs) {
	var de *runtime.DataError
	if err := Forward(in, out); err != nil && !errors.As(err, &de) {
		t.Fatal(err)
	}
}

// hasNaN reports whether an output holds a NaN: random inputs outside a distribution's
// domain (a negative scale) give NaN, which a float32 partial-sum guard may send to Go.
func hasNaN(out *Outputs) bool {
	for _, name := range OutputNames {
		v, _ := out.Get(name)
		for _, x := range v {
			if x != x {
				return true
			}
		}
	}
	return false
}

// special classifies x as NaN, +inf, −inf or finite.
func special[F float32 | float64](x F) int {
	switch {
	case x != x:
		return 3
	case math.IsInf(float64(x), 1):
		return 1
	case math.IsInf(float64(x), -1):
		return 2
	}
	return 0
}

func TestGuardProbe(t *testing.T) {
	if Implementation() != "avx2" {
		t.Skip("the AVX2 kernels do not run here")
	}
	out := NewOutputs()
	nan := false
	for seed := uint64(1); seed <= 3; seed++ {
		probeForward(t, randomInputs(seed), out)
		nan = nan || hasNaN(out)
	}
	if n := avx2Fallbacks.Load(); n != 0 && !nan {
		t.Fatalf("random inputs: %%d AVX2 passes fell back to Go", n)
	}
	avx2Fallbacks.Store(0)
	in := randomInputs(1)
	v := reflect.ValueOf(in).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || !f.CanSet() {
			continue
		}
		for j := range f.Len() {
			switch f.Type().Elem().Kind() {
			case reflect.Float32:
				f.Index(j).SetFloat(math.MaxFloat32)
			case reflect.Float64:
				f.Index(j).SetFloat(math.MaxFloat64)
			}
		}
	}
	// The largest finite values overflow: NaN and ±inf land where the Go kernel puts them.
	probeForward(t, in, out)
	ref := NewOutputs()
	var de *runtime.DataError
	if err := forward(impls[0], in, ref); err != nil && !errors.As(err, &de) {
		t.Fatal(err)
	}
	for _, name := range OutputNames {
		a, _ := ref.Get(name)
		b, _ := out.Get(name)
		for i := range a {
			if special(a[i]) != special(b[i]) {
				t.Fatalf("largest finite inputs: %%s[%%d] = %%v on AVX2, %%v in Go", name, i, b[i], a[i])
			}
		}
	}
}
`

// TestGuardsHoldOnOrdinaryData: the overflow guards cost only their tests on ordinary data.
// A guard that tripped on it would still give right answers (the Go kernel's), so only this
// test notices: the example packages with a guard run random inputs without a fallback (unless
// the inputs leave a distribution's domain and give NaN), and on inputs of the largest finite
// value put NaN and ±inf exactly where the Go kernel does.
//
// The default run probes one package of each kind of guard: a float32 GAE scan with the
// loss's float32 reductions (clip_ppo_gae), a float64 scan (gae), V-trace's trace coefficients
// tested at run time (vtrace_ppo) and a policy distribution that can leave its domain
// (ppo_tanh_normal); LOSSGEN_FULL=1 probes every guarded example.
func TestGuardsHoldOnOrdinaryData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("no AVX2 and FMA")
	}
	specs, err := filepath.Glob("../spec/examples/*.yaml")
	require.NoError(t, err)
	guarded := 0
	for _, path := range specs {
		c, err := gen.Compile(path)
		require.NoError(t, err)
		files, err := gen.Emit(c, gen.Options{OutDir: t.TempDir()})
		require.NoError(t, err)
		if !strings.Contains(string(files[asmgen.DispatchFile]), "avx2Fallbacks.Add") {
			continue
		}
		guarded++
		t.Run(filepath.Base(path), func(t *testing.T) {
			if !guardProbeDefault[filepath.Base(path)] {
				sweepOnly(t)
			}
			t.Parallel()
			m, err := runner.NewTestModule(c)
			require.NoError(t, err)
			defer m.Close()
			require.NoError(t, os.WriteFile(filepath.Join(m.Dir, "kernel", "guardprobe_test.go"), fmt.Appendf(nil, guardProbe, c.Spec.Package), 0o644))
			out, err := m.Test("^TestGuardProbe$")
			require.NoError(t, err)
			require.Contains(t, out, "--- PASS: TestGuardProbe")
		})
	}
	require.GreaterOrEqual(t, guarded, 4) // clip_ppo, clip_ppo_gae, gae, td_lambda, vtrace_ppo
}

// guardProbeDefault are the examples TestGuardsHoldOnOrdinaryData probes by default.
var guardProbeDefault = map[string]bool{"clip_ppo_gae.yaml": true, "gae.yaml": true, "vtrace_ppo.yaml": true, "ppo_tanh_normal.yaml": true}

// TestScanRowsIndependent puts NaN, ±inf and a large finite value in one row of a GAE: every
// other row keeps its bits on every backend. The AVX2 scan's guard lets a non-finite input
// through (it reaches the same elements in the composed order as in the recursion); it used
// to reject the pass, whose rerun in Go rounds the composed sums differently, so a NaN in one
// trajectory moved every other trajectory by an ulp.
func TestScanRowsIndependent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	const N, T = 4, 37
	c := compileSrc(t, "package: p\ndtype: float32\ndims: {N: 4, T: 37}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.9}\n")
	in := map[string]golden.Array{}
	for _, inp := range c.Reference().Inputs {
		if inp.Kind == ir.Bool {
			d := make([]bool, N*T)
			for i := range d {
				d[i] = i%7 == 3
			}
			in[inp.Name] = golden.Array{Shape: []int{N, T}, Data: d}
			continue
		}
		d := make([]float32, N*T)
		for i := range d {
			d[i] = 0.1 * float32((i*(len(inp.Name)+5))%11)
		}
		in[inp.Name] = golden.Array{Shape: []int{N, T}, Data: d}
	}
	ins := []map[string]golden.Array{in}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e30} {
		dirty := map[string]golden.Array{}
		for k, a := range in {
			dirty[k] = a
		}
		r := append([]float32(nil), in["next.reward"].Data.([]float32)...)
		r[1*T+20] = float32(v)
		dirty["next.reward"] = golden.Array{Shape: []int{N, T}, Data: r}
		ins = append(ins, dirty)
	}
	outs, _ := runAll(t, c, ins)
	for k := 1; k < len(ins); k++ {
		for backend, out := range outs[k] {
			for _, o := range []string{"advantage", "value_target"} {
				want, got := outs[0][backend][o].Float64s(), out[o].Float64s()
				for i := range want {
					if i/T == 1 {
						continue
					}
					require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "%s, reward %v in row 1: %s[%d] %v, was %v", backend, ins[k]["next.reward"].Data.([]float32)[T+20], o, i, got[i], want[i])
				}
			}
		}
	}
}
