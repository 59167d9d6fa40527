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
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/spec"
)

// zoo builds a graph that uses every IR op, with odd dims, broadcasts, reductions feeding
// later passes, a scan of a reduction-dependent value, shifts and gathers.
func zoo(dt ir.DType) *ir.Graph {
	b := ir.NewBuilder(dt, []ir.Dim{{Name: "N", Size: 3}, {Name: "T", Size: 5}, {Name: "A", Size: 4}}, []string{"N", "T"})
	nt := b.Shape("N", "T")
	x := b.Input("x", "x", ir.Float, nt, "")
	y := b.Input("y", "y", ir.Float, nt, "")
	c := b.Input("c", "c", ir.Bool, nt, "")
	idx := b.Input("idx", "idx", ir.Index, nt, "")
	q := b.Input("q", "q", ir.Float, b.Shape("N", "T", "A"), "")
	w := b.Input("w", "w", ir.Float, b.Shape("T"), "")
	k := b.ConstTensor(b.Shape("T"), []float64{0.5, -1, 2, 0.25, 3})
	half := b.Const(0.5)

	out := func(name string, n *ir.Node) { b.Output(name, n, "", "") }
	out("neg", b.Neg(x))
	out("abs", b.Abs(x))
	out("exp", b.Exp(x))
	out("log", b.Log(b.Abs(y)))
	out("log1p", b.Log1p(x))
	out("sqrt", b.Sqrt(b.Abs(x)))
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
	out("sum_T", b.Sum(x, "T"))
	out("mean_N", b.Mean(y, "N"))
	out("max_all", b.ReduceMax(x, "N", "T"))
	out("min_T", b.ReduceMin(y, "T"))
	out("lse_N", b.LogSumExp(x, "N"))
	out("var_T", b.Var(y, 1, "T"))
	out("argmax_A", b.ArgMax(q, "A"))
	out("argmax_T", b.ArgMax(x, "T"))
	centred := b.Sub(x, b.Mean(x, "N", "T")) // a reduction broadcast back: a barrier
	out("centred", centred)
	out("scan", b.ScanRev(centred, b.Mul(b.Sub(b.Const(1), c), half), "T"))
	out("shift", b.ShiftNext(b.Exp(x), y, "T"))
	out("gather", b.Gather(q, idx, "A"))
	out("gather_argmax", b.Gather(q, b.ArgMax(q, "A"), "A"))
	return b.Graph()
}

// compiledGraph wraps a hand-built graph as the pipeline's output for package pkg.
func compiledGraph(g *ir.Graph, pkg string) *gen.Compiled {
	return &gen.Compiled{Graph: g, Plan: plan.Build(g), Spec: &spec.Spec{File: pkg + ".yaml", Package: pkg}}
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
		if x.Name == "x" {
			v[3], v[7] = v[2], v[6] // ties for argmax and eq
		}
		in[x.Name] = cases.Stored(g.DType, x, v)
	}
	return in
}

// TestEveryOpOnEveryBackend runs the op zoo through the generated pure-Go kernel (built with
// the purego tag) and the default build (the AVX2 kernels where the CPU has AVX2 and FMA),
// in float32 and float64, against the interpreter. The zoo's dims (3, 5, 4) are not
// multiples of the vector width, so every AVX2 loop runs its masked tail.
func TestEveryOpOnEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	used := map[ir.Op]bool{}
	for _, n := range zoo(ir.F32).Nodes {
		used[n.Op] = true
	}
	for _, op := range ir.AllOps() {
		require.True(t, used[op], "the zoo does not use %s", op)
	}
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		for _, tags := range []string{"purego", ""} {
			t.Run(dt.String()+"/"+map[string]string{"purego": "go", "": "default"}[tags], func(t *testing.T) {
				zooRun(t, dt, tags)
			})
		}
	}
}

func zooRun(t *testing.T, dt ir.DType, tags string) {
	{
		{
			g := zoo(dt)
			c := compiledGraph(g, "zoo")
			m, err := runner.NewModule(c)
			require.NoError(t, err)
			defer m.Close()
			bin, err := m.Build(tags)
			require.NoError(t, err)
			impl, err := m.Impl(bin)
			require.NoError(t, err)
			want := "go"
			if tags == "" && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
				want = "avx2"
			}
			require.Equal(t, want, impl, "the kernel under test")
			tol := golden.Tol{Abs: 1e-6, Rel: 1e-6}
			if dt == ir.F64 {
				tol = golden.Tol{Abs: 1e-14, Rel: 1e-14}
			}
			for seed := uint64(1); seed <= 3; seed++ {
				in := zooInputs(g, seed)
				ref := golden.Case{Name: fmt.Sprint(seed), Inputs: in}
				require.NoError(t, cases.Want(g, &ref))
				got, err := m.Run(bin, in)
				require.NoError(t, err)
				for _, o := range g.Outputs {
					d := golden.Compare(ref.Want[o.Name].Float64s(), got[o.Name].Float64s(), tol)
					require.Zero(t, d.Bad, "seed %d, %s: first bad at %d: got %v, want %v", seed, o.Name, d.First,
						got[o.Name].Float64s(), ref.Want[o.Name].Float64s())
				}
			}
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
