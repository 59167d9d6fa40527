package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// DDPGLoss (torchrl/objectives/ddpg.py, SEMANTICS.md §14.5): the deterministic actor's
// −Q(s, π(s)) and the critic's regression on r + γ(1 − terminated)Q'(s', π'(s')), in one kernel.

func init() {
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "ddpg", Class: "DDPGLoss", Source: "torchrl/objectives/ddpg.py",
			Params: []spec.ParamDef{
				{Name: "loss_function", Type: spec.Enum, Default: "l2", Enum: distances, Doc: "the critic regression's distance"},
				{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions, Doc: "how the loss_* outputs are reduced"},
			},
			Ignored: ignoredTargetNets("next_state_action_value", "delay_actor", "delay_value"),
			Keys: []spec.KeyDef{keyStateActionValue, keyStateActionValueActor, keyNextStateActionValue,
				keyPriority, keyMask, keyReward, keyDone, keyTerminated, keyValueTarget},
			Check: checkTDEstimator},
		Bootstrap: prepareDDPG,
		Lower:     lowerDDPG,
	})
}

// prepareDDPG is DDPGLoss.loss_value up to the estimator: the target critic at the target
// actor's next action, Q'(s', π'(s')), which the estimator (TD(0) by default) bootstraps from.
func prepareDDPG(l *Lowerer, _ *spec.Stage) {
	l.readMask()
	qn := l.Read("next_state_action_value")
	l.KeyDoc("next_state_action_value", "Q'(s', π'(s')): the target critic at the target actor's next action [*batch]: no gradient (TorchRL's value_estimate with the target parameters)")
	l.TargetOnly(qn)
}

// lowerDDPG is DDPGLoss.forward (ddpg.py loss_actor, loss_value; SEMANTICS.md §14.5), with y
// the estimator's value_target:
//
//	loss_value = reduce(distance(Q(s, a), y));  loss_actor = reduce(−Q(s, π(s)))
//	td_error = (Q(s, a) − y)²;  pred_value_max = max Q(s, a);  target_value_max = max y   (detached)
func lowerDDPG(l *Lowerer, st *spec.Stage) {
	b := l.B
	red := st.String("reduction")
	q := l.Read("state_action_value")
	l.KeyDoc("state_action_value", "Q(s, a): the current critic at the stored action [*batch] (TorchRL key state_action_value)")
	y := b.Detach(l.Read("value_target"))
	fn := st.String("loss_function")
	l.Output("loss_value", l.reduce(l.distance(q, y, fn), red), ir.LossTerm,
		fn+"(Q(s, a), y), y the TD target from the target critic, reduced by reduction ("+red+") (loss_value)")
	qa := l.Read("state_action_value_actor")
	l.KeyDoc("state_action_value_actor", "Q(s, π(s)): the current critic, with detached parameters, at the actor's action [*batch] (TorchRL's state_action_value in loss_actor)")
	l.Output("loss_actor", l.reduce(b.Neg(qa), red), ir.LossTerm, "−Q(s, π(s)), reduced by reduction (loss_actor)")

	l.Write("priority", l.maskOf(b.Detach(b.Square(b.Sub(q, y)))), ir.Metric,
		"the replay priority (Q(s, a) − y)², detached [*batch] (TorchRL key td_error)")
	l.Output("pred_value_max", l.maxValid(b.Detach(q)), ir.Metric, "max Q(s, a) over the (valid) batch, detached")
	l.Output("target_value_max", l.maxValid(y), ir.Metric, "max y over the (valid) batch, detached")

	s := "s = 1/n for mean, 1 for sum and none"
	l.GradDoc("state_action_value", "loss_value: ℓ'(Q − y)·s, ℓ' = 2x (l2), sign(x) (l1), clamp(x, −1, 1) (smooth_l1); "+s+" (SEMANTICS.md §14.5; ddpg.py DDPGLoss.loss_value)")
	l.GradDoc("state_action_value_actor", "loss_actor: −s; chain it into π(s) with the critic's detached parameters; "+s+" (SEMANTICS.md §14.5; ddpg.py DDPGLoss.loss_actor)")
}

// maxValid is the maximum of x over every (valid) element: −inf with no valid element.
func (l *Lowerer) maxValid(x *ir.Node) *ir.Node {
	if l.mask != nil {
		x = l.B.Where(l.mask, x, l.B.Const(math.Inf(-1)))
	}
	return l.B.ReduceMax(x, x.Shape.Names()...)
}
