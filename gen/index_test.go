package gen_test

import (
	"math"
	"testing"

	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime/golden"
)

// indexGraph reads an int64 input along the vector axis (T = 21: float32's two full blocks
// and a tail, float64's five and a tail) into a sum with a float input and an eq with it.
func indexGraph(dt ir.DType) *ir.Graph {
	dims := []ir.Dim{{Name: "N", Size: 3}, {Name: "T", Size: 21}}
	b := ir.NewBuilder(dt, dims, []string{"N", "T"})
	idx := b.Input(ir.Input{Key: "idx", Name: "idx", Kind: ir.Index, Shape: b.Shape("N", "T")})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("N", "T")})
	b.Output("sum", b.Add(idx, x), ir.Metric, "", "")
	b.Output("eq", b.Eq(idx, b.Const(3)), ir.Metric, "", "")
	return b.Graph()
}

// indexInputs: small indices, int32's extremes and −1 (the packed path of a full AVX2
// block), and per row one block with an index outside int32 (2^40, −2^33 + 7, 2^31: the
// lane-at-a-time path for that block only).
func indexInputs(g *ir.Graph, seed uint64) map[string]golden.Array {
	in := map[string]golden.Array{}
	for _, x := range g.Inputs {
		v := make([]float64, x.Shape.Numel())
		for i := range v {
			switch x.Name {
			case "x":
				v[i] = 0.25 * float64(seed)
			default:
				v[i] = []float64{0, 1, 2, 3, math.MaxInt32, math.MinInt32, -1, 3}[(i+int(seed))%8]
			}
		}
		if x.Name == "idx" {
			v[2] = 1 << 40           // row 0, first block
			v[21+9] = -(1 << 33) + 7 // row 1, second float32 block
			v[42+17] = 1 << 31       // row 2, the float32 tail (the float64 fifth block)
		}
		in[x.Name] = cases.Stored(g.DType, x, v)
	}
	return in
}

// TestIndexLoadsEveryBackend: int64 inputs read as floats on every backend, whole AVX2
// blocks packed through int32 and blocks with an index outside int32 lane by lane, agree
// with the interpreter in both dtypes.
func TestIndexLoadsEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		for _, backend := range []string{"go", "default", "ptx"} {
			t.Run(dt.String()+"/"+backend, func(t *testing.T) {
				t.Parallel()
				zooRunWith(t, indexGraph(dt), backend, indexInputs)
			})
		}
	}
}
