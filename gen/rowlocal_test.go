package gen_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/asmgen"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/ptxgen"
	"github.com/lossgen/lossgen/runtime"
)

// rowZoo builds a [G, N, T] batch (N = 0: a [G, T] batch) whose every kind of reduction
// over a row (over T; over N keeping T; over N and T) feeds elementwise work on the same row,
// with a mask, reductions over every row in both passes of the pair and one over rows in the
// second: all in one row-local pair (plan.RowLocal) over G.
func rowZoo(dt ir.DType, G, N, T int) *ir.Graph {
	b, _ := rowZooBuilder(dt, G, N, T)
	return b.Graph()
}

// rowZooBuilder builds rowZoo's outputs and returns the builder and the normalised x.
func rowZooBuilder(dt ir.DType, G, N, T int) (*ir.Builder, *ir.Node) {
	dims, batch := []ir.Dim{{Name: "G", Size: G}, {Name: "N", Size: N}, {Name: "T", Size: T}}, []string{"G", "N", "T"}
	if N == 0 {
		dims, batch = []ir.Dim{dims[0], dims[2]}, []string{"G", "T"}
	}
	b := ir.NewBuilder(dt, dims, batch)
	in := func(name string, kind ir.ElemKind) *ir.Node {
		return b.Input(ir.Input{Key: name, Name: name, Kind: kind, Shape: b.Shape(batch...)})
	}
	x, y, c := in("x", ir.Float), in("y", ir.Float), in("c", ir.Bool)
	zero, one, half := b.Const(0), b.Const(1), b.Const(0.5)
	out := func(name string, n *ir.Node) { b.Output(name, n, ir.Metric, "", "") }
	count := b.Sum(b.Where(c, one, zero), "T")
	mean := b.Div(b.Sum(b.Where(c, x, zero), "T"), b.Max(count, one))
	norm := b.Div(b.Sub(x, mean), b.Add(b.Std(x, 1, "T"), half))
	out("norm", norm)
	out("var", b.Mul(x, b.Var(y, 0, "T")))
	out("lse", b.Sub(y, b.LogSumExp(y, "T")))
	mx, mn := b.ReduceMax(x, "T"), b.ReduceMin(x, "T")
	out("range", b.Div(b.Sub(x, mn), b.Add(b.Sub(mx, mn), one)))
	out("argmax", b.Mul(y, b.ArgMax(x, "T")))
	out("mean", b.Sub(y, b.Mean(y, "T")))
	if N > 0 {
		out("group", b.Div(b.Sub(x, b.Mean(x, "N")), b.Sqrt(b.Add(b.Var(x, 1, "N"), one))))
		out("block", b.Mul(x, b.Sum(y, "N", "T")))
	}
	out("row_dot", b.Sum(b.Mul(norm, y), "T"))
	out("norm_mean", b.MeanAll(norm))
	out("total", b.SumAll(x))
	return b, norm
}

// TestRowLocalEveryBackend runs rowZoo through the pure-Go and default (AVX2) kernels and the
// PTX kernels in the simulator, in float32 and float64, against the interpreter. The large
// float32 one runs the AVX2 pair in 8 concurrent chunks, each in sweeps of rows, its T a
// masked tail (in float64 its sums of 10⁴–10⁵ terms would exceed the zoo's 1e-14 tolerance
// in any order). The [G, T] one runs the PTX pair as one kernel, a block per row (a row of
// 37 columns: a partial warp; of 300: two sweeps of 256 threads, the second partial).
func TestRowLocalEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	small, large := func(dt ir.DType) *ir.Graph { return rowZoo(dt, 5, 3, 37) },
		func(dt ir.DType) *ir.Graph { return rowZoo(dt, 38, 3, 577) }
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		c := compiledGraph(t, large(dt), "rowzoo")
		pairs := 0
		for _, ps := range c.Plan.Passes {
			if ps.Row != nil && ps.Row.First == ps {
				pairs++
				require.Len(t, ps.Row.Reads, 12, "every statistic the outputs read")
			}
		}
		require.Equal(t, 1, pairs, "the statistics and their readers run as one row-local pair:\n%s", c.Plan)
		t.Run(dt.String()+"/ptx", func(t *testing.T) { t.Parallel(); zooRun(t, small(dt), "ptx") })
		for _, T := range []int{37, 300} {
			t.Run(fmt.Sprintf("%s/rows/T=%d", dt, T), func(t *testing.T) {
				t.Parallel()
				g := rowZoo(dt, 5, 0, T)
				mod, err := ptxgen.Emit(compiledGraph(t, g, "rowzoo").Plan, nil, gogen.Meta{Package: "rowzoo", GenVersion: runtime.GenVersion})
				require.NoError(t, err)
				require.Contains(t, string(mod.PTX), "row-local: one block per G row")
				for _, backend := range []string{"ptx", "go", "default"} {
					zooRun(t, g, backend)
				}
			})
		}
		for _, backend := range []string{"go", "default"} {
			g := small
			if dt == ir.F32 {
				g = large
			}
			t.Run(dt.String()+"/"+backend, func(t *testing.T) { t.Parallel(); zooRun(t, g(dt), backend) })
			t.Run(dt.String()+"/"+backend+"/generic", func(t *testing.T) {
				t.Parallel()
				g := small(dt)
				g.GenericReductions = true
				zooRun(t, g, backend)
			})
		}
	}
	t.Run("float32/default/unmergeable", func(t *testing.T) {
		// A max over every row does not merge across chunks: the large pair runs its sweeps
		// in one piece (plan.RowSchedule), with no chunk count to set.
		t.Parallel()
		b, norm := rowZooBuilder(ir.F32, 38, 3, 577)
		b.Output("peak", b.ReduceMax(norm, "G", "N", "T"), ir.Metric, "", "")
		g := b.Graph()
		c := compiledGraph(t, g, "rowzoo")
		first := c.Plan.Passes[0]
		for first.Row == nil {
			first = c.Plan.Passes[first.Index+1]
		}
		require.Nil(t, first.Schedule.Chunks)
		require.NotContains(t, asmgen.ChunkVars(c.Plan, c.Backward), fmt.Sprintf("pass%dChunks", first.Index))
		zooRun(t, g, "default")
	})
}
