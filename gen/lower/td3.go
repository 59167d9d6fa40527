package lower

import (
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// TD3Loss (torchrl/objectives/td3.py, SEMANTICS.md §14.4): the deterministic actor's −Q_0(s,
// π(s)) and the Q ensemble's regression on the clipped double-Q target, in one kernel. The
// target ensemble's values at the smoothed next action are an input: the caller draws the
// noise, smooths and clamps the action and evaluates its target Q-networks there.

func init() {
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "td3", Class: "TD3Loss", Source: "torchrl/objectives/td3.py",
			Params: []spec.ParamDef{
				paramNumQValueNets, paramEnsembleDim,
				{Name: "loss_function", Type: spec.Enum, Default: "smooth_l1", Enum: distances, Doc: "the Q regression's distance"},
				{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions, Doc: "how the loss_* outputs are reduced"},
			},
			Ignored: append(ignoredTD3Noise, ignoredTargetNets("next_state_action_value", "delay_actor", "delay_qvalue")...),
			Keys: []spec.KeyDef{keyStateActionValue, keyStateActionValueActor, keyNextStateActionValue,
				keyPriority, keyMask, keyReward, keyDone, keyTerminated, keyValueTarget},
			Check:   func(c *spec.Check) { checkTDEstimator(c); checkEnsembleDim(c) },
			Example: &spec.Example{Before: []spec.Dim{ensembleExample}, Sizes: ensembleSize}},
		Bootstrap: prepareTD3,
		Lower:     lowerTD3,
	})
}

// prepareTD3 is TD3Loss.value_loss up to the estimator: the clipped double-Q next value
// min_k Q'_k(s', ã'), ã' the smoothed next action, which the estimator (TD(0) by default)
// bootstraps from.
func prepareTD3(l *Lowerer, st *spec.Stage) {
	l.readMask()
	qn := l.ReadShaped("next_state_action_value", l.ensembleShape(st))
	l.KeyDoc("next_state_action_value", "Q'_k(s', ã'): each member of the target Q ensemble at the smoothed next action ã' = clamp(π'(s') + clamp(policy_noise·ε, ±noise_clip), low, high), ε ~ N(0, 1) drawn by the caller ["+st.String("ensemble_dim")+", *batch]: no gradient")
	l.TargetOnly(l.B.ReduceMin(qn, st.String("ensemble_dim")))
}

// lowerTD3 is TD3Loss.forward (td3.py actor_loss, value_loss; SEMANTICS.md §14.4), with y the
// estimator's value_target:
//
//	loss_actor  = reduce(−Q_0(s, π(s)))                  (member 0 only, detached parameters)
//	loss_qvalue = reduce(Σ_k distance(Q_k(s, a), y))
//	next_state_value = min_k Q'_k(s', ã');  td_error = max_k (Q_k(s, a) − y)²   (detached)
func lowerTD3(l *Lowerer, st *spec.Stage) {
	b := l.B
	ens := st.String("ensemble_dim")
	red := st.String("reduction")
	shape := l.ensembleShape(st)
	qa := l.ReadShaped("state_action_value_actor", shape)
	l.KeyDoc("state_action_value_actor", "Q_k(s, π(s)): the current Q ensemble, with detached parameters, at the actor's action ["+ens+", *batch]; only member 0 enters loss_actor (TorchRL's state_action_value in actor_loss)")
	// state_action_value_actor[0], selected so that the other members reach nothing.
	q0 := b.Sum(b.Where(b.Eq(b.Iota(ens, false), b.Const(0)), qa, b.Const(0)), ens)
	l.Output("loss_actor", l.reduce(b.Neg(q0), red), ir.LossTerm, "−Q_0(s, π(s)), the first member only, reduced by reduction ("+red+") (actor_loss)")

	q := l.ReadShaped("state_action_value", shape)
	l.KeyDoc("state_action_value", "Q_k(s, a): each member of the current Q ensemble at the stored action ["+ens+", *batch] (TorchRL key state_action_value, from qvalue_network_params)")
	y := b.Detach(l.Read("value_target"))
	fn := st.String("loss_function")
	l.Output("loss_qvalue", l.reduce(b.Sum(l.distance(q, y, fn), ens), red), ir.LossTerm,
		"Σ_k "+fn+"(Q_k(s, a), y) over the ensemble, y the clipped double-Q TD target, reduced by reduction (value_loss)")
	l.Output("next_state_value", l.Read("next_value"), ir.Metric, "min_k Q'_k(s', ã'), the target ensemble's minimum at the smoothed next action, detached [*batch]")
	l.Write("priority", l.maskOf(b.Detach(b.ReduceMax(b.Square(b.Sub(q, y)), ens))), ir.Metric,
		"the replay priority max_k (Q_k(s, a) − y)² over the ensemble, detached (TorchRL key td_error)")

	s := "s = 1/n for mean, 1 for sum and none"
	l.GradDoc("state_action_value", "loss_qvalue: ℓ'(Q_k − y)·s for each member k, ℓ' = 2x (l2), sign(x) (l1), clamp(x, −1, 1) (smooth_l1); "+s+" (SEMANTICS.md §14.4; td3.py TD3Loss.value_loss)")
	l.GradDoc("state_action_value_actor", "loss_actor: −s for member 0, 0 for the others; chain it into π(s) with the Q-networks' detached parameters; "+s+" (SEMANTICS.md §14.4; td3.py TD3Loss.actor_loss)")
}
