package plan_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/passes"
	"github.com/lossgen/lossgen/gen/plan"
)

// rowGraph is a [B, T] batch x with a per-row normalisation y = (x − mean_T x) / std_T x
// (a stored output) and the mean of y.
func rowGraph(B, T int) (*ir.Builder, *ir.Node, *ir.Node) {
	b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "B", Size: B}, {Name: "T", Size: T}}, []string{"B", "T"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "T")})
	return b, x, b.Div(b.Sub(x, b.Mean(x, "T")), b.Std(x, 1, "T"))
}

// pairs returns p's row-local pairs, checking each: its passes are adjacent and share the
// pair, the second reads from the first's level only the first's row reductions (which keep
// the row dim) and what the first stores, and a row fits the cache bound.
func pairs(t *testing.T, p *plan.Plan) []*plan.RowLocal {
	t.Helper()
	var out []*plan.RowLocal
	for i, ps := range p.Passes {
		rl := ps.Row
		if rl == nil || rl.First != ps {
			continue
		}
		out = append(out, rl)
		require.Less(t, i+1, len(p.Passes))
		require.Same(t, rl.Second, p.Passes[i+1], "a pair's passes run one after the other")
		require.Same(t, rl, rl.Second.Row)
		require.Equal(t, rl.First.Domain, rl.Second.Domain)
		require.Equal(t, rl.First.Level+1, rl.Second.Level)
		require.Equal(t, rl.Dim, ps.Domain[0])
		require.LessOrEqual(t, rl.RowBytes, plan.RowCacheBytes)
		require.NotEmpty(t, rl.Reads)
		for _, r := range rl.Reads {
			require.Contains(t, rl.RowReduces(rl.First), r)
			require.Equal(t, rl.Dim, r.Shape[0])
		}
		for _, n := range rl.Second.Loads {
			if slices.Contains(rl.First.Reduces, n) {
				require.Contains(t, rl.Reads, n, "v%d: the second pass reads a reduction over every row", n.ID)
			}
		}
	}
	return out
}

// A per-row normalisation runs row-local: the statistics and their readers are one pair, x
// is read by the pair only, and the statistics are not a barrier.
func TestRowLocalNormalisation(t *testing.T) {
	b, _, y := rowGraph(64, 1000)
	b.Output("y", y, ir.Metric, "", "")
	b.Output("loss", b.MeanAll(y), ir.LossTerm, "", "")
	g, err := passes.Run(b.Graph(), passes.Forward)
	require.NoError(t, err)
	p := mustBuild(t, g)
	rls := pairs(t, p)
	require.Len(t, rls, 1)
	rl := rls[0]
	require.Equal(t, "B", rl.Dim.Name)
	require.Len(t, rl.Reads, 2, "the mean and the std of each row")
	require.Equal(t, 2*4*1000+2*4, rl.RowBytes, "x read and y written, the row's mean and std read, float32")
	for _, ps := range p.Passes {
		if ps.Row == nil {
			require.Less(t, ps.Domain.Numel(), 64*1000, "pass %d sweeps the batch outside the pair", ps.Index)
		}
	}
	require.Contains(t, p.String(), "row-local: runs row by row over B=64 with pass 1 (8008 bytes a row, at most 262144)")
	require.Contains(t, p.String(), "row-local: second sweep of each B row of pass 0")
}

// A row that does not fit the cache bound keeps the barrier.
func TestRowLocalBound(t *testing.T) {
	T := plan.RowCacheBytes / 8 // x, y, 4 bytes each, and 8 bytes of statistics: 8 too many
	b, _, y := rowGraph(2, T)
	b.Output("y", y, ir.Metric, "", "")
	p := mustBuild(t, b.Graph())
	require.Empty(t, pairs(t, p))
	require.Len(t, p.Passes, 2)
	require.Greater(t, p.Passes[1].Level, p.Passes[0].Level)

	b, _, y = rowGraph(2, T-1)
	b.Output("y", y, ir.Metric, "", "")
	require.Len(t, pairs(t, mustBuild(t, b.Graph())), 1)
}

// What is not complete after one row stays a barrier: a reduction over the row dim itself,
// or one over every element read beside a row reduction.
func TestRowLocalOnlyWithinARow(t *testing.T) {
	b, x, _ := rowGraph(64, 100)
	b.Output("y", b.Sub(x, b.Mean(x, "B")), ir.Metric, "", "")
	require.Empty(t, pairs(t, mustBuild(t, b.Graph())), "a mean over B")

	b, x, _ = rowGraph(64, 100)
	b.Output("y", b.Sub(b.Sub(x, b.Mean(x, "T")), b.MeanAll(x)), ir.Metric, "", "")
	p := mustBuild(t, b.Graph())
	require.Empty(t, pairs(t, p), "the mean over every element is not ready after a row")
	require.Len(t, p.Passes, 2)
}

// GSPO's sequence ratio (a masked mean over each sequence's tokens) runs row-local: Forward
// reads every [B, L] input once, in one pair. GRPO's token-mean gradient divides by the
// count of kept tokens over the whole batch, which stays a barrier.
func TestRowLocalLLMExamples(t *testing.T) {
	p := build(t, "gspo.yaml")
	rls := pairs(t, p)
	require.Len(t, rls, 1)
	var notes []string
	for _, r := range rls[0].Reads {
		require.Equal(t, ir.OpSum, r.Op)
		require.Equal(t, []string{"L"}, r.Axes)
		notes = append(notes, r.Note)
	}
	require.Contains(t, notes, "sequence_length")
	for _, ps := range p.Passes {
		for _, n := range ps.Loads {
			if n.Op == ir.OpInput && len(n.Shape) == 2 {
				require.NotNil(t, ps.Row, "pass %d reads %s outside the pair", ps.Index, n.Input.Name)
			}
		}
	}
	require.Empty(t, pairs(t, build(t, "grpo.yaml")))
	for _, f := range []string{"cispo.yaml", "distillation.yaml", "mc_advantage_grpo.yaml", "clip_ppo.yaml", "gae.yaml"} {
		pairs(t, build(t, f))
	}
}

// rowSchedule returns the schedule of p's only row-local pair, checking that both of its
// passes share it and its chunks.
func rowSchedule(t *testing.T, p *plan.Plan) (*plan.RowLocal, *plan.RowSchedule, *plan.Chunking) {
	t.Helper()
	rls := pairs(t, p)
	require.Len(t, rls, 1)
	rl := rls[0]
	s1, s2 := rl.First.Schedule, rl.Second.Schedule
	require.NotNil(t, s1.Row)
	require.Same(t, s1.Row, s2.Row, "one schedule for the pair")
	require.Same(t, s1.Chunks, s2.Chunks, "one chunking for the pair")
	for _, ps := range p.Passes {
		if ps.Row == nil {
			require.Nil(t, ps.Schedule.Row, "pass %d", ps.Index)
		}
	}
	return rl, s1.Row, s1.Chunks
}

// The normalisation pair's schedule: sweeps of as many 8008-byte rows as fit 256 KiB (32),
// chunks of rows merging the loss's mean over every element (one piece below ChunkElems
// elements, MaxChunks from it on), and on the GPU one kernel with a block of 256 threads per
// row of 1000 columns.
func TestRowLocalSchedule(t *testing.T) {
	for _, tc := range []struct{ B, count int }{{64, 1}, {66, 8}} { // 64·1000 < 2^16 ≤ 66·1000
		b, _, y := rowGraph(tc.B, 1000)
		b.Output("y", y, ir.Metric, "", "")
		loss := b.MeanAll(y)
		b.Output("loss", loss, ir.LossTerm, "", "")
		p := mustBuild(t, b.Graph())
		rl, rs, c := rowSchedule(t, p)
		require.Equal(t, 262144/8008, rs.Sweep)
		require.NotNil(t, c)
		require.Equal(t, plan.Chunking{Dim: "B", Align: 1, Count: tc.count, Merge: rl.Second.Reduces}, *c, "B=%d", tc.B)
		require.Len(t, c.Merge, 1)
		require.Equal(t, ir.OpMean, c.Merge[0].Op)
		require.Equal(t, plan.RowGPU{Fused: true, Grid: tc.B, Block: 256}, rs.GPU)
		out := p.String()
		require.Contains(t, out, fmt.Sprintf("    sweeps: 32 B row(s) at a time (of %d), pass 0 then pass 1 over them\n", tc.B))
		require.Contains(t, out, fmt.Sprintf("    chunks: %d along B (%d units: rows) of passes 0 and 1, whole sweeps; merged in chunk order: v%d\n", tc.count, tc.B, c.Merge[0].ID))
		require.Contains(t, out, fmt.Sprintf("    gpu: one kernel with pass 1: a block per B row, grid %d × block 256, threads striding over T[1000]; finished by each row's block: ", tc.B))
		require.Contains(t, out, "    gpu: in pass 0's kernel\n")
	}
}

// A pair whose reduction over every row does not merge across chunks (a max) runs its
// sweeps in one piece, however large.
func TestRowLocalUnmergeableInOnePiece(t *testing.T) {
	b, _, y := rowGraph(128, 1000)
	b.Output("y", y, ir.Metric, "", "")
	b.Output("peak", b.ReduceMax(y, "B", "T"), ir.Metric, "", "")
	p := mustBuild(t, b.Graph())
	_, rs, c := rowSchedule(t, p)
	require.Nil(t, c)
	require.True(t, rs.GPU.Fused, "a block reduction merges on the GPU")
	require.Contains(t, p.String(), "    chunks: none (one piece)\n")
}

// A pair the GPU cannot run a block per row of (a reduction keeping the columns) runs as
// two kernels, each with its own mapping, and explain says why.
func TestRowLocalTwoKernels(t *testing.T) {
	b, _, y := rowGraph(64, 100)
	b.Output("y", y, ir.Metric, "", "")
	colSum := b.Sum(y, "B")
	b.Output("colsum", colSum, ir.Metric, "", "")
	p := mustBuild(t, b.Graph())
	rl, rs, c := rowSchedule(t, p)
	require.False(t, rs.GPU.Fused)
	require.Equal(t, fmt.Sprintf("v%d keeps [T=100], neither one value per row nor one in all", colSum.ID), rs.GPU.Unfused)
	require.NotNil(t, c, "a sum over the rows merges")
	require.Nil(t, rl.Second.Schedule.GPU.Unmapped)
	require.Contains(t, p.String(), fmt.Sprintf("; a kernel of its own, not one with pass 0: v%d keeps [T=100]", colSum.ID))
	require.Contains(t, p.String(), fmt.Sprintf("; a kernel of its own, not one with pass 1: v%d keeps [T=100]", colSum.ID))
}
