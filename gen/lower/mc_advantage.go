package lower

import (
	"math"
	"slices"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// MCAdvantage (torchrl/objectives/llm/grpo.py): GRPO's group-relative advantage, each
// sequence's reward standardised over the n samples of its prompt (SEMANTICS.md §12.5).

var trajectoryReturns = []string{"none", "sum", "mean", "max"}

func init() {
	register(&Stage{
		StageDef: spec.StageDef{
			Kind: spec.Estimator, Type: "mc_advantage", Class: "MCAdvantage", Source: grpoSource,
			Params: []spec.ParamDef{
				{Name: "group_dim", Type: spec.DimName,
					Doc: "the batch dim that holds a prompt's n samples (TorchRL's grpo_size is its size, ≥ 2); the batch dims before it index the prompts, those after it (if any) the tokens"},
				{Name: "trajectory_return", Type: spec.Enum, Default: "none", Null: "none", Enum: trajectoryReturns,
					Doc: "none (null): keys.reward holds one reward per sequence, shaped as the batch up to group_dim; sum, mean, max: keys.reward has the batch's shape, one entry per token (step), and a sequence's return is the sum, mean or max over its valid tokens"},
			},
			Rejected: []spec.Rejected{
				{Name: "grpo_size", Why: "not taken: the group is the batch dim group_dim, and its size is the group size; write group_dim: <that dim> instead of grpo_size"},
				{Name: "keep_return_bounds", Why: "not taken: it drops whole groups, which changes the batch's shape; filter the groups before the kernel"},
				{Name: "candidate_group_size", Why: "not taken: selecting grpo_size of more candidates changes the batch's shape; select before the kernel"},
			},
			Keys: []spec.KeyDef{keyReward, keyMask, keyAdvantage},
			// One prompt's N samples of T tokens, a reward per token summed per sequence.
			Example: &spec.Example{Params: map[string]any{"group_dim": "N", "trajectory_return": "sum"}},
			Check:   checkMCAdvantage,
		},
		Lower: lowerMCAdvantage,
	})
}

// checkMCAdvantage requires group_dim, a batch dim of at least 2 samples: the unbiased std
// of a group of one is NaN (TorchRL returns NaN advantages, or raises with trajectory_return).
func checkMCAdvantage(c *spec.Check) {
	g := c.Stage.String("group_dim")
	switch n := c.Spec.DimSize(g); {
	case g == "":
		c.Errorf("group_dim", "required: the batch dim that holds each prompt's samples (TorchRL's grpo_size is its size)")
	case !contains(c.Spec.Batch, g):
		c.Errorf("group_dim", "%q is not a batch dim %v", g, c.Spec.Batch)
	case n < 2:
		c.Errorf("group_dim", "%q has size %d: a group needs at least 2 samples, since the unbiased std of one is NaN (TorchRL: NaN advantages; ValueError with trajectory_return)", g, n)
	}
}

// lowerMCAdvantage is MCAdvantage.forward (grpo.py:1506-1532, 1581-1597): R the sequences'
// rewards (or returns), for each group
//
//	advantage = (R − mean R) / max(std R, 1e-6)      (unbiased std over group_dim)
//
// one per sequence, which a loss after it (grpo) reads at each of the sequence's tokens.
func lowerMCAdvantage(l *Lowerer, st *spec.Stage) {
	b := l.B
	batch := l.Batch()
	gd := st.String("group_dim")
	at := slices.IndexFunc(batch, func(d ir.Dim) bool { return d.Name == gd })
	seq := batch[:at+1]
	var r *ir.Node
	if ret := st.String("trajectory_return"); ret == "none" {
		if w, ok := l.env["reward"]; ok && len(seq) < len(batch) && w.Shape.Equal(batch) {
			// An earlier stage (kl_reward) wrote a reward per token; say which spelling sums it.
			l.Errorf("trajectory_return", "none reads one reward per sequence %s, but an earlier stage writes keys.reward per token %s: "+
				"write trajectory_return: sum (TorchRL's return of per-token rewards), mean or max", seq, batch)
		}
		r = l.ReadShaped("reward", seq)
	} else {
		r = l.trajectoryReturn(ret, batch[at+1:].Names())
	}
	if at == len(batch)-1 && len(batch) > 1 && l.Mapped("mask") {
		// Each element is then a sample, and a masked one would enter its group's mean and
		// std: MCAdvantage's statistics have no mask. The mask is the tokens' (after group_dim).
		l.Errorf("group_dim", "%q is the last batch dim, so keys.mask would mask whole samples, which the group's mean and std do not leave out; "+
			"group_dim is the samples dim before the token dims (batch: [G, N, L], group_dim: N)", gd)
	}
	a := l.standardize(b.Note(r, "return"), []string{gd}, 1e-6)
	l.Write("advantage", a, ir.Estimate,
		"(R − mean R)/max(std R, 1e-6) over each group of group_dim samples (unbiased std), R a sequence's reward or return: one per sequence, shaped as the batch up to group_dim")
	// The loss after it reads the advantage per token: the sequence's, at each of its tokens.
	l.Set("advantage", b.Broadcast(l.env["advantage"], batch))
}

// trajectoryReturn is a sequence's return from its per-token rewards (MCAdvantage's
// trajectory_return): their sum, mean or max over the token dims, over the valid tokens when
// keys.mask is mapped (a sequence with none returns 0).
func (l *Lowerer) trajectoryReturn(ret string, tok []string) *ir.Node {
	b := l.B
	r := l.Read("reward")
	if len(tok) == 0 {
		return r // one reward per trajectory: the return is that reward
	}
	var m *ir.Node
	if l.Mapped("mask") {
		m = l.Read("mask")
	}
	sel := func(x *ir.Node, pad float64) *ir.Node {
		if m == nil {
			return x
		}
		return b.Where(m, x, b.Const(pad))
	}
	n := b.Sum(b.Broadcast(sel(b.Const(1), 0), l.Batch()), tok...)
	switch ret {
	case "sum":
		return b.Sum(sel(r, 0), tok...)
	case "mean":
		return b.Div(b.Sum(sel(r, 0), tok...), b.Max(n, b.Const(1)))
	}
	mx := b.ReduceMax(sel(r, math.Inf(-1)), tok...)
	if m == nil {
		return mx
	}
	return b.Where(b.Gt(n, b.Const(0)), mx, b.Const(0))
}
