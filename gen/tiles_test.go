package gen_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/ir"
)

// tiled builds a graph whose inner dims follow the batch dim, so the AVX2 kernel's full
// blocks read them through transposed tiles (asmgen/tile.go): rows shorter than a vector
// (A3), longer with a masked last group (A13), whole vectors (A16), a dim before the batch
// (the ensemble Q, a row per member), two inner dims after it ([B, K, A3]), and results
// written from inside the inner loops (flushed tiles), one of them with Q before the batch.
// B = 21 holds full float32 and float64 blocks and a tail of each, which keeps its gathers.
func tiled(dt ir.DType) *ir.Graph {
	dims := []ir.Dim{{Name: "Q", Size: 2}, {Name: "B", Size: 21}, {Name: "K", Size: 3}, {Name: "A3", Size: 3}, {Name: "A13", Size: 13}, {Name: "A16", Size: 16}}
	b := ir.NewBuilder(dt, dims, []string{"B"})
	in := func(name string, shape ...string) *ir.Node {
		return b.Input(ir.Input{Key: name, Name: name, Kind: ir.Float, Shape: b.Shape(shape...)})
	}
	out := func(name string, n *ir.Node) { b.Output(name, n, ir.Metric, "", "") }
	for _, a := range []string{"A3", "A13", "A16"} {
		q := in("q"+a, "B", a)
		m := b.ReduceMax(q, a)
		e := b.Exp(b.Sub(q, m))
		s := b.Sum(e, a)
		out("softmax_"+a, b.Div(e, s))
		out("entropy_"+a, b.Sub(b.Log(s), b.Div(b.Sum(b.Mul(e, b.Sub(q, m)), a), s)))
		out("lse_"+a, b.LogSumExp(q, a))
	}
	e := in("e", "Q", "B", "A13")
	out("min_Q_sum", b.ReduceMin(b.Sum(b.Mul(e, e), "A13"), "Q"))
	out("e_scaled", b.Mul(e, b.Const(0.5))) // [Q, B, A13], stored from inside the loops
	v := in("v", "B", "K", "A3")
	sup := b.ConstTensor(b.Shape("K"), []float64{-1, 0.5, 2})
	out("expect", b.Sum(b.Mul(b.Exp(v), sup), "K"))
	out("v_max_K", b.ReduceMax(v, "K"))
	return b.Graph()
}

func TestInnerDimTiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		t.Run(dt.String(), func(t *testing.T) {
			t.Parallel()
			c := compiledGraph(t, tiled(dt), "tiled")
			files, err := gen.Emit(c, gen.Options{OutDir: t.TempDir()})
			require.NoError(t, err)
			s := string(files["kernels_amd64.s"])
			// Every tensor with inner dims is read (written) through a tile in full blocks.
			for _, name := range []string{"qA3", "qA13", "qA16", "e", "v"} {
				require.Contains(t, s, "// tile "+name+"\n")
			}
			for _, name := range []string{"softmaxA3", "softmaxA16", "eScaled"} {
				require.Contains(t, s, "// flush the tile of "+name+"\n")
			}
			zooRun(t, tiled(dt), "default")
		})
	}
}
