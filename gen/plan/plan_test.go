package plan_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/passes"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/spec"
)

func build(t *testing.T, file string) *plan.Plan {
	s, err := spec.ParseFile("../../spec/examples/"+file, lower.Registry())
	require.NoError(t, err)
	g, _, err := lower.Lower(s)
	require.NoError(t, err)
	g, err = passes.Run(g, passes.Forward)
	require.NoError(t, err)
	return mustBuild(t, g)
}

func mustBuild(t *testing.T, g *ir.Graph) *plan.Plan {
	t.Helper()
	p, err := plan.Build(g)
	require.NoError(t, err)
	checkValid(t, p)
	return p
}

// checkValid asserts the schedule is executable: every value a pass reads is an input, a
// constant, or stored by an earlier pass; every computed node's arguments are available
// where it is computed (in its block or an enclosing one); inner loops run over non-batch
// dims only; inner reductions are initialised, accumulated in their loop and finished after
// it; every output and barrier reduction is produced exactly once.
func checkValid(t *testing.T, p *plan.Plan) {
	t.Helper()
	g := p.Graph
	storedBy := map[int]int{} // node ID -> pass
	var stores func(ps *plan.Pass, bl *plan.Block)
	stores = func(ps *plan.Pass, bl *plan.Block) {
		for _, st := range bl.Steps {
			switch st.Kind {
			case plan.Store:
				by, dup := storedBy[st.Node.ID]
				require.False(t, dup && by != ps.Index, "v%d stored by two passes", st.Node.ID)
				storedBy[st.Node.ID] = ps.Index
			case plan.Loop:
				stores(ps, st.Block)
			}
		}
	}
	for _, ps := range p.Passes {
		stores(ps, ps.Body)
		for _, r := range ps.Reduces {
			_, dup := storedBy[r.ID]
			require.False(t, dup, "v%d reduced twice", r.ID)
			require.False(t, g.InnerReduce(r), "v%d: an inner reduction as a barrier", r.ID)
			storedBy[r.ID] = ps.Index
		}
	}
	inMemory := func(ps *plan.Pass, n *ir.Node) bool {
		by, ok := storedBy[n.ID]
		return n.Op.Class() == ir.Leaf || (ok && by < ps.Index)
	}
	for _, ps := range p.Passes {
		for _, d := range ps.Domain {
			require.True(t, g.IsBatch(d.Name), "pass %d loops over %s, not a batch dim", ps.Index, d.Name)
		}
		accumulated := map[int]bool{}
		var walk func(bl *plan.Block, avail map[int]bool)
		walk = func(bl *plan.Block, avail map[int]bool) {
			initDone := map[int]bool{}
			for _, st := range bl.Steps {
				n := st.Node
				switch st.Kind {
				case plan.Load:
					require.True(t, inMemory(ps, n), "pass %d reads v%d before it is stored", ps.Index, n.ID)
					avail[n.ID] = true
				case plan.Compute:
					for i, a := range n.Args {
						if (n.Op.Class() == ir.Shift || n.Op.Class() == ir.Gather) && i == 0 {
							require.True(t, inMemory(ps, a), "pass %d: v%d reads v%d at other indices before it is complete", ps.Index, n.ID, a.ID)
							continue
						}
						require.True(t, avail[a.ID], "pass %d: v%d needs v%d first", ps.Index, n.ID, a.ID)
					}
					require.True(t, bl.Bound.SubOf(bl.Bound) && g.InnerPart(n.Shape).SubOf(bl.Bound), "pass %d: v%d computed outside the loops over its dims", ps.Index, n.ID)
					avail[n.ID] = true
				case plan.Store:
					require.True(t, avail[n.ID], "pass %d stores v%d before computing it", ps.Index, n.ID)
				case plan.Accumulate:
					require.True(t, avail[n.Args[0].ID], "pass %d: reduction v%d of an unavailable value", ps.Index, n.ID)
					accumulated[n.ID] = true
				case plan.Init:
					initDone[n.ID] = true
				case plan.Finish:
					require.True(t, initDone[n.ID] && accumulated[n.ID], "pass %d: v%d finished before its loop", ps.Index, n.ID)
					avail[n.ID] = true
				case plan.Loop:
					for _, d := range st.Block.Dims {
						require.False(t, g.IsBatch(d.Name), "pass %d: inner loop over batch dim %s", ps.Index, d.Name)
						require.False(t, bl.Bound.Has(d.Name), "pass %d: a loop over %s inside a loop over %s", ps.Index, d.Name, d.Name)
					}
					inner := map[int]bool{}
					for k, v := range avail {
						inner[k] = v
					}
					walk(st.Block, inner)
				}
			}
		}
		walk(ps.Body, map[int]bool{})
		for _, r := range ps.Reduces {
			require.True(t, accumulated[r.ID], "pass %d never accumulates v%d", ps.Index, r.ID)
		}
	}
	for _, o := range g.Outputs {
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
	require.Equal(t, &plan.ScanAxis{Axis: "T", Reverse: true}, first.Scan)
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
			if r.Op == ir.OpStd && r.Args[0].Op == ir.OpInput && r.Args[0].Input.Name == "advantage" {
				statsPass = ps.Index
			}
		}
		for _, n := range ps.Compute {
			if n.Note == "gain" {
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
	require.NotNil(t, p.Passes[0].Scan)
	require.Nil(t, p.Passes[1].Scan)
	require.Len(t, p.Scratch, 3) // raw advantage, its mean and its variance
}

// graph is a small hand-built graph for planner tests: a [B=5, T=4] batch with an action dim
// A=3 and an ensemble dim Q=2.
func graph() (*ir.Builder, map[string]*ir.Node) {
	b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "Q", Size: 2}, {Name: "B", Size: 5}, {Name: "T", Size: 4}, {Name: "A", Size: 3}}, []string{"B", "T"})
	in := map[string]*ir.Node{}
	for _, x := range []struct {
		name string
		kind ir.ElemKind
		dims []string
	}{{"x", ir.Float, []string{"B", "T"}}, {"z", ir.Float, []string{"B", "T", "A"}}, {"a", ir.Index, []string{"B", "T"}}, {"q", ir.Float, []string{"Q", "B", "T"}}} {
		in[x.name] = b.Input(ir.Input{Key: x.name, Name: x.name, Kind: x.kind, Shape: b.Shape(x.dims...)})
	}
	return b, in
}

// A shift or gather whose result feeds further elementwise work is computed where it is
// used, reading its operand from memory (it used to be loaded from a buffer nothing stored).
func TestShiftAndGatherFeedWork(t *testing.T) {
	b, in := graph()
	x, z, a := in["x"], in["z"], in["a"]
	b.Output("d", b.Sub(b.ShiftNext(x, x, "T"), x), ir.Metric, "", "")
	b.Output("e", b.Exp(b.Gather(z, a, "A")), ir.Metric, "", "")
	p := mustBuild(t, b.Graph())
	require.Len(t, p.Passes, 1, "both are elementwise work over the batch")
	require.Empty(t, p.Scratch)
}

// A reduction over a non-batch dim is finished inside the element loop: log-softmax over
// the action dim, gathered at the action, is one pass with no scratch buffer, and the
// [B, T, A] gradient-like output is stored from inside a loop over A.
func TestInnerReductionIsNotABarrier(t *testing.T) {
	b, in := graph()
	z, a := in["z"], in["a"]
	m := b.ReduceMax(z, "A")
	zs := b.Sub(z, m)
	lse := b.Log(b.Sum(b.Exp(zs), "A"))
	lp := b.Sub(zs, lse)
	b.Output("log_prob", b.Gather(lp, a, "A"), ir.Metric, "", "")
	b.Output("probs", b.Exp(lp), ir.Metric, "", "")
	b.Output("mean_lp", b.MeanAll(b.Gather(lp, a, "A")), ir.LossTerm, "", "")
	g, err := passes.Run(b.Graph(), passes.Forward)
	require.NoError(t, err)
	p := mustBuild(t, g)
	require.Len(t, p.Passes, 1)
	require.Empty(t, p.Scratch)
	loops := 0
	var walk func(bl *plan.Block)
	walk = func(bl *plan.Block) {
		for _, st := range bl.Steps {
			if st.Kind == plan.Loop {
				loops++
				require.Equal(t, "[A=3]", st.Block.Dims.String())
				walk(st.Block)
			}
		}
	}
	walk(p.Passes[0].Body)
	require.Equal(t, 3, loops, "the max, the sum of exponentials, the stores of probs")
	require.Len(t, p.Passes[0].Inner, 2)
}

// Scans of two directions in one domain run in two passes, in order.
func TestScanDirections(t *testing.T) {
	b, in := graph()
	x := in["x"]
	half := b.Const(0.5)
	b.Output("rev", b.Scan(x, half, "T", true, false), ir.Estimate, "", "")
	b.Output("fwd", b.Scan(x, half, "T", false, false), ir.Estimate, "", "")
	b.Output("time_major", b.Scan(x, half, "B", true, false), ir.Estimate, "", "")
	p := mustBuild(t, b.Graph())
	require.Len(t, p.Passes, 3)
	var dirs []plan.ScanAxis
	for _, ps := range p.Passes {
		dirs = append(dirs, *ps.Scan)
	}
	require.ElementsMatch(t, []plan.ScanAxis{{Axis: "T", Reverse: true}, {Axis: "T", Reverse: false}, {Axis: "B", Reverse: true}}, dirs)
}

// Gradients are fused: ForwardBackward's plan runs as many passes over the batch as Forward's
// (the gradient writes join the passes that read the same inputs; a normalised advantage still
// needs its statistics first, in both).
func TestGradientsAddNoPassOverTheBatch(t *testing.T) {
	for _, file := range []string{"clip_ppo.yaml", "clip_ppo_gae.yaml", "vtrace_ppo.yaml"} {
		s, err := spec.ParseFile("../../spec/examples/"+file, lower.Registry())
		require.NoError(t, err)
		g, _, err := lower.Lower(s)
		require.NoError(t, err)
		g, err = passes.Run(g, passes.Forward)
		require.NoError(t, err)
		fb, err := passes.Run(g, passes.Backward)
		require.NoError(t, err)
		count := func(p *plan.Plan) int {
			n := 0
			for _, ps := range p.Passes {
				if ps.Domain.Numel() == g.Batch.Numel() {
					n++
				}
			}
			return n
		}
		pf, pb := mustBuild(t, g), mustBuild(t, fb)
		require.Equal(t, count(pf), count(pb), "%s: passes over the batch, Forward vs ForwardBackward", file)
	}
}

// Discrete IQL's ForwardBackward stores the Q gradient [Q, B, A]: each member's value at the
// stored action is a sum over A, broadcast back along A. Its loops nest one dim each, the
// ensemble outside: for Q { sum over A; for A { store } }, never a loop over A inside one
// over A (checkValid).
func TestNestedInnerDims(t *testing.T) {
	s, err := spec.ParseFile("../../spec/examples/discrete_iql.yaml", lower.Registry())
	require.NoError(t, err)
	g, _, err := lower.Lower(s)
	require.NoError(t, err)
	g, err = passes.Run(g, passes.Backward)
	require.NoError(t, err)
	p := mustBuild(t, g)
	var grad *plan.Block
	var find func(bl *plan.Block, outer []string)
	find = func(bl *plan.Block, outer []string) {
		for _, st := range bl.Steps {
			if st.Kind == plan.Store && st.Node == g.Output("grad.state_action_value").Node {
				require.Equal(t, []string{"Q", "A"}, outer, "the gradient's loops, outermost first")
				grad = bl
			}
			if st.Kind == plan.Loop {
				find(st.Block, append(append([]string(nil), outer...), st.Block.Dims.Names()...))
			}
		}
	}
	for _, ps := range p.Passes {
		find(ps.Body, nil)
	}
	require.NotNil(t, grad)
}

// Every example spec's Forward and ForwardBackward plans are valid (checkValid), among them
// loops over two inner dims that only accumulate (the distributional module's count over
// [K, A]), placed after the values they read.
func TestExamplePlansAreValid(t *testing.T) {
	files, err := filepath.Glob("../../spec/examples/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := spec.ParseFile(f, lower.Registry())
			require.NoError(t, err)
			g, _, err := lower.Lower(s)
			require.NoError(t, err)
			fwd, err := passes.Run(g, passes.Forward)
			require.NoError(t, err)
			mustBuild(t, fwd)
			fb, err := passes.Run(fwd, passes.Backward)
			require.NoError(t, err)
			mustBuild(t, fb)
		})
	}
}

// A categorical policy's log-softmax and entropy read the logits in two loops over the
// actions: the max, then one loop in which Σ e^s and the entropy's Σ e^s·s share the e^s
// (an inner reduction joins an earlier loop over the same dims when it reads nothing that
// loop precedes).
func TestReductionsShareALoop(t *testing.T) {
	p := build(t, "clip_ppo_categorical.yaml")
	loops := 0
	var walk func(bl *plan.Block)
	walk = func(bl *plan.Block) {
		for _, st := range bl.Steps {
			if st.Kind == plan.Loop {
				if len(st.Block.Dims) == 1 && st.Block.Dims[0].Name == "A" {
					loops++
					acc := 0
					for _, s := range st.Block.Steps {
						if s.Kind == plan.Accumulate {
							acc++
						}
					}
					require.Contains(t, []int{1, 2}, acc)
				}
				walk(st.Block)
			}
		}
	}
	for _, ps := range p.Passes {
		walk(ps.Body)
	}
	require.Equal(t, 2, loops, "loops over A: the max, then Σ e^s with Σ e^s·s")
}
