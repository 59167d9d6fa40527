package gen_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/asmgen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/runtime"
)

// foldSums sums x over each row and over everything, scaled by powers of two (exact), so
// that one pass holds sums in registers (the first three) and in memory (the others).
func foldSums() *ir.Graph {
	dims := []ir.Dim{{Name: "B", Size: 3}, {Name: "L", Size: 96}}
	b := ir.NewBuilder(ir.F32, dims, []string{"B", "L"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "L")})
	for k, name := range []string{"s1", "s2", "s4", "s8", "s16"} {
		b.Output(name, b.Sum(b.Mul(x, b.Const(float64(int(1)<<k))), "L"), ir.Metric, "", "")
	}
	b.Output("total", b.Sum(x, "B", "L"), ir.Metric, "", "")
	return b.Graph()
}

// The 16-lane AVX-512 variant of a pass folds each 16-lane block into the 8-lane float32
// partial sums as the AVX2 pass does, lanes 0–7 first, and flushes them into the float64 sums
// after the same 8 blocks. Each lane of a row sees, block by block, 1, 0, 2^24 and nine 1s,
// which float32 partials added in that order round to 2^24 by the 8th block (2^24 + 1 is a
// tie, to even), flushed, then 4: a row's sum over its 8 lanes is 8·(2^24 + 4) in both
// variants. Each pair of blocks the other way round would give 8·(2^24 + 8), no flush inside
// the row 8·2^24 (and the Go kernel's float64 sums 8·(2^24 + 10), within its tolerance).
func TestAVX512FoldsInAVX2Order(t *testing.T) {
	runProbe(t, foldSums(), "fold", "kernels_avx512_amd64.s", "TEXT ·pass0AVX512(SB)", "TestFoldProbe", foldProbe)
}

// runProbe generates g's package, checks that its file holds want, and (on a machine where
// the 16-lane variants run) runs the probe test name, source src, inside the package.
func runProbe(t *testing.T, g *ir.Graph, pkg, file, want, name, src string) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	c := compiledGraph(t, g, pkg)
	files, err := gen.Emit(c, gen.Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	require.Contains(t, string(files[file]), want)
	if !runtime.AVX512() {
		t.Skip("the AVX-512 variants do not run here (no AVX-512, or LOSSGEN_AVX512=0, LOSSGEN_PUREGO=1)")
	}
	m, err := runner.NewTestModule(c)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, os.WriteFile(filepath.Join(m.Dir, "kernel", "probe_test.go"), []byte(src), 0o644))
	out, err := m.Test("^" + name + "$")
	require.NoError(t, err, out)
	require.Contains(t, out, "--- PASS: "+name)
}

var foldProbe = `package fold

import "testing"

func TestFoldProbe(t *testing.T) {
	if !useAVX512 {
		t.Fatal("the AVX-512 variants do not run here")
	}
	defer func() { useAVX512 = true }()
	in := *randomInputs(1)
	for i := range in.X {
		in.X[i] = 1
		switch i % 96 / 8 {
		case 1:
			in.X[i] = 0
		case 2:
			in.X[i] = 1 << 24
		}
	}
	for _, wide := range []bool{false, true} {
		useAVX512 = wide
		out := NewOutputs()
		if err := Forward(&in, out); err != nil {
			t.Fatal(err)
		}
		for k, s := range [][]float32{out.S1, out.S2, out.S4, out.S8, out.S16} {
			for b, v := range s {
				if want := float32(8*(1<<24+4)) * float32(int(1)<<k); v != want {
					t.Errorf("AVX-512 %v: row %d of s%d = %v, want %v", wide, b, 1<<k, v, want)
				}
			}
		}
		if want := float32(3 * 8 * (1<<24 + 4)); out.Total != want {
			t.Errorf("AVX-512 %v: total = %v, want %v", wide, out.Total, want)
		}
	}
}
`

// welfordFlat is a flat batch's mean, variance and std: one pass whose float32 partials
// (Welford's shifted sums, a plain sum) flush into float64 states three times in its 13
// blocks of 16 and once more at its end.
func welfordFlat() *ir.Graph {
	b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "B", Size: 208}}, []string{"B"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B")})
	b.Output("mean", b.Mean(x, "B"), ir.Metric, "", "")
	b.Output("var", b.Var(x, 1, "B"), ir.Metric, "", "")
	b.Output("std", b.Std(b.Mul(x, b.Const(3)), 0, "B"), ir.Metric, "", "")
	return b.Graph()
}

// The 16-lane variant's flush merges the float32 partials into the float64 Welford and sum
// states 8 lanes at a time in ZMM registers, the AVX2 flush two halves of 4: the float64
// states must come out the same bits, which the float32 outputs alone would rarely show (a
// last-bit difference in a float64 mean or M2 seldom survives rounding to float32). The probe
// runs the pass's two functions on the same data (offset by 1e4, so the deviations round,
// and spread over six decades) into two state buffers and compares every word.
func TestAVX512FlushStatesBitwise(t *testing.T) {
	runProbe(t, welfordFlat(), "wf", "kernels_avx512_amd64.go", "func pass0AVX512(state *float64, lo int, hi int, x *float32)", "TestFlushProbe", flushProbe)
}

var flushProbe = `package wf

import (
	"math"
	"testing"
)

func TestFlushProbe(t *testing.T) {
	for _, scale := range []float64{1e-3, 1, 1e3} {
		x := make([]float32, 208)
		u := uint32(12345)
		for i := range x {
			u = u*1664525 + 1013904223
			x[i] = float32(1e4 + scale*(float64(u>>8)/(1<<24)-0.5)*math.Pow(10, float64(i%7)-3))
		}
		a, w := make([]float64, 1<<12), make([]float64, 1<<12)
		pass0AVX2(&a[0], 0, len(x), &x[0])
		pass0AVX512(&w[0], 0, len(x), &x[0])
		nonzero := 0
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(w[i]) {
				t.Errorf("scale %g: state word %d: AVX2 %v, AVX-512 %v", scale, i, a[i], w[i])
			}
			if a[i] != 0 {
				nonzero++
			}
		}
		if nonzero < 2*3*8+8 { // n, mean and m2 of 8 lanes for each variance, the sum's 8
			t.Errorf("scale %g: %d nonzero state words: the pass wrote elsewhere", scale, nonzero)
		}
	}
}
`

// zooWide uses every elementwise op and every reduction a 16-lane pass folds (sum, mean,
// max, min, logsumexp, variance, std over the vector axis or everything) on rows of whole
// 16-element blocks, with a bool input read both as its mask and as 0/1, a row value
// broadcast back, constants and a constant tensor along the vector axis.
func zooWide() *ir.Graph {
	dims := []ir.Dim{{Name: "N", Size: 3}, {Name: "T", Size: 48}}
	b := ir.NewBuilder(ir.F32, dims, []string{"N", "T"})
	in := func(name string, kind ir.ElemKind, shape ...string) *ir.Node {
		return b.Input(ir.Input{Key: name, Name: name, Kind: kind, Shape: b.Shape(shape...)})
	}
	x, y, c, w := in("x", ir.Float, "N", "T"), in("y", ir.Float, "N", "T"), in("c", ir.Bool, "N", "T"), in("w", ir.Float, "T")
	vals := make([]float64, 48)
	for i := range vals {
		vals[i] = float64(i%7) - 2.5
	}
	k := b.ConstTensor(b.Shape("T"), vals)
	half := b.Const(0.5)
	out := func(name string, n *ir.Node) { b.Output(name, n, ir.Metric, "", "") }
	out("neg", b.Neg(x))
	out("abs", b.Abs(x))
	out("exp", b.Exp(x))
	out("log", b.Log(b.Abs(y)))
	out("log1p", b.Log1p(x))
	out("expm1_minus_x", b.ExpM1MinusX(x))
	out("sqrt", b.Sqrt(b.Abs(x)))
	out("round_f32", b.RoundF32(b.Mul(x, k)))
	out("detach", b.Mul(b.Detach(b.Add(x, y)), half))
	out("add_bcast", b.Add(x, w))
	out("sub_const", b.Sub(x, k))
	out("div", b.Div(x, b.Add(b.Abs(y), half)))
	out("min", b.Min(x, y))
	out("max", b.Max(x, w))
	for name, f := range map[string]func(a, c *ir.Node) *ir.Node{"lt": b.Lt, "le": b.Le, "gt": b.Gt, "ge": b.Ge, "eq": b.Eq, "ne": b.Ne} {
		out(name, f(b.Mul(x, half), b.Mul(b.Max(x, y), half)))
	}
	out("where", b.Where(c, x, y))
	out("where_flag", b.Mul(b.Where(c, b.Const(1), b.Const(0)), x))
	out("where_computed", b.Where(b.Gt(x, y), b.Exp(y), b.Const(-1)))
	out("clamp", b.Clamp(x, b.Const(-0.25), b.Const(0.5)))
	out("row_centred", b.Sub(x, b.Broadcast(b.Mean(x, "T"), b.Shape("N", "T"))))
	out("sum_T", b.Sum(b.Where(c, y, b.Const(0)), "T"))
	out("mean_all", b.Mean(y, "N", "T"))
	out("max_all", b.ReduceMax(x, "N", "T"))
	out("min_T", b.ReduceMin(y, "T"))
	out("lse_T", b.LogSumExp(b.Where(c, x, b.Const(math.Inf(-1))), "T"))
	out("lse_all", b.LogSumExp(y, "N", "T"))
	out("var_T", b.Var(y, 1, "T"))
	out("std_all", b.Std(x, 1, "N", "T"))
	return b.Graph()
}

// Every elementwise op and every reduction a 16-lane pass folds runs on the AVX-512 variants
// against the interpreter (the default build, on a machine with AVX-512), and the package's
// own TestAVX512MatchesAVX2 compares every bit with the AVX2 passes on random and extreme
// inputs.
func TestEveryOpOnAVX512(t *testing.T) { wideRun(t, zooWide, "zoo") }

// wideRun checks that every pass of g's kernel has a 16-lane variant whose assembly holds
// each of has, then (on a machine where the variants run) runs them against the interpreter
// and the package's TestAVX512MatchesAVX2, which compares every bit with the AVX2 passes on
// random and extreme inputs.
func wideRun(t *testing.T, g func() *ir.Graph, pkg string, has ...string) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	c := compiledGraph(t, g(), pkg)
	files, err := gen.Emit(c, gen.Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	wide := string(files["kernels_avx512_amd64.s"])
	for _, ps := range c.Plan.Passes {
		if len(ps.Domain) > 0 {
			require.Contains(t, wide, fmt.Sprintf("TEXT ·pass%dAVX512(SB)", ps.Index), "pass %d has no 16-lane variant", ps.Index)
		}
	}
	for _, s := range has {
		require.Contains(t, wide, s)
	}
	if !runtime.AVX512() {
		t.Skip("the AVX-512 variants do not run here (no AVX-512, or LOSSGEN_AVX512=0, LOSSGEN_PUREGO=1)")
	}
	zooRun(t, g(), "default")
	out := runMatchesAVX2(t, c)
	for _, kind := range []string{"random", "big", "inf", "nan", "equal"} {
		require.Contains(t, out, "--- PASS: TestAVX512MatchesAVX2/"+kind)
	}
}

// A flat batch whose size is not whole 16-element blocks runs its 16-lane variants up to the
// last flush before the tail and the AVX2 passes from there, in one piece and in 3 chunks:
// 1003 (the AVX2 rest holds full 8-element blocks and a tail of 3) with a normalised
// advantage (a variance); 129 (the rest is the tail of 1 alone, past the last full block:
// the AVX2 pass must not run a full block there), also categorical (tiles, a gather). The
// package's TestAVX512MatchesAVX2 compares every bit with the AVX2 passes alone.
func TestAVX512FlatBatchTail(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for name, src := range map[string]string{
		"1003":            "dims: {B: 1003}\nbatch: [B]\nloss: {type: clip_ppo, normalize_advantage: true, clip_value: 0.1}\n",
		"129":             "dims: {B: 129}\nbatch: [B]\nloss: {type: clip_ppo}\n",
		"129 categorical": "dims: {B: 129, A: 5}\nbatch: [B]\nloss: {type: clip_ppo, distribution: categorical, action_dim: A, entropy_coeff: 0.01}\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, files := specFiles(t, src)
			require.True(t, strings.Contains(string(files["dispatch_amd64.go"]), "m -= (hi - lo) % 64"), "the tail's chunk splits at a flush")
			matchesAVX2(t, c)
		})
	}
}

// Which passes get a 16-lane variant (asmgen.WidePasses): the token losses' streaming passes,
// a flat batch's, a categorical's over its logits, a GAE's scan; none where a row is not
// whole 16-element blocks, in float64, or in a pass with a shift or an argmax over inner dims.
func TestWidePasses(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"grpo", "dims: {B: 4, L: 64}\nbatch: [B, L]\nloss: {type: grpo}\nkeys: {mask: mask}\n", []string{"pass0AVX512", "fbPass0AVX512", "fbPass1AVX512"}},
		{"grpo rows of 100", "dims: {B: 4, L: 100}\nbatch: [B, L]\nloss: {type: grpo}\nkeys: {mask: mask}\n", nil},
		{"grpo float64", "dtype: float64\ndims: {B: 4, L: 64}\nbatch: [B, L]\nloss: {type: grpo}\nkeys: {mask: mask}\n", nil},
		{"flat clip_ppo with a tail", "dims: {B: 1003}\nbatch: [B]\nloss: {type: clip_ppo}\n", []string{"pass0AVX512", "fbPass0AVX512"}},
		{"gae", "dims: {N: 4, T: 64}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\n", []string{"pass0AVX512"}},
		{"gae, rows of 50", "dims: {N: 4, T: 50}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\n", nil},
		{"td_lambda (a shift)", "dims: {N: 4, T: 64}\nbatch: [N, T]\nestimator: {type: td_lambda, gamma: 0.99, lmbda: 0.95}\n", nil},
		{"dqn (an argmax over the actions)", "dims: {B: 64, A: 16}\nbatch: [B]\nloss: {type: dqn}\n", nil},
		{"categorical clip_ppo", "dims: {B: 64, A: 16}\nbatch: [B]\nloss: {type: clip_ppo, distribution: categorical, action_dim: A, entropy_coeff: 0.01}\n", []string{"pass0AVX512", "fbPass0AVX512"}},
		// The token pass stores non-temporally at this size (Forward's per-token losses, and
		// ForwardBackward's gradients with them): their variants do too (and run on 64-byte
		// aligned buffers only).
		{"grpo stored non-temporally", "dims: {B: 64, L: 32768}\nbatch: [B, L]\nloss: {type: grpo, aggregation: none}\nkeys: {mask: mask}\n", []string{"pass0AVX512NT", "fbPass0AVX512NT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.yaml")
			require.NoError(t, os.WriteFile(path, []byte("package: p\n"+tc.src), 0o644))
			c, err := gen.Compile(path)
			require.NoError(t, err)
			require.Equal(t, tc.want, asmgen.WidePasses(c.Plan, c.Backward))
		})
	}
}

// tiledWide is tiled's inner dims (rows shorter than 16 lanes, A3 and A13; whole, A16; longer
// with a masked last group, A20; a dim before the batch; two inner dims) on a batch of three
// 16-lane blocks, in the forms a 16-lane pass runs: inner maxima, minima and short sums of one
// sign, results written from inside the loops (flushed tiles), a gather at an int64 index,
// a one-hot from an iota over the actions, and a sum over the batch of a row's value.
func tiledWide() *ir.Graph {
	dims := []ir.Dim{{Name: "Q", Size: 2}, {Name: "B", Size: 48}, {Name: "K", Size: 3}, {Name: "A3", Size: 3}, {Name: "A13", Size: 13}, {Name: "A16", Size: 16}, {Name: "A20", Size: 20}}
	b := ir.NewBuilder(ir.F32, dims, []string{"B"})
	in := func(name string, kind ir.ElemKind, shape ...string) *ir.Node {
		return b.Input(ir.Input{Key: name, Name: name, Kind: kind, Shape: b.Shape(shape...)})
	}
	out := func(name string, n *ir.Node) { b.Output(name, n, ir.Metric, "", "") }
	act := b.Input(ir.Input{Key: "action", Name: "act", Kind: ir.Index, Shape: b.Shape("B")})
	for _, a := range []string{"A3", "A13", "A16", "A20"} {
		q := in("q"+a, ir.Float, "B", a)
		m := b.Detach(b.ReduceMax(q, a))
		z := b.Sub(q, m)
		e := b.Exp(z)
		s := b.Sum(e, a)
		out("softmax_"+a, b.Div(e, s))
		// Σ e^z·z as the categorical's entropy has it, z ≥ −MaxFloat32 (so 0·−inf is not NaN):
		// terms of one sign, summed in float32.
		ez := b.Mul(e, b.Max(z, b.Const(-math.MaxFloat32)))
		ent := b.Sub(b.Log(s), b.Div(b.Sum(ez, a), s))
		out("entropy_"+a, ent)
		out("entropy_sum_"+a, b.Sum(ent, "B"))
		out("min_"+a, b.ReduceMin(q, a))
		if a == "A20" {
			out("picked", b.Gather(q, act, a))
			onehot := b.Where(b.Eq(b.Iota(a, false), b.Broadcast(act, b.Shape("B", a))), b.Const(1), b.Const(0))
			out("onehot_minus_softmax", b.Sub(onehot, b.Div(e, s)))
		}
	}
	e := in("e", ir.Float, "Q", "B", "A13")
	out("min_Q_sum", b.ReduceMin(b.Sum(b.Mul(e, e), "A13"), "Q"))
	out("e_scaled", b.Mul(e, b.Const(0.5)))
	v := in("v", ir.Float, "B", "K", "A3")
	out("v_max_K", b.ReduceMax(v, "K"))
	return b.Graph()
}

// The 16-lane variants of passes with inner dims (tiles of 16 rows transposed 16×16, masked
// at a row's end, inner loops and reductions on 16 lanes, gathers, int64 indices by
// VCVTQQ2PS, an iota along the inner dims) run against the interpreter, and the package's
// TestAVX512MatchesAVX2 compares every bit with the AVX2 passes.
func TestInnerDimsOnAVX512(t *testing.T) {
	wideRun(t, tiledWide, "tiledwide", "// tile qA20\n", "// flush the tile of softmaxA20\n", "// flush the tile of eScaled\n",
		"VSHUFF32X4", "VGATHERDPS", "VCVTQQ2PS", "VMOVUPS.Z")
}

// A categorical ClipPPO large enough that its ForwardBackward stores non-temporally (its
// logits' gradient from a transposed tile) has that pass's 16-lane variant store
// non-temporally too; B = 2^18 + 8 ends in half a 16-lane block, which its tail chunk runs
// with the AVX2 pass's non-temporal function. The package's TestAVX512MatchesAVX2 (on
// buffers from make, 64-byte aligned) compares every bit with the AVX2 passes.
func TestAVX512NonTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	c, files := specFiles(t, "dims: {B: 262152, A: 16}\nbatch: [B]\nloss: {type: clip_ppo, distribution: categorical, action_dim: A, entropy_coeff: 0.01}\n")
	require.Equal(t, []string{"pass0AVX512", "fbPass0AVX512NT"}, asmgen.WidePasses(c.Plan, c.Backward))
	require.Contains(t, string(files["kernels_avx512_amd64.s"]), "VMOVNTPS")
	require.Contains(t, string(files["dispatch_amd64.go"]), "%64 == 0")
	matchesAVX2(t, c)
}

// specFiles compiles package p of spec src and emits its files.
func specFiles(t *testing.T, src string) (*gen.Compiled, map[string][]byte) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte("package: p\n"+src), 0o644))
	c, err := gen.Compile(path)
	require.NoError(t, err)
	files, err := gen.Emit(c, gen.Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	return c, files
}

// matchesAVX2 runs c's package's TestAVX512MatchesAVX2, in one piece and in 3 chunks
// (skipped where the variants do not run).
func matchesAVX2(t *testing.T, c *gen.Compiled) {
	if !runtime.AVX512() {
		t.Skip("the AVX-512 variants do not run here")
	}
	require.Contains(t, runMatchesAVX2(t, c), "--- PASS: TestAVX512MatchesAVX2/random_in_3_chunks")
}

// runMatchesAVX2 runs c's package's TestAVX512MatchesAVX2, requires it to pass and returns its
// verbose output.
func runMatchesAVX2(t *testing.T, c *gen.Compiled) string {
	m, err := runner.NewTestModule(c)
	require.NoError(t, err)
	defer m.Close()
	out, err := m.Test("^TestAVX512MatchesAVX2$")
	require.NoError(t, err, out)
	return out
}

// scansWide is the zoo's scans on rows of three 16-lane blocks: backwards and forwards along
// the vector axis, along the outer dim (a time-major batch), cut where the coefficient is 0
// (±inf reaching the steps before it) or not, with the reductions a GAE's standardisation
// folds (mean and std over everything, a sum over a row) of a backward scan, whose 16-lane
// blocks fold their halves lanes 8–15 first, as the AVX2 pass walks them, and reductions over
// N alone, a state slot per lane (a ClipPPO+GAE's loss terms, summed over N per step).
func scansWide() *ir.Graph {
	dims := []ir.Dim{{Name: "N", Size: 3}, {Name: "T", Size: 48}}
	b := ir.NewBuilder(ir.F32, dims, []string{"N", "T"})
	in := func(name string, kind ir.ElemKind, shape ...string) *ir.Node {
		return b.Input(ir.Input{Key: name, Name: name, Kind: kind, Shape: b.Shape(shape...)})
	}
	x, y, c := in("x", ir.Float, "N", "T"), in("y", ir.Float, "N", "T"), in("c", ir.Bool, "N", "T")
	half := b.Const(0.5)
	out := func(name string, n *ir.Node) { b.Output(name, n, ir.Metric, "", "") }
	disc := b.Mul(b.Sub(b.Const(1), c), half)
	gae := b.Scan(x, disc, "T", true, false)
	out("scan", gae)
	out("scan_mean", b.Mean(gae, "N", "T"))
	out("scan_std", b.Std(gae, 1, "N", "T"))
	out("scan_sum_T", b.Sum(gae, "T"))
	out("scan_lse", b.LogSumExp(gae, "N", "T"))
	// Over N only: each lane its own result slot (lanes 8–15 fold 8 slots on).
	out("scan_sum_N", b.Sum(gae, "N"))
	out("scan_var_N", b.Var(gae, 1, "N"))
	out("scan_max_N", b.ReduceMax(gae, "N"))
	out("scan_lse_N", b.LogSumExp(b.Mul(gae, half), "N"))
	out("scan_fwd", b.Scan(x, disc, "T", false, false))
	out("scan_fwd_sum", b.Sum(b.Scan(y, disc, "T", false, false), "N", "T"))
	out("scan_N", b.Scan(y, disc, "N", true, false))
	out("scan_cut", b.Scan(b.Div(x, disc), disc, "T", true, true))
	out("scan_fwd_cut", b.Scan(b.Div(y, disc), disc, "T", false, true))
	out("scan_N_cut", b.Scan(b.Div(y, disc), disc, "N", false, true))
	return b.Graph()
}

// The 16-lane variants of passes with scans (composed as two 8-lane blocks side by side,
// the carry applied half by half in the AVX2 pass's order) run against the interpreter, and
// the package's TestAVX512MatchesAVX2 compares every bit with the AVX2 passes.
func TestScansOnAVX512(t *testing.T) { wideRun(t, scansWide, "scanswide", "VPERMPS.Z") }
