package gen_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/ir"
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
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		t.Run(dt.String(), func(t *testing.T) {
			t.Parallel()
			c := compiledGraph(t, softmaxRows(dt), "kept")
			files, err := gen.Emit(c, gen.Options{OutDir: t.TempDir()})
			require.NoError(t, err)
			s := string(files["kernels_amd64.s"])
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
}
