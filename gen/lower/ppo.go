package lower

import (
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

func init() {
	register(&Stage{StageDef: ppoDef("ppo", "PPOLoss", nil, nil, nil), Lower: lowerPPO, Summary: ppoSummary, Bootstrap: policyBootstrap})
}

// lowerPPO is TorchRL v0.11.0's PPOLoss.forward (SEMANTICS.md §2.2–2.7): the unclipped
// surrogate, with the advantage and value target from the estimator before it, or inputs:
//
//	lw = log π(a) − sample_log_prob
//	loss_objective = reduce(−exp(lw)·A);  kl_approx = mean(sample_log_prob − log π(a))
//	entropy, loss_entropy, loss_critic, explained_variance as for ClipPPOLoss
func lowerPPO(l *Lowerer, st *spec.Stage) {
	b := l.B
	c := l.ppoBegin(st)
	gain := b.Note(b.Mul(b.Exp(c.lw), c.adv), "gain")
	l.Output("loss_objective", l.reduce(b.Neg(gain), c.reduction), ir.LossTerm,
		"surrogate −exp(lw)·A, reduced by reduction ("+c.reduction+")")
	l.objectiveGradDoc(c, "loss_objective: −A·exp(lw)·s, s = 1/n for mean, 1 for sum and none (SEMANTICS.md §2.8; torchrl/objectives/ppo.py PPOLoss.forward)")
	l.klApprox(c)
	l.ppoEnd(c)
}
