package gen_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime/golden"
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
	eachDType(t, func(t *testing.T, dt ir.DType) {
		s := graphAsm(t, tiled(dt), "tiled")
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

// TestTileMaxMinSpecials runs the pairwise max and min over tiles (asmgen tileReduce), and a
// log-softmax shifted by a stabiliser max, on rows holding NaN, ±inf and signed zeros in full
// blocks and in the tail, on every backend, against the interpreter: a NaN anywhere in a row
// gives NaN, wherever it sits in the row.
// (Zeros compare equal: the interpreter keeps a row's first zero, AVX2 prefers +0 for the
// max and −0 for the min, in its loops as in its trees.)
func TestTileMaxMinSpecials(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		t.Run(dt.String(), func(t *testing.T) {
			t.Parallel()
			dims := []ir.Dim{{Name: "B", Size: 21}, {Name: "A5", Size: 5}, {Name: "A16", Size: 16}}
			b := ir.NewBuilder(dt, dims, []string{"B"})
			for _, a := range []string{"A5", "A16"} {
				q := b.Input(ir.Input{Key: "q" + a, Name: "q" + a, Kind: ir.Float, Shape: b.Shape("B", a)})
				b.Output("max_"+a, b.ReduceMax(q, a), ir.Metric, "", "")
				b.Output("min_"+a, b.ReduceMin(q, a), ir.Metric, "", "")
				// A log-softmax's stabiliser (a plain VMAXPS tree): a NaN anywhere in the row
				// makes the row NaN through its sum whatever the maximum, ±0 shift alike.
				s := b.Sub(q, b.Detach(b.StabiliserMax(q, a)))
				b.Output("log_softmax_"+a, b.Sub(s, b.Log(b.Sum(b.Exp(s), a))), ir.Metric, "", "")
			}
			g := b.Graph()
			c := compiledGraph(t, g, "tilemax")
			files, err := gen.Emit(c, gen.Options{OutDir: t.TempDir()})
			require.NoError(t, err)
			for _, s := range []string{"max(qA16) over [A16], pairwise", "min(qA16) over [A16], pairwise", "max(qA5) over [A5], pairwise"} {
				require.True(t, strings.Contains(string(files["kernels_amd64.s"]), s), s)
			}
			negz := math.Copysign(0, -1)
			in, want := perturb(g, func(key string, v []float64) {
				s := 5
				if key == "qA16" {
					s = 16
				}
				for row := range 21 {
					x := v[row*s : (row+1)*s]
					switch k := (row * 7) % s; row % 6 {
					case 0: // NaN at a row-dependent place
						x[k] = math.NaN()
					case 1: // only signed zeros, +0 at one place
						for i := range x {
							x[i] = negz
						}
						x[k] = 0
					case 2: // only signed zeros, −0 at one place
						for i := range x {
							x[i] = 0
						}
						x[k] = negz
					case 3:
						x[k], x[(k+1)%s] = math.Inf(1), math.Inf(-1)
					case 4:
						for i := range x {
							x[i] = math.Inf(-1)
						}
					}
				}
			})
			for name, out := range backends(t, c)(in) {
				for _, o := range g.Outputs {
					w, got := want.Want[o.Name].Float64s(), out[o.Name].Float64s()
					tol := golden.Tol{} // max and min: exact
					if strings.HasPrefix(o.Name, "log_softmax") {
						tol = golden.Tol{Abs: 1e-6, Rel: 1e-6}
						if dt == ir.F64 {
							tol = golden.Tol{Abs: 1e-14, Rel: 1e-14}
						}
					}
					sameSpecials(t, name+" "+o.Name, w, got, tol)
				}
			}
		})
	}
}
