package main

import (
	"archive/zip"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/ir"
	goldenw "github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/runtime/golden"
)

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// bombNPZ writes, to a new .npz in dir, the arrays plus one float64 entry per bomb name
// whose 200 MB of zeros deflate to a few hundred KiB: it declares (honestly) shape
// [25000000] in its .npy header and its inflated size in the zip directory.
func bombNPZ(t *testing.T, dir string, arrays map[string]golden.Array, bombs ...string) string {
	t.Helper()
	small := filepath.Join(dir, "small.npz")
	require.NoError(t, goldenw.WriteNPZ(small, arrays))
	p := filepath.Join(dir, "bomb.npz")
	f, err := os.Create(p)
	require.NoError(t, err)
	z := zip.NewWriter(f)
	src, err := zip.OpenReader(small)
	require.NoError(t, err)
	for _, e := range src.File {
		require.NoError(t, z.Copy(e))
	}
	src.Close()
	const n = 25_000_000
	for _, b := range bombs {
		w, err := z.CreateHeader(&zip.FileHeader{Name: b + ".npy", Method: zip.Deflate})
		require.NoError(t, err)
		h := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }", n)
		for (10+len(h)+1)%64 != 0 {
			h += " "
		}
		h += "\n"
		_, err = w.Write(append([]byte("\x93NUMPY\x01\x00"), append([]byte{byte(len(h)), byte(len(h) >> 8)}, h...)...))
		require.NoError(t, err)
		_, err = io.CopyN(w, zeros{}, 8*n)
		require.NoError(t, err)
	}
	require.NoError(t, z.Close())
	require.NoError(t, f.Close())
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Less(t, fi.Size(), int64(4<<20), "the bomb is small on disk")
	return p
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// eval reads only the arrays the spec uses, each bounded by the spec's shape: a 200 MB
// (inflated) array of the wrong shape is an error found from its header, and one the spec
// does not read is listed, never inflated. Memory stays far below the inflated size.
func TestEvalZipBomb(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "gae.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("package: g\ndtype: float64\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.9, lmbda: 0.5}\n"), 0o644))
	f64 := func() golden.Array { return golden.Array{Shape: []int{2, 3}, Data: make([]float64, 6)} }
	flags := func() golden.Array { return golden.Array{Shape: []int{2, 3}, Data: make([]bool, 6)} }
	inputs := map[string]golden.Array{"next.done": flags(), "next.terminated": flags(), "state_value": f64(), "next.state_value": f64()}

	// The bomb is an input of the spec, at the wrong shape.
	bomb := bombNPZ(t, t.TempDir(), inputs, "next.reward")
	var out, errb strings.Builder
	code := 0
	n := allocated(func() { code = run([]string{"eval", "-backend", "ref", "-spec", spec, "-in", bomb}, &out, &errb) })
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), `array "next.reward" has shape [25000000], want [2 3] [N T]`)
	require.Less(t, n, uint64(20<<20), "eval allocated %d bytes for a 200 MB entry it rejects", n)

	// The bomb is not read by the spec.
	inputs["next.reward"] = f64()
	bomb = bombNPZ(t, t.TempDir(), inputs, "junk", "more.junk")
	out.Reset()
	errb.Reset()
	n = allocated(func() { code = run([]string{"eval", "-backend", "ref", "-spec", spec, "-in", bomb}, &out, &errb) })
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, errb.String(), "also holds junk, more.junk, which this spec does not read\n")
	require.Contains(t, out.String(), "advantage")
	require.Less(t, n, uint64(20<<20), "eval allocated %d bytes for 400 MB of entries it does not read", n)
}

// compiledGAE compiles a float32 GAE spec on [2, 3] and returns it with the interpreter's
// outputs on fixed inputs.
func compiledGAE(t *testing.T) (*gen.Compiled, map[string]golden.Array) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gae.yaml")
	require.NoError(t, os.WriteFile(p, []byte("package: g\ndtype: float32\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.9, lmbda: 0.5}\n"), 0o644))
	c, err := gen.Compile(p)
	require.NoError(t, err)
	f := func(v ...float32) golden.Array { return golden.Array{Shape: []int{2, 3}, Data: v} }
	ref := golden.Case{Name: "t", Inputs: map[string]golden.Array{
		"next.reward": f(1, 2, 3, 4, 5, 6), "state_value": f(0, 1, 0, 1, 0, 1), "next.state_value": f(1, 1, 1, 1, 1, 1),
		"next.done":       {Shape: []int{2, 3}, Data: []bool{false, false, true, false, false, false}},
		"next.terminated": {Shape: []int{2, 3}, Data: []bool{false, false, true, false, false, false}},
	}}
	require.NoError(t, cases.Want(c.Graph, &ref))
	return c, ref.Want
}

// perturbed is a copy of outs with f applied to output name's values.
func perturbed(outs map[string]golden.Array, name string, f func([]float64)) map[string]golden.Array {
	m := map[string]golden.Array{}
	for k, a := range outs {
		x := a.Float64s()
		if k == name {
			f(x)
		}
		m[k] = golden.Array{Shape: a.Shape, Data: x}
	}
	return m
}

// eval judges every output of every backend against the interpreter under the package
// test's tolerances: non-finite mismatches count, each output's count of bad elements is a
// column, one verdict line ends the table, and any bad output fails eval.
func TestEvalVerdict(t *testing.T) {
	c, want := compiledGAE(t)
	tol := gen.Tolerance(ir.F32, false)
	results := map[string]map[string]golden.Array{
		"ref":  want,
		"go":   perturbed(want, "advantage", func(x []float64) { x[1] += 0.5 * tol.Abs }), // within tolerance
		"avx2": perturbed(want, "advantage", func(x []float64) { x[1], x[4] = math.NaN(), math.Inf(1) }),
		"ptx":  perturbed(want, "value_target", func(x []float64) { x[0] += 1e-3 }),
	}
	var out strings.Builder
	verdict, err := compareBackends(&out, c.Graph, nil, results, []string{"ref", "go", "avx2", "ptx"})
	require.EqualError(t, err, "eval: 2 outputs out of the package test's tolerances")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Regexp(t, `^output +shape +backend +value +max abs diff +max rel diff +out of tol$`, lines[0])
	require.Regexp(t, `^advantage +\[2 3\] +ref +mean \S+ in \S+ \S+ *$`, lines[1])
	require.Regexp(t, `^ +go +mean .* 5e-07 +\S+ +0$`, lines[2])
	require.Regexp(t, `^ +avx2 +mean .* \+Inf +\+Inf +2$`, lines[3], "a NaN and an inf where the reference is finite: 2 bad, never a max abs diff of 0")
	require.Regexp(t, `^ +ptx +mean .* 0 +0 +0$`, lines[4])
	require.Regexp(t, `^ +ptx +mean .* 0.001 +\S+ +1$`, lines[8])
	require.Len(t, lines, 9)
	require.Equal(t, "verdict: FAIL: 2 outputs out of tolerance: avx2 advantage (2 of 6 elements), ptx value_target (1 of 6 elements)", verdict)

	// All within tolerance: ok, naming the backends judged; NaN against NaN is a match.
	results = map[string]map[string]golden.Array{"ref": perturbed(want, "advantage", func(x []float64) { x[0] = math.NaN() })}
	results["go"], results["ptx"] = results["ref"], results["ref"]
	out.Reset()
	verdict, err = compareBackends(&out, c.Graph, nil, results, []string{"ref", "go", "ptx"})
	require.NoError(t, err)
	require.Equal(t, "verdict: ok: every output of go, ptx within the package test's tolerances", verdict)
	require.Regexp(t, `\n +go +mean NaN in \[-?[0-9.]+, [0-9.]+\], 1 NaN +0 +0 +0\n`, out.String())

	// A backend missing an output, or returning the wrong length, fails every element.
	results["go"] = map[string]golden.Array{"advantage": {Shape: []int{5}, Data: make([]float32, 5)}}
	out.Reset()
	verdict, err = compareBackends(&out, c.Graph, nil, results, []string{"go"})
	require.EqualError(t, err, "eval: 2 outputs out of the package test's tolerances")
	require.Equal(t, "verdict: FAIL: 2 outputs out of tolerance: go advantage (5 elements, want 6), go value_target (missing)", verdict)
	require.Regexp(t, `\nvalue_target +\[2 3\] +go +missing +\+Inf +\+Inf +6\n`, out.String())
	require.NotContains(t, out.String(), " ref ", "ref is not shown when not selected")

	// Only the interpreter: nothing to judge.
	out.Reset()
	verdict, err = compareBackends(&out, c.Graph, nil, map[string]map[string]golden.Array{"ref": want}, []string{"ref"})
	require.NoError(t, err)
	require.Equal(t, "verdict: ok: only the interpreter ran; no backend to judge", verdict)
}

// Inputs that break a precondition TorchRL checks at run time (a log-softmax value above 0 in
// a distributional Q-value head): eval prints the comparison, every backend agreeing with the
// interpreter, and then fails with the data error.
func TestEvalDataError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "d.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("package: d\ndims: {B: 2, K: 3, A: 2}\nbatch: [B]\ntransforms: [{type: distributional_qvalue, action_dim: A, atom_dim: K, support: [-1, 0, 1]}]\n"), 0o644))
	v := []float32{-1, -2, -1, -1, -2, -3, -1, -2, 0.5, -1, -1, -2}
	in := filepath.Join(dir, "in.npz")
	require.NoError(t, goldenw.WriteNPZ(in, map[string]golden.Array{"action_value": {Shape: []int{2, 3, 2}, Data: v}}))
	var out, errb strings.Builder
	code := run([]string{"eval", "-spec", spec, "-in", in}, &out, &errb)
	require.Equal(t, 1, code, out.String())
	require.Contains(t, out.String(), "verdict: ok")
	require.Contains(t, errb.String(), "eval: the inputs break a precondition of the kernel (Forward returns a *runtime.DataError): invalid_action_value = 1: the number of (unmasked) action_value elements above 0")
}

// A tensor's summary: mean and range over its non-NaN values, and an all-NaN tensor as such
// (not a range of [+Inf, -Inf]).
func TestSummarize(t *testing.T) {
	nan := math.NaN()
	require.Equal(t, "mean 2 in [1, 3]", summarize([]float64{1, 2, 3}))
	require.Equal(t, "mean NaN in [1, 3], 1 NaN", summarize([]float64{1, nan, 3}))
	require.Equal(t, "all 2 NaN", summarize([]float64{nan, nan}))
	require.Equal(t, "0.5", summarize([]float64{0.5}))
}

// A NaN at a masked element of a gradient is a failure even where the interpreter has a NaN
// there too: padding reaches no output (issue 17 item 1; before, NaN against NaN agreed and
// eval said ok), unless the valid data holds a non-finite value that may have reached it.
func TestEvalMaskedNonFiniteFails(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.yaml")
	require.NoError(t, os.WriteFile(p, []byte("package: m\ndtype: float32\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo, critic_coeff: 0, entropy_bonus: false, reduction: none}\nkeys: {mask: mask}\n"), 0o644))
	c, err := gen.Compile(p)
	require.NoError(t, err)
	g := c.Reference()
	f := func(v ...float32) golden.Array { return golden.Array{Shape: []int{4}, Data: v} }
	inputs := map[string]golden.Array{"log_prob": f(-1, -1, -1, -1), "sample_log_prob": f(-1, -1, -1, -1),
		"advantage": f(1, 2, 3, 4), "mask": {Shape: []int{4}, Data: []bool{true, true, false, false}}}
	ref := golden.Case{Name: "t", Inputs: inputs}
	require.NoError(t, cases.Want(g, &ref))
	require.Equal(t, []float64{-1, -2, 0, 0}, ref.Want["grad.log_prob"].Float64s(), "the interpreter gives 0 at masked elements")
	nan := perturbed(ref.Want, "grad.log_prob", func(x []float64) { x[3] = math.NaN() })
	results := map[string]map[string]golden.Array{"ref": nan, "go": nan}
	var out strings.Builder
	verdict, err := compareBackends(&out, g, inputs, results, []string{"ref", "go"})
	require.Error(t, err)
	require.Equal(t, "verdict: FAIL: 1 output out of tolerance: go grad.log_prob (1 of 4 elements)", verdict)
	// The same NaN at a valid element agrees with the interpreter's, as before.
	nan = perturbed(ref.Want, "grad.log_prob", func(x []float64) { x[0] = math.NaN() })
	results = map[string]map[string]golden.Array{"ref": nan, "go": nan}
	_, err = compareBackends(&out, g, inputs, results, []string{"ref", "go"})
	require.NoError(t, err)
	// With an infinity in the valid data, a non-finite value at padding may come from it (a
	// scan carries a valid step's value back into the padding before it): agreeing with the
	// interpreter there is no failure.
	inputs["advantage"] = f(1, float32(math.Inf(1)), 3, 4)
	nan = perturbed(ref.Want, "grad.log_prob", func(x []float64) { x[3] = math.NaN() })
	results = map[string]map[string]golden.Array{"ref": nan, "go": nan}
	_, err = compareBackends(&out, g, inputs, results, []string{"ref", "go"})
	require.NoError(t, err)
}

// An action outside [0, A): the interpreter rejects it, and eval -backend ptx reports the
// fault the PTX kernels record (the first element and its value), as Forward's IndexError;
// the PTX used to clamp the action and compute a loss.
func TestEvalIndexFault(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("package: c\ndims: {B: 4, A: 3}\nbatch: [B]\nloss: {type: clip_ppo, clip_epsilon: 0.2, distribution: categorical, action_dim: A}\n"), 0o644))
	c, err := gen.Compile(spec)
	require.NoError(t, err)
	arrays := map[string]golden.Array{}
	for _, in := range c.Graph.Inputs {
		switch in.Kind {
		case ir.Index:
			arrays[in.Name] = golden.Array{Shape: in.Shape.Sizes(), Data: []int64{0, 2, 3, -1}}
		case ir.Bool:
			arrays[in.Name] = golden.Array{Shape: in.Shape.Sizes(), Data: make([]bool, in.Shape.Numel())}
		default:
			arrays[in.Name] = golden.Array{Shape: in.Shape.Sizes(), Data: make([]float32, in.Shape.Numel())}
		}
	}
	in := filepath.Join(dir, "in.npz")
	require.NoError(t, goldenw.WriteNPZ(in, arrays))
	var out, errb strings.Builder
	code := run([]string{"eval", "-backend", "ptx", "-spec", spec, "-in", in}, &out, &errb)
	require.Equal(t, 1, code, out.String())
	require.Contains(t, errb.String(), "\n  ptx: c: in/action[2] = 3 is out of range [0, 3)\n", errb.String())
}

// An estimator's own output at padding is the padding's (SEMANTICS.md §11.18): a NaN reward
// in the padding gives a NaN advantage there, in the interpreter and in every backend, and
// eval agrees (the float32 review: it said FAIL for go's advantage though every backend
// matched the interpreter bit for bit). The loss terms stay checked as before.
func TestEvalEstimatorPaddingIsThePaddings(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.yaml")
	require.NoError(t, os.WriteFile(p, []byte("package: g\ndtype: float32\ndims: {N: 1, T: 4}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\nloss: {type: clip_ppo}\nkeys: {mask: mask}\n"), 0o644))
	c, err := gen.Compile(p)
	require.NoError(t, err)
	g := c.Reference()
	f := func(v ...float32) golden.Array { return golden.Array{Shape: []int{1, 4}, Data: v} }
	flags := func(v ...bool) golden.Array { return golden.Array{Shape: []int{1, 4}, Data: v} }
	nan := float32(math.NaN())
	inputs := map[string]golden.Array{"next.reward": f(1, 1, 1, nan), "state_value": f(0, 0, 0, 0), "next.state_value": f(0, 0, 0, 0),
		"next.terminated": flags(false, false, true, false), "next.done": flags(false, false, true, false),
		"log_prob": f(0, 0, 0, 0), "sample_log_prob": f(0, 0, 0, 0), "entropy": f(0, 0, 0, 0), "mask": flags(true, true, true, false)}
	ref := golden.Case{Name: "t", Inputs: inputs}
	require.NoError(t, cases.Want(g, &ref))
	require.True(t, math.IsNaN(ref.Want["advantage"].Float64s()[3]), "the padding's advantage is the padding's")
	results := map[string]map[string]golden.Array{"ref": ref.Want, "go": ref.Want}
	var out strings.Builder
	verdict, err := compareBackends(&out, g, inputs, results, []string{"ref", "go"})
	require.NoError(t, err, verdict)
	// At padding a backend may give the estimator's garbage another value (3e38 rewards:
	// AVX2's composed scan overflows where the Go recursion does not): not judged.
	other := perturbed(ref.Want, "advantage", func(x []float64) { x[3] = math.Inf(-1) })
	results = map[string]map[string]golden.Array{"ref": ref.Want, "go": other}
	verdict, err = compareBackends(&out, g, inputs, results, []string{"ref", "go"})
	require.NoError(t, err, verdict)
	// At a valid element it is a failure.
	other = perturbed(ref.Want, "advantage", func(x []float64) { x[1] += 1e-3 })
	results = map[string]map[string]golden.Array{"ref": ref.Want, "go": other}
	_, err = compareBackends(&out, g, inputs, results, []string{"ref", "go"})
	require.Error(t, err)
	// A NaN in a loss term's masked element is still a failure.
	bad := perturbed(ref.Want, "grad.log_prob", func(x []float64) { x[3] = math.NaN() })
	results = map[string]map[string]golden.Array{"ref": bad, "go": bad}
	_, err = compareBackends(&out, g, inputs, results, []string{"ref", "go"})
	require.Error(t, err)
}

// eval warns about data whose valid steps run into padding without done (the multi-agent
// review: a dead agent's last valid step without done made the loss NaN, and eval said ok,
// the kernels agreeing with the interpreter); data with done there gets no warning.
func TestEvalWarnsOfPaddingWithoutDone(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.yaml")
	require.NoError(t, os.WriteFile(p, []byte("package: g\ndims: {N: 2, T: 4}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\nloss: {type: clip_ppo}\nkeys: {mask: mask}\n"), 0o644))
	c, err := gen.Compile(p)
	require.NoError(t, err)
	flags := func(v ...bool) golden.Array { return golden.Array{Shape: []int{2, 4}, Data: v} }
	inputs := map[string]golden.Array{"mask": flags(true, true, true, false, true, true, false, false),
		"next.done": flags(false, false, true, false, false, false, false, false)}
	w := paddingWithoutDone(c, inputs)
	require.Contains(t, w, "1 valid step followed along T by padding with next.done false there (the first at [1 1])")
	inputs["next.done"] = flags(false, false, true, false, false, true, false, false)
	require.Empty(t, paddingWithoutDone(c, inputs))
}
