package plan_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/passes"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/spec"
)

// buildSrc plans the forward graph of a spec given as YAML (package p).
func buildSrc(t *testing.T, src string) *plan.Plan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte("package: p\n"+src), 0o644))
	s, err := spec.ParseFile(path, lower.Registry())
	require.NoError(t, err)
	g, _, err := lower.Lower(s)
	require.NoError(t, err)
	g, err = passes.Run(g, passes.Forward)
	require.NoError(t, err)
	return mustBuild(t, g)
}

// A flat float32 batch is cut along its only dim in whole 16-element blocks (one of the
// AVX-512 variants, two of AVX2): 8 chunks from 2^16 elements on, 1 below (a test may still
// set more), none under two blocks.
func TestFlatBatchChunksInBlocks(t *testing.T) {
	for _, tc := range []struct {
		b, count int
	}{{100003, 8}, {4096, 1}, {31, 0}} {
		p := buildSrc(t, fmt.Sprintf("dims: {B: %d}", tc.b)+"\nbatch: [B]\nloss: {type: clip_ppo, normalize_advantage: true}\n")
		ps := p.Passes[0]
		require.Equal(t, "B", ps.Domain[0].Name)
		s := ps.Schedule
		require.Equal(t, 8, s.Lanes)
		if tc.count == 0 {
			require.Nil(t, s.Chunks, "B=%d", tc.b)
			continue
		}
		require.NotNil(t, s.Chunks, "B=%d", tc.b)
		require.Equal(t, plan.Chunking{Dim: "B", Align: 16, Count: tc.count, Merge: ps.Reduces}, *s.Chunks)
		require.Equal(t, tc.b/16, s.Chunks.Units(ps.Domain))
		for _, r := range ps.Reduces {
			require.Equal(t, 8, s.LanesPerSlot(p.Graph, r), "v%d reduces the vector axis: one state per lane", r.ID)
		}
	}
}

// ClipPPO+GAE on [N, T]: the reverse scan along T runs T backwards and cuts N into rows;
// the GPU runs one thread per row, each walking T; no store is non-temporal.
func TestScanPassSchedule(t *testing.T) {
	p := buildSrc(t, "dims: {N: 64, T: 1100}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\nloss: {type: clip_ppo}\n")
	ps := p.Passes[0]
	require.NotNil(t, ps.Scan)
	s := ps.Schedule
	require.Equal(t, []plan.DomainLoop{{Dim: ps.Domain[0]}, {Dim: ps.Domain[1], Reverse: true}}, s.Loops)
	require.Equal(t, &plan.Chunking{Dim: "N", Align: 1, Count: 8, Merge: ps.Reduces}, s.Chunks)
	require.False(t, s.NonTemporal())
	for _, n := range ps.Stores {
		require.Equal(t, plan.Regular, s.Stores[n.ID])
		require.True(t, ps.NonTemporalEligible(n) == (1100%8 == 0))
	}
	g := s.GPU
	require.Nil(t, g.Unmapped)
	require.True(t, g.Scan)
	require.Equal(t, []string{"N"}, g.Thread.Names())
	require.Equal(t, []string{"T"}, g.Loop.Names())
	require.Equal(t, [3]int{64, 1, 64}, [3]int{g.Threads, g.Grid, g.Block})
	require.Len(t, g.Reductions, len(ps.Reduces))
	for _, r := range g.Reductions {
		require.True(t, r.Block, "v%d reduces N, the thread dim", r.Node.ID)
	}
}

// A scan along the first dim cannot be cut into rows (its carry crosses them).
func TestScanAlongFirstDimIsNotChunked(t *testing.T) {
	p := buildSrc(t, "dims: {T: 1100, N: 64}\nbatch: [T, N]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95, time_dim: 0}\n")
	scans := 0
	for _, ps := range p.Passes {
		if ps.Scan != nil {
			scans++
			require.Equal(t, "T", ps.Scan.Axis)
			require.Equal(t, "T", ps.Domain[0].Name)
			require.Nil(t, ps.Schedule.Chunks)
		}
	}
	require.Equal(t, 1, scans)
}

// GridFor fills whole warps, at most MaxBlock threads a block.
func TestGridFor(t *testing.T) {
	for n, want := range map[int][2]int{1: {1, 32}, 33: {1, 64}, 256: {1, 256}, 257: {2, 256}, 4096: {16, 256}} {
		grid, block := plan.GridFor(n)
		require.Equal(t, want, [2]int{grid, block}, "n=%d", n)
	}
}

// Two reductions keeping different loop dims of a [A, B, C] batch cannot both have theirs
// outermost on the GPU: the planner moves the second to a pass of its own at the next level
// (raiseUnmappedReductions), where it maps; the first stays where it was.
func TestUnmappedReductionMovesToItsOwnPass(t *testing.T) {
	b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "A", Size: 2}, {Name: "B", Size: 3}, {Name: "C", Size: 37}}, []string{"A", "B", "C"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("A", "B", "C")})
	overB, overA := b.Sum(x, "B"), b.Sum(x, "A")
	b.Output("overB", overB, ir.Metric, "", "")
	b.Output("overA", overA, ir.Metric, "", "")
	p := mustBuild(t, b.Graph())
	var levels []int
	for _, ps := range p.Passes {
		require.Nil(t, ps.Schedule.GPU.Unmapped, "pass %d", ps.Index)
		require.Len(t, ps.Reduces, 1, "pass %d", ps.Index)
		levels = append(levels, ps.Level)
	}
	require.Equal(t, []int{0, 1}, levels)
	require.Equal(t, overB.ID, p.Passes[0].Reduces[0].ID)
	require.Equal(t, overA.ID, p.Passes[1].Reduces[0].ID)
	require.NotContains(t, p.String(), "gpu: not mapped: ")
}

// The store policy (see storePolicy's measurements): ClipPPO+GAE's ForwardBackward on
// [4096, 4096] stores half the bytes of its pass after the scan (advantage, value_target and
// three gradients) and goes non-temporal there, and so does the scan pass before it (22%),
// in Forward too, where the pass after the scan stores 29%; a flat 16M ClipPPO's
// ForwardBackward (30%) goes non-temporal, its Forward stores nothing large; GSPO's gradient
// pass at B = 512, L = 4096 (26 MiB alone, 34 MiB with its row-local first sweep) goes
// non-temporal, at L = 1024 (8.5 MiB for both sweeps) it stays regular; so does everything
// small.
func TestStorePolicy(t *testing.T) {
	fwdBwd := func(src string) (*plan.Plan, *plan.Plan) {
		f := buildSrc(t, src)
		g, err := passes.Run(f.Graph, passes.Backward)
		require.NoError(t, err)
		return f, mustBuild(t, g)
	}
	nt := func(p *plan.Plan) []int {
		var out []int
		for _, ps := range p.Passes {
			for _, n := range ps.Stores {
				if ps.Schedule.Stores[n.ID] == plan.NonTemporal {
					out = append(out, ps.Index)
					break
				}
			}
		}
		return out
	}
	f, fb := fwdBwd("dims: {N: 4096, T: 4096}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\nloss: {type: clip_ppo, normalize_advantage: true, clip_value: true}\n")
	require.Equal(t, []int{0, 1}, nt(f))
	require.Equal(t, []int{0, 1}, nt(fb))
	require.True(t, fb.Passes[1].Schedule.NonTemporal())
	f, fb = fwdBwd("dims: {B: 16777216}\nbatch: [B]\nloss: {type: clip_ppo, normalize_advantage: true, clip_value: true}\n")
	require.Empty(t, nt(f))
	require.Equal(t, []int{1}, nt(fb))
	gspo := "dtype: float32\nbatch: [B, L]\nloss: {type: gspo}\nkeys: {mask: mask}\ndims: {B: 512, L: "
	f, fb = fwdBwd(gspo + "4096}\n")
	require.Empty(t, nt(f))
	require.NotNil(t, fb.Passes[2].Row)
	require.Less(t, fb.PassBytes(fb.Passes[2]), plan.LargePass)
	require.Equal(t, []int{2}, nt(fb))
	f, fb = fwdBwd(gspo + "1024}\n")
	require.Empty(t, nt(f))
	require.Empty(t, nt(fb))
	f, fb = fwdBwd("dims: {N: 64, T: 421}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\nloss: {type: clip_ppo}\n")
	require.Empty(t, nt(f))
	require.Empty(t, nt(fb))
}
