package gen_test

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime/golden"
)

// softmaxRows builds a categorical's softmax over A = 16 with its entropy and probabilities:
// Σ_a e^s and Σ_a e^s·s in one loop over the actions, p = e^s/Σ e^s stored in a second, which
// reads e^s from the first loop's tile (asmgen/keep.go); s = z − max z ≤ 0, so the entropy's
// Σ e^s·s has terms of one sign and adds in float32 (asmgen's innerF32). B = 13: a full
// block and a tail.
func softmaxRows(dt ir.DType) *ir.Graph {
	dims := []ir.Dim{{Name: "B", Size: 13}, {Name: "A", Size: 16}}
	b := ir.NewBuilder(dt, dims, []string{"B"})
	z := b.Input(ir.Input{Key: "z", Name: "z", Kind: ir.Float, Shape: b.Shape("B", "A")})
	s := b.Sub(z, b.Detach(b.ReduceMax(z, "A")))
	e := b.Exp(s)
	sum := b.Sum(e, "A")
	ent := b.Sub(b.Log(sum), b.Div(b.Sum(b.Mul(e, b.Max(s, b.Const(-dt.MaxFinite()))), "A"), sum))
	b.Output("entropy", b.Mean(ent, "B"), ir.Metric, "", "")
	b.Output("probs", b.Div(e, sum), ir.Metric, "", "")
	return b.Graph()
}

func TestKeptAcrossLoops(t *testing.T) {
	eachDType(t, func(t *testing.T, dt ir.DType) {
		s := graphAsm(t, softmaxRows(dt), "kept")
		pass := regexp.MustCompile(`(?s)TEXT ·pass0AVX2.*?\nTEXT`).FindString(s)
		require.NotEmpty(t, pass)
		// Each block program (the full block, the tail) computes e^s in one loop over A
		// (one exp polynomial, VROUNDP*) and reads it from the tile in the others; without
		// the tile, all three loops over A that read e^s computed it.
		loops := regexp.MustCompile(`(?s)\n(inner_A_\d+):(.*?)\n\tJL +inner_A_\d+`).FindAllStringSubmatch(pass, -1)
		require.Len(t, loops, 7, "a full block's three loops over A, a tail's four (its max)")
		exps := 0
		for i, l := range loops {
			exps += strings.Count(l[2], "VROUNDP")
			if dt == ir.F32 {
				require.NotContains(t, l[2], "VCVTPS2PD", "loop %d adds its sums in float32", i)
			}
		}
		require.Equal(t, 2, exps, "one exp polynomial per block program")
		zooRun(t, softmaxRows(dt), "default")
		zooRun(t, softmaxRows(dt), "go")
	})
}

// exps builds e^x three ways: of a softmax's shifted logits (x − max x ≤ 0: clamped below
// only), of x itself (clamped on both sides) and of x clamped to [−5, 5] by the graph (no
// clamp in the kernel): the value-range facts decide (asmgen expWithin), and a NaN must come
// out NaN through whichever clamps remain.
func exps(dt ir.DType) *ir.Graph {
	dims := []ir.Dim{{Name: "B", Size: 13}, {Name: "A", Size: 16}}
	b := ir.NewBuilder(dt, dims, []string{"B"})
	z := b.Input(ir.Input{Key: "z", Name: "z", Kind: ir.Float, Shape: b.Shape("B", "A")})
	b.Output("shifted", b.Exp(b.Sub(z, b.Detach(b.ReduceMax(z, "A")))), ir.Metric, "", "")
	b.Output("plain", b.Exp(z), ir.Metric, "", "")
	b.Output("clamped", b.Exp(b.Clamp(z, b.Const(-5), b.Const(5))), ir.Metric, "", "")
	return b.Graph()
}

func TestExpClampsKeepNaN(t *testing.T) {
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -200, -104.5, -87.5, 88.5, 89.5, 720, -745, 0, -0.5}
	inputs := func(g *ir.Graph, seed uint64) map[string]golden.Array {
		in := zooInputs(g, seed)
		v := in["z"].Float64s()
		for i := range v {
			if i%5 == int(seed) {
				v[i] = specials[(i/5+int(seed))%len(specials)] // rows with NaN, ±inf and the clamps' edges
			} else {
				v[i] *= 50
			}
		}
		in["z"] = cases.Stored(g.DType, g.Inputs[0], v)
		return in
	}
	eachDType(t, func(t *testing.T, dt ir.DType) {
		// The shifted logits' exp clamps below only, x's on both sides; neither blends (a
		// NaN passes through the clamps).
		asm := graphAsm(t, exps(dt), "exps")
		for name, want := range map[string][2]int{"shifted": {1, 0}, "plain": {1, 1}} {
			code := regexp.MustCompile(`(?s)// ` + name + ` = exp\(.*?\n\n`).FindString(asm)
			require.NotEmpty(t, code, name)
			require.Equal(t, want, [2]int{strings.Count(code, "VMAXP"), strings.Count(code, "VMINP")}, "%s:\n%s", name, code)
			require.NotContains(t, code, "VBLENDVP", name)
		}
		zooRunWith(t, exps(dt), "default", inputs)
		zooRunWith(t, exps(dt), "go", inputs)
	})
}
