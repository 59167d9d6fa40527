package plan_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/passes"
	"github.com/lossgen/lossgen/gen/plan"
)

// A masked token loss's gradient divides by the count of valid tokens, so the count's pass
// runs first; the loss's own sum, which nothing over the batch reads, sinks into the
// gradient's pass, and the first pass reads only the mask. Bytes by hand, [B=4, L=8] float32:
// pass 0 reads mask (32 × 1); pass 1 reads mask, x, y (32 × 9) and the count (4) and writes
// grad_x (32 × 4); the scalar pass reads the two sums (8) and writes loss (4).
func TestSumSinksIntoTheGradientPass(t *testing.T) {
	b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "B", Size: 4}, {Name: "L", Size: 8}}, []string{"B", "L"})
	mask := b.Input(ir.Input{Key: "mask", Name: "mask", Kind: ir.Bool, Shape: b.Shape("B", "L")})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "L")})
	y := b.Input(ir.Input{Key: "y", Name: "y", Kind: ir.Float, Shape: b.Shape("B", "L")})
	m := b.Where(mask, b.Const(1), b.Const(0))
	count := b.Sum(m, "B", "L")
	b.Output("loss", b.Div(b.Sum(b.Mul(m, b.Mul(x, y)), "B", "L"), count), ir.LossTerm, "", "")
	b.Output("grad_x", b.Div(b.Mul(m, y), count), ir.Metric, "", "")
	p := mustBuild(t, b.Graph())

	require.Len(t, p.Passes, 3)
	first, second := p.Passes[0], p.Passes[1]
	require.Equal(t, []*ir.Node{count}, first.Reduces, "the count alone runs first")
	require.Equal(t, []string{"mask"}, inputNames(first))
	require.Len(t, second.Reduces, 1, "the loss's sum runs with the gradient")
	require.ElementsMatch(t, []string{"mask", "x", "y"}, inputNames(second))
	require.Equal(t, 32*1+(32*9+4)+32*4+(8+4), p.Bytes())
	require.Empty(t, p.Passes[2].Domain)
}

// Sinking never moves a result that a pass over the same domain reads: the mean that
// normalises x stays in the first pass.
func TestNormalisationDoesNotSink(t *testing.T) {
	b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "B", Size: 64}}, []string{"B"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B")})
	mean := b.Mean(x, "B")
	b.Output("centred", b.Sub(x, mean), ir.Metric, "", "")
	p := mustBuild(t, b.Graph())
	require.Len(t, p.Passes, 2)
	require.Equal(t, []*ir.Node{mean}, p.Passes[0].Reduces)
}

func inputNames(ps *plan.Pass) []string {
	var out []string
	for _, n := range ps.Loads {
		if n.Op == ir.OpInput {
			out = append(out, n.Input.Name)
		}
	}
	return out
}

// The LLM token losses' ForwardBackward, bytes per token as the plans stream them against
// the bytes a call must move (inputs read once, gradients written once; bool masks 1 byte):
// GSPO's per-sequence sums sink into the pass before their reader, which then runs row by
// row with it, so only the count's pass reads the mask a second time; GRPO's count of the
// tokens KL-Mask keeps reads log_prob and sample_log_prob first (what the math needs);
// distillation's row-local pair first only counts each sequence's tokens (the KL's sums,
// which only the per-sequence pass reads, sink into the second sweep with the gradient).
func TestLLMForwardBackwardBytes(t *testing.T) {
	for _, c := range []struct {
		file        string
		plan, bound float64 // bytes per token
		first       []string
	}{
		{"gspo.yaml", 1 + 13 + 4, 13 + 4, []string{"mask"}},
		{"grpo.yaml", 9 + 21 + 8, 21 + 8, []string{"mask", "log_prob", "sample_log_prob"}},
		{"dapo.yaml", 1 + 17 + 8, 17 + 8, []string{"mask"}},
		{"distillation.yaml", 9 + 4, 9 + 4, []string{"mask"}},
	} {
		fwd := build(t, c.file)
		g, err := passes.Run(fwd.Graph, passes.Backward)
		require.NoError(t, err)
		p := mustBuild(t, g)
		tokens := float64(g.Batch.Numel())
		require.InDelta(t, c.plan, float64(p.Bytes())/tokens, 0.3, "%s: %s", c.file, p)
		require.GreaterOrEqual(t, float64(p.Bytes())/tokens, c.bound, c.file)
		require.Equal(t, c.first, inputNames(p.Passes[0]), "%s: %s", c.file, p)
	}
}
