package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// ReinforceLoss (torchrl/objectives/reinforce.py, SEMANTICS.md §15.2): the policy gradient
// −log π·A with the advantage detached, and the critic's regression on the value target
// without a coefficient, in one kernel.

const reinforceSource = "torchrl/objectives/reinforce.py"

func init() {
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "reinforce", Class: "ReinforceLoss", Source: reinforceSource,
			Params: []spec.ParamDef{
				{Name: "delay_value", Type: spec.Bool, Default: false, Doc: "whether a target critic gives the estimator's next value; the kernel reads that value as an input (keys.next_value) either way: the same math"},
				{Name: "loss_critic_type", Type: spec.Enum, Default: "smooth_l1", Enum: distances, Doc: "the critic's distance"},
				{Name: "clip_value", Type: spec.Float, Null: 0.0, Min: 0, Max: math.Inf(1), Doc: "value-clipping δ; null or 0: none"},
				{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions, Doc: "how the loss_* outputs are reduced"},
			},
			Keys:  []spec.KeyDef{keyLogProb, keyAdvantage, keyValueTarget, keyValue, keyOldValue, keyMask},
			Check: func(c *spec.Check) { checkClipValue(c, true) },
		},
		Lower:   lowerReinforce,
		Summary: ppoSummary,
	})
}

// lowerReinforce is ReinforceLoss.forward (reinforce.py:368-409, loss_critic 411-460;
// SEMANTICS.md §15.2):
//
//	loss_actor = reduce(−log π·A)                        (A detached)
//	loss_value = reduce(distance(value_target, V))       (no coefficient; with clip_value the
//	                                                      larger of it and the clipped loss)
func lowerReinforce(l *Lowerer, st *spec.Stage) {
	b := l.B
	l.readMask()
	red := st.String("reduction")
	adv := b.Detach(l.Read("advantage"))
	lp := l.Read("log_prob")
	l.KeyDoc("log_prob", "log π of the action the actor gives, as the actor writes it into sample_log_prob when ReinforceLoss re-runs it on the data [*batch] (network output)")
	l.Output("loss_actor", l.reduce(b.Neg(b.Mul(lp, adv)), red), ir.LossTerm,
		"the policy gradient −log π·A, A detached, reduced by reduction ("+red+")")
	l.GradDoc("log_prob", "loss_actor: −A·s, s = 1/n for mean, 1 for sum and none (SEMANTICS.md §15.2; "+reinforceSource+" ReinforceLoss.forward)")
	_, _, lossValue, doc := l.valueLoss(st, st.Float("clip_value"))
	l.GradDoc("value", "loss_value: "+doc+" (SEMANTICS.md §15.2; "+reinforceSource+" ReinforceLoss.loss_critic)")
	l.Output("loss_value", l.reduce(lossValue, red), ir.LossTerm,
		st.String("loss_critic_type")+"(value_target, V), no coefficient, reduced by reduction")
}
