package gen_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/ptxgen"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/runtime/ptxsim"
	"github.com/lossgen/lossgen/spec"
)

// zoo builds a graph that uses every IR op and every planner feature, with odd dims (none a
// multiple of the vector width), broadcasts, reductions feeding later passes, scans in both
// directions and along an outer dim (time-major), shifts and gathers feeding further work,
// reductions over non-batch dims (actions A, atoms K, ensemble Q) nested two deep and
// finished inside the element loop, outputs with non-batch dims stored from inside it, a
// barrier reduction of such a value, and outputs that are an input or another output.
func zoo(dt ir.DType) *ir.Graph {
	dims := []ir.Dim{{Name: "Q", Size: 2}, {Name: "N", Size: 3}, {Name: "T", Size: 5}, {Name: "K", Size: 3}, {Name: "A", Size: 4}}
	b := ir.NewBuilder(dt, dims, []string{"N", "T"})
	in := func(name string, kind ir.ElemKind, shape ...string) *ir.Node {
		return b.Input(ir.Input{Key: name, Name: name, Kind: kind, Shape: b.Shape(shape...)})
	}
	x, y := in("x", ir.Float, "N", "T"), in("y", ir.Float, "N", "T")
	c := in("c", ir.Bool, "N", "T")
	idx := in("idx", ir.Index, "N", "T")
	q := in("q", ir.Float, "N", "T", "A")
	w := in("w", ir.Float, "T")
	e := in("e", ir.Float, "Q", "N", "T")
	v := in("v", ir.Float, "N", "T", "K", "A")
	k := b.ConstTensor(b.Shape("T"), []float64{0.5, -1, 2, 0.25, 3})
	sup := b.ConstTensor(b.Shape("K"), []float64{-1, 0.5, 2})
	half := b.Const(0.5)

	out := func(name string, n *ir.Node) { b.Output(name, n, ir.Metric, "", "") }
	out("neg", b.Neg(x))
	out("abs", b.Abs(x))
	out("exp", b.Exp(x))
	out("log", b.Log(b.Abs(y)))
	out("log1p", b.Log1p(x))
	out("expm1_minus_x", b.ExpM1MinusX(x))
	out("sqrt", b.Sqrt(b.Abs(x)))
	out("round_f32", b.RoundF32(b.Mul(x, k))) // x·k itself in a float32 graph
	out("detach", b.Mul(b.Detach(b.Add(x, y)), half))
	// A custom derivative reaches no backend (the custom-grad pass leaves its value).
	xd := b.Input(ir.Input{Key: "xd", Name: "xd", Kind: ir.Float, Shape: b.Shape("N", "T"), Differentiable: true})
	out("custom_grad", b.Mul(b.CustomGrad(b.Mul(xd, y), xd, y), half))
	out("add_bcast", b.Add(x, w))
	out("sub_const", b.Sub(x, k))
	out("mul", b.Mul(x, y))
	out("div", b.Div(x, b.Add(b.Abs(y), half)))
	out("min", b.Min(x, y))
	out("max", b.Max(x, w))
	for name, f := range map[string]func(a, c *ir.Node) *ir.Node{"lt": b.Lt, "le": b.Le, "gt": b.Gt, "ge": b.Ge, "eq": b.Eq, "ne": b.Ne} {
		out(name, f(b.Mul(x, half), b.Mul(b.Max(x, y), half)))
	}
	out("where", b.Where(c, x, y))
	out("clamp", b.Clamp(x, b.Const(-0.25), b.Const(0.5)))
	out("broadcast", b.Broadcast(b.Sum(y, "T"), b.Shape("N", "T", "A")))
	out("broadcast_const", b.Broadcast(half, b.Shape("N", "T")))

	// Barrier reductions over batch dims.
	out("sum_T", b.Sum(x, "T"))
	out("mean_N", b.Mean(y, "N"))
	out("max_all", b.ReduceMax(x, "N", "T"))
	out("min_T", b.ReduceMin(y, "T"))
	out("lse_N", b.LogSumExp(x, "N"))
	out("var_T", b.Var(y, 1, "T"))
	out("std_N", b.Std(x, 1, "N"))
	out("argmax_T", b.ArgMax(x, "T"))
	out("mean_qq", b.MeanAll(b.Mul(q, q))) // its argument has the non-batch dim A

	// Reductions over non-batch dims, inside the element loop.
	out("argmax_A", b.ArgMax(q, "A"))
	out("gather_argmax", b.Gather(q, b.ArgMax(q, "A"), "A"))
	m := b.ReduceMax(q, "A")
	lse := b.Log(b.Sum(b.Exp(b.Sub(q, m)), "A"))
	logp := b.Sub(b.Sub(q, m), lse)
	out("log_softmax_at", b.Gather(logp, idx, "A")) // a gather of computed values: pushed down
	out("probs", b.Exp(logp))                       // [N T A], stored from inside the loop over A
	out("lse_A", b.LogSumExp(q, "A"))
	out("var_A", b.Var(q, 0, "A"))
	out("std_A", b.Std(q, 0, "A"))
	out("mean_A", b.Mean(q, "A"))
	out("min_Q", b.ReduceMin(e, "Q"))
	out("sum_Q_sq", b.Sum(b.Square(b.Sub(e, x)), "Q"))
	expect := b.Sum(b.Mul(b.Exp(v), sup), "K") // [N T A], nested: the loop over K inside A's
	out("argmax_expect", b.ArgMax(expect, "A"))
	out("max_expect", b.ReduceMax(expect, "A"))

	// Scans, shifts and gathers.
	centred := b.Sub(x, b.Mean(x, "N", "T")) // a reduction broadcast back: a barrier
	out("centred", centred)
	disc := b.Mul(b.Sub(b.Const(1), c), half)
	out("scan", b.Scan(centred, disc, "T", true, false))
	out("scan_fwd", b.Scan(x, disc, "T", false, false))
	out("scan_N", b.Scan(y, disc, "N", true, false)) // along the outer dim, as a time-major batch
	// Cut scans: x/c is ±inf where c is 0, which reaches the steps before it as ±inf through
	// the cut (+0 for 0·inf), and as NaN without it.
	out("scan_cut", b.Scan(b.Div(x, disc), disc, "T", true, true))
	out("scan_N_cut", b.Scan(b.Div(y, disc), disc, "N", false, true))
	out("shift", b.ShiftNext(b.Exp(x), y, "T"))
	out("shift_work", b.Sub(b.ShiftNext(x, y, "T"), x))
	out("shift_N", b.Mul(b.ShiftNext(y, x, "N"), half))
	out("gather", b.Gather(q, idx, "A"))
	out("gather_work", b.Exp(b.Gather(q, idx, "A")))

	// Outputs that are an input, or the same node as another output.
	out("copy_x", x)
	out("neg_again", b.Neg(x))
	return b.Graph()
}

// zooFlags gathers flags and indices that have a non-batch dim at computed and input indices
// (a masked argmax's chosen value: the gather is pushed through the where onto the mask), and
// stores values of two inner dims that need a reduction over either one, in a graph of its own: the zoo's one pass already holds about as many vector values as the
// AVX2 registers do.
func zooFlags(dt ir.DType) *ir.Graph {
	dims := []ir.Dim{{Name: "Q", Size: 2}, {Name: "N", Size: 3}, {Name: "T", Size: 5}, {Name: "A", Size: 4}}
	b := ir.NewBuilder(dt, dims, []string{"N", "T"})
	in := func(name string, kind ir.ElemKind, shape ...string) *ir.Node {
		return b.Input(ir.Input{Key: name, Name: name, Kind: kind, Shape: b.Shape(shape...)})
	}
	q := in("q", ir.Float, "N", "T", "A")
	idx := in("idx", ir.Index, "N", "T")
	cm := in("cm", ir.Bool, "N", "T", "A")
	ia := in("ia", ir.Index, "N", "T", "A")
	out := func(name string, n *ir.Node) { b.Output(name, n, ir.Metric, "", "") }
	masked := b.Where(cm, q, b.Const(-1e30))
	best := b.ArgMax(masked, "A")
	out("masked_best", best)
	out("masked_chosen", b.Gather(masked, best, "A"))
	out("gather_bool", b.Gather(cm, idx, "A"))
	out("gather_index", b.Add(b.Gather(ia, best, "A"), b.Gather(ia, idx, "A")))
	// Outputs with two inner dims that need a reduction over one of them, broadcast back
	// along it (discrete IQL's Q gradient): the loops nest so the reduced dim is innermost.
	qe := in("qe", ir.Float, "Q", "N", "T", "A")
	out("sum_A_by_mask", b.Mul(b.Sum(b.Mul(qe, cm), "A"), cm))
	out("sum_Q_times", b.Mul(b.Sum(qe, "Q"), qe))
	// Iotas along an inner dim, the vector axis and an outer batch dim, both ways; a one-hot
	// of an index (the gather's gradient) and a reversed last-step flag (the TD estimators').
	out("iota_A", b.Mul(q, b.Iota("A", false)))
	out("iota_A_rev_max", b.ReduceMax(b.Mul(q, b.Iota("A", true)), "A"))
	out("iota_NT", b.Add(b.Mul(b.Iota("N", false), b.Const(10)), b.Iota("T", true)))
	out("iota_N_rev", b.Mul(b.Sum(q, "A"), b.Iota("N", true)))
	out("one_hot", b.Sum(b.Where(b.Eq(b.Iota("A", false), idx), q, b.Const(0)), "A"))
	out("last_T", b.Max(b.Eq(b.Iota("T", true), b.Const(0)), b.Gather(cm, idx, "A")))
	return b.Graph()
}

// compiledGraph wraps a hand-built graph as the pipeline's output for package pkg.
func compiledGraph(t *testing.T, g *ir.Graph, pkg string) *gen.Compiled {
	c, err := gen.CompileGraph(&spec.Spec{File: pkg + ".yaml", Package: pkg}, g)
	require.NoError(t, err)
	return c
}

// graphAsm is the AVX2 assembly lossgen generates for g.
func graphAsm(t *testing.T, g *ir.Graph, pkg string) string {
	files, err := gen.Emit(compiledGraph(t, g, pkg), gen.Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	return string(files["kernels_amd64.s"])
}

// eachDType runs f for float32 and float64, in parallel subtests of a parallel test that
// builds generated code (skipped with -short).
func eachDType(t *testing.T, f func(t *testing.T, dt ir.DType)) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		t.Run(dt.String(), func(t *testing.T) {
			t.Parallel()
			f(t, dt)
		})
	}
}

func zooInputs(g *ir.Graph, seed uint64) map[string]golden.Array {
	r := rand.New(rand.NewPCG(seed, 3))
	in := map[string]golden.Array{}
	for _, x := range g.Inputs {
		v := make([]float64, x.Shape.Numel())
		for i := range v {
			switch x.Kind {
			case ir.Bool:
				v[i] = float64(r.IntN(2))
			case ir.Index:
				v[i] = float64(r.IntN(4))
			default:
				v[i] = 2*r.Float64() - 1
			}
		}
		switch x.Name {
		case "x":
			v[3], v[7] = v[2], v[6] // ties for argmax and eq
		case "q":
			v[1], v[6] = v[0], v[5] // ties for argmax over A
		}
		in[x.Name] = cases.Stored(g.DType, x, v)
	}
	return in
}

// TestEveryOpOnEveryBackend runs the op zoo through the generated pure-Go kernel (built with
// the purego tag), the default build (the AVX2 kernels where the CPU has AVX2 and FMA) and
// the PTX kernels in lossgen's simulator, in float32 and float64, against the interpreter.
// The zoo's dims (3, 5, 4, ...) are not multiples of the vector width, so every AVX2 loop
// runs its masked tail.
func TestEveryOpOnEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	used := map[ir.Op]bool{}
	for _, dt := range []ir.DType{ir.F32, ir.F64} { // round_f32 is the identity in float32
		for _, n := range append(zoo(dt).Nodes, zooFlags(dt).Nodes...) {
			used[n.Op] = true
		}
	}
	for _, op := range ir.AllOps() {
		require.True(t, used[op], "the zoo does not use %s", op)
	}
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		for _, backend := range []string{"go", "default", "ptx"} {
			t.Run(dt.String()+"/"+backend, func(t *testing.T) { t.Parallel(); zooRun(t, zoo(dt), backend) })
			t.Run(dt.String()+"/"+backend+"/flags", func(t *testing.T) { t.Parallel(); zooRun(t, zooFlags(dt), backend) })
			if backend == "ptx" {
				continue // its reductions are their descriptions
			}
			// The reductions' descriptions (ir.ReductionOf) in place of the backend's own
			// forms (runtime accumulators, AVX2 lane code): both must match the interpreter.
			for name, g := range map[string]func(ir.DType) *ir.Graph{"generic": zoo, "flags/generic": zooFlags} {
				t.Run(dt.String()+"/"+backend+"/"+name, func(t *testing.T) {
					t.Parallel()
					gr := g(dt)
					gr.GenericReductions = true
					zooRun(t, gr, backend)
				})
			}
		}
	}
}

func zooRun(t *testing.T, g *ir.Graph, backend string) {
	zooRunWith(t, g, backend, zooInputs)
}

// zooRunWith is zooRun on the inputs of seeds 1, 2 and 3 that inputs makes.
func zooRunWith(t *testing.T, g *ir.Graph, backend string, inputs func(g *ir.Graph, seed uint64) map[string]golden.Array) {
	dt := g.DType
	c := compiledGraph(t, g, "zoo")
	run := func(in map[string]golden.Array) map[string]golden.Array {
		mod, err := ptxgen.Emit(c.Plan, c.Backward, gogen.Meta{Package: "zoo", GenVersion: runtime.GenVersion})
		require.NoError(t, err)
		out, _, err := ptxsim.RunTable(string(mod.PTX), mod.Launch, in)
		require.NoError(t, err)
		return out
	}
	if backend != "ptx" {
		m, err := runner.NewModule(c)
		require.NoError(t, err)
		defer m.Close()
		tags := map[string]string{"go": "purego", "default": ""}[backend]
		bin, err := m.Build(tags)
		require.NoError(t, err)
		impl, err := m.Impl(bin)
		require.NoError(t, err)
		want := "go"
		if tags == "" && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
			want = "avx2"
		}
		require.Equal(t, want, impl, "the kernel under test")
		run = func(in map[string]golden.Array) map[string]golden.Array {
			out, err := m.Run(bin, in)
			require.NoError(t, err)
			return out
		}
	}
	tol := golden.Tol{Abs: 1e-6, Rel: 1e-6}
	if dt == ir.F64 {
		tol = golden.Tol{Abs: 1e-14, Rel: 1e-14}
	}
	for seed := uint64(1); seed <= 3; seed++ {
		in := inputs(g, seed)
		ref := golden.Case{Name: fmt.Sprint(seed), Inputs: in}
		require.NoError(t, cases.Want(g, &ref))
		got := run(in)
		for _, o := range g.Outputs {
			d := golden.Compare(ref.Want[o.Name].Float64s(), got[o.Name].Float64s(), tol)
			require.Zero(t, d.Bad, "seed %d, %s: first bad at %d: got %v, want %v", seed, o.Name, d.First,
				got[o.Name].Float64s(), ref.Want[o.Name].Float64s())
		}
	}
}

// The interpreter's own edge semantics for the kernels to match: NaN through min/max/clamp.
func TestApplySemantics(t *testing.T) {
	nan := math.NaN()
	require.True(t, math.IsNaN(ir.Apply(ir.OpMin, nan, 1)))
	require.True(t, math.IsNaN(ir.Apply(ir.OpMax, 1, nan)))
	require.Equal(t, 1.0, ir.Apply(ir.OpNe, nan, nan))
	require.Equal(t, 0.0, ir.Apply(ir.OpEq, nan, nan))
	require.Equal(t, 2.0, ir.Apply(ir.OpWhere, 1, 2, 3))
	require.Equal(t, 3.0, ir.Apply(ir.OpWhere, 0, 2, 3))
}
