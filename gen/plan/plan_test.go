package plan_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/spec"
)

func build(t *testing.T, file string) *plan.Plan {
	s, err := spec.ParseFile("../../spec/examples/" + file)
	require.NoError(t, err)
	g, err := lower.Lower(s)
	require.NoError(t, err)
	p := plan.Build(g)
	checkValid(t, p)
	return p
}

// checkValid asserts the schedule is executable: every value a pass reads is an input, a
// constant, or stored by an earlier pass; every computed node's arguments are computed
// before it in the same pass or read; every output and reduction is produced exactly once.
func checkValid(t *testing.T, p *plan.Plan) {
	storedBy := map[int]int{} // node ID -> pass
	for _, ps := range p.Passes {
		for _, n := range ps.Stores {
			_, dup := storedBy[n.ID]
			require.False(t, dup, "v%d stored twice", n.ID)
			storedBy[n.ID] = ps.Index
		}
		for _, r := range ps.Reduces {
			_, dup := storedBy[r.ID]
			require.False(t, dup, "v%d reduced twice", r.ID)
			storedBy[r.ID] = ps.Index
		}
	}
	for _, ps := range p.Passes {
		avail := map[int]bool{}
		for _, n := range ps.Loads {
			if n.Op.Class() != ir.Leaf {
				by, ok := storedBy[n.ID]
				require.True(t, ok && by < ps.Index, "pass %d reads v%d before it is stored", ps.Index, n.ID)
			}
			avail[n.ID] = true
		}
		for _, n := range ps.Compute {
			for i, a := range n.Args {
				if n.Op == ir.OpShiftNext || (n.Op == ir.OpGather && i == 0) {
					by, ok := storedBy[a.ID]
					require.True(t, a.Op.Class() == ir.Leaf || (ok && by < ps.Index), "pass %d: v%d reads v%d at other indices before it is complete", ps.Index, n.ID, a.ID)
					continue
				}
				require.True(t, avail[a.ID], "pass %d: v%d needs v%d first", ps.Index, n.ID, a.ID)
			}
			avail[n.ID] = true
		}
		for _, r := range ps.Reduces {
			require.True(t, avail[r.Args[0].ID], "pass %d: reduction v%d of an unavailable value", ps.Index, r.ID)
		}
	}
	for _, o := range p.Graph.Outputs {
		_, ok := storedBy[o.Node.ID]
		require.True(t, ok, "output %s is never stored", o.Name)
	}
}

// ClipPPO + GAE fuses into one reverse-scan pass over the batch that reads every input once
// and writes the two [N, T] outputs; the rest are passes over [T] and scalars.
func TestClipPPOGAEPlan(t *testing.T) {
	p := build(t, "clip_ppo_gae.yaml")
	require.Len(t, p.Passes, 3)
	first := p.Passes[0]
	require.True(t, first.Scan)
	require.Equal(t, "[N=64 T=421]", first.Domain.String())
	reads := map[string]int{}
	for _, ps := range p.Passes {
		for _, n := range ps.Loads {
			if n.Op == ir.OpInput {
				reads[n.Input.Name]++
			}
		}
	}
	for _, in := range p.Graph.Inputs {
		require.Equal(t, 1, reads[in.Name], "input %s is read by %d passes", in.Name, reads[in.Name])
	}
	var stored []string
	for _, n := range first.Stores {
		stored = append(stored, p.Buffer(n).Name)
	}
	require.Equal(t, []string{"advantage", "value_target"}, stored)
	for _, ps := range p.Passes[1:] {
		require.Less(t, ps.Domain.Numel(), 64*421, "only the first pass runs over the batch")
	}
}

// Advantage normalisation is a barrier: the surrogate runs in a later pass than the
// statistics it needs.
func TestNormalizationIsABarrier(t *testing.T) {
	p := build(t, "clip_ppo.yaml")
	var statsPass, lossPass int = -1, -1
	for _, ps := range p.Passes {
		for _, r := range ps.Reduces {
			if r.Op == ir.OpVar && r.Args[0].Op == ir.OpInput && r.Args[0].Input.Name == "advantage" {
				statsPass = ps.Index
			}
		}
		for _, n := range ps.Compute {
			if n.Note == "gain1" {
				lossPass = ps.Index
			}
		}
	}
	require.GreaterOrEqual(t, statsPass, 0)
	require.Greater(t, lossPass, statsPass)
	require.Greater(t, p.Passes[lossPass].Level, p.Passes[statsPass].Level)
}

func TestGAEPlan(t *testing.T) {
	p := build(t, "gae.yaml")
	// average_gae: the scan pass stores the raw advantage; a second pass standardises it.
	require.Len(t, p.Passes, 2)
	require.True(t, p.Passes[0].Scan)
	require.False(t, p.Passes[1].Scan)
	require.Len(t, p.Scratch, 3) // raw advantage, its mean and its variance
}
