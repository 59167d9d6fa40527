package lower

import (
	"slices"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// DiscreteCQLLoss (torchrl/objectives/cql.py, SEMANTICS.md §13.2): DQN's regression, halved,
// plus the conservative term logsumexp_a Q(s, ·) − Q(s, a), with the same inputs as DQNLoss
// (dqn.go) and the same bootstrap; TorchRL takes the next values from the current network.

func init() {
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "discrete_cql", Class: "DiscreteCQLLoss", Source: "torchrl/objectives/cql.py",
			Params: slices.DeleteFunc(dqnParams(), func(p spec.ParamDef) bool { return p.Name == "delay_value" }),
			Ignored: []spec.ParamDef{{Name: "delay_value", Type: spec.Bool, Doc: "TorchRL's DiscreteCQLLoss bootstraps from the current network whatever it says " +
				"(its target parameters reach TD0Estimator in a keyword that is ignored; SEMANTICS.md §13.2): keys.next_action_value is the current network's values on the next observation, detached"}},
			Keys: []spec.KeyDef{keyActionValue, keyAction, keyNextActionValue, keyPriority, keyMask},
			Check: func(c *spec.Check) {
				checkTDEstimator(c)
				checkInnerDim(c, "action_dim", "after")
				checkActionSpace(c)
			},
			Example: &spec.Example{Params: map[string]any{"action_dim": "A", "action_space": "one_hot"}, After: []spec.Dim{{Name: "A", Size: 4}}}},
		Bootstrap: dqnBootstrap,
		Lower:     lowerDiscreteCQL,
	})
}

// lowerDiscreteCQL is DiscreteCQLLoss.forward (value_loss cql.py:1251, cql_loss cql.py:1336;
// SEMANTICS.md §13.2), with y the estimator's value_target bootstrapped from next_action_value
// as DQN's (dqnBootstrap; TorchRL's estimator evaluates the current network there, cql.py:1275):
//
//	loss_qvalue  = reduce(0.5·distance(Q(s, a), y))
//	loss_cql     = reduce(logsumexp_a Q(s, ·) − Q(s, a))
//	td_error     = (Q(s, a) − y)²                  (detached; the replay priority, per sample)
//	pred_value   = mean of every action value Q(s, ·), target_value = mean y   (detached)
func lowerDiscreteCQL(l *Lowerer, st *spec.Stage) {
	b := l.B
	reduction, fn := st.String("reduction"), st.String("loss_function")
	a := st.String("action_dim")
	pred, y := l.Read("value"), l.Read("value_target")
	q := l.ReadShaped("action_value", b.Shape(append(l.Batch().Names(), a)...))
	l.KeyDoc("next_action_value", "the Q-network's action values on the next observation [*batch, "+a+"], detached: TorchRL's DiscreteCQLLoss bootstraps from the current network, not the target (SEMANTICS.md §13.2)")

	l.Output("loss_qvalue", l.reduce(b.Mul(b.Const(0.5), l.distance(pred, y, fn)), reduction), ir.LossTerm,
		"0.5·"+fn+"(Q(s, a), y), y the TD target, reduced by reduction ("+reduction+") (value_loss)")
	l.Output("loss_cql", l.reduce(b.Sub(b.LogSumExp(q, a), pred), reduction), ir.LossTerm,
		"the conservative term logsumexp_a Q(s, ·) − Q(s, a), reduced by reduction ("+reduction+") (cql_loss)")
	l.Write("priority", l.maskOf(b.Detach(b.Square(b.Sub(pred, y)))), ir.Metric,
		"the replay priority (Q(s, a) − y)², detached (TorchRL key td_error, written into the input tensordict; [*batch], TorchRL's [*batch, 1]; TorchRL's output td_error is its batch mean)")
	l.Output("pred_value", b.Detach(l.mean(b.Mean(q, a))), ir.Metric,
		"the mean of every action value Q(s, ·) (not only the stored action's), detached; always a mean")
	l.Output("target_value", b.Detach(l.mean(y)), ir.Metric, "the mean TD target y, detached; always a mean")

	s := "s = 1/n for mean, 1 for sum and none"
	l.GradDoc("action_value", "loss_qvalue: 0.5·ℓ'(Q(s, a) − y)·s at the stored action only, ℓ' = 2x (l2), sign(x) (l1), clamp(x, −1, 1) (smooth_l1); "+s+" (SEMANTICS.md §13.2; torchrl/objectives/cql.py DiscreteCQLLoss.value_loss)")
	l.GradDoc("action_value", "loss_cql: (softmax(Q(s, ·))_a' − [a' = a])·s for every action a' ("+s+"; torchrl/objectives/cql.py DiscreteCQLLoss.cql_loss)")
}
