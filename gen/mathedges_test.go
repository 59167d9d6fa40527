package gen_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/runtime/vmath"
)

// The float64 edges where math's amd64 assembly is wrong: math.Exp is +Inf from 709.436 to
// ln MaxFloat64 ≈ 709.783, where e^x is finite, and math.Log of a subnormal is off by up to
// 35 (−709.09 for the smallest, whose log is −1074·ln 2 = −744.44). The interpreter and the
// pure-Go kernels use vmath's, which are right there.
var (
	expEdges = []float64{709, 709.4361393031039, 709.4361393031040, 709.5, 709.78, 709.782712893384, 710, -745.2}
	logEdges = []float64{5e-324, 1e-310, 0x1p-1030, 2e-308, 0x1p-1022, 1, 0, -1}
)

func mathEdgesGraph() *ir.Graph {
	b := ir.NewBuilder(ir.F64, []ir.Dim{{Name: "N", Size: len(expEdges)}}, []string{"N"})
	in := func(name string) *ir.Node {
		return b.Input(ir.Input{Key: name, Name: name, Kind: ir.Float, Shape: b.Shape("N")})
	}
	b.Output("exp", b.Exp(in("x")), ir.Metric, "", "")
	b.Output("log", b.Log(in("y")), ir.Metric, "", "")
	return b.Graph()
}

func mathEdgesInputs(g *ir.Graph, _ uint64) map[string]golden.Array {
	return map[string]golden.Array{
		"x": cases.Stored(ir.F64, g.Inputs[0], expEdges),
		"y": cases.Stored(ir.F64, g.Inputs[1], logEdges),
	}
}

// TestFloat64ExpLogEdges holds the interpreter to known values at those edges, and every
// backend (pure Go, AVX2, PTX in the simulator) to the interpreter there (relative 1e-14).
func TestFloat64ExpLogEdges(t *testing.T) {
	g := mathEdgesGraph()
	ref := golden.Case{Inputs: mathEdgesInputs(g, 0)}
	require.NoError(t, cases.Want(g, &ref))
	exp, log := ref.Want["exp"].Float64s(), ref.Want["log"].Float64s()
	for i, x := range expEdges {
		switch {
		case x >= 710:
			require.True(t, math.IsInf(exp[i], 1), "e^%v", x)
		case x < -745:
			require.Zero(t, exp[i], "e^%v", x)
		default: // e^x = e^(x−1)·e, both sides within a few ulps
			want := math.Exp(x-1) * math.E
			require.False(t, math.IsInf(exp[i], 0), "e^%v is finite", x)
			require.LessOrEqual(t, vmath.ULP64(exp[i], want), 4.0, "e^%v = %v, want %v", x, exp[i], want)
		}
	}
	for i, y := range logEdges {
		switch {
		case y < 0:
			require.True(t, math.IsNaN(log[i]))
		case y == 0:
			require.True(t, math.IsInf(log[i], -1))
		default: // log(m·2^k) = log(m) + k·ln 2 with m·2^k exact
			m, k := math.Frexp(y)
			if y < 0x1p-1022 {
				m, k = math.Frexp(y * 0x1p60)
				k -= 60
			}
			want := math.Log(m) + float64(k)*math.Ln2
			require.LessOrEqual(t, vmath.ULP64(log[i], want), 2.0, "log %v = %v, want %v", y, log[i], want)
		}
	}
	require.InDelta(t, -1074*math.Ln2, log[0], 1e-12)
	if testing.Short() {
		return
	}
	for _, backend := range []string{"go", "default", "ptx"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			zooRunWith(t, mathEdgesGraph(), backend, mathEdgesInputs)
		})
	}
}
