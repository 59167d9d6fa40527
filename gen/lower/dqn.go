package lower

import (
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// DQNLoss (torchrl/objectives/dqn.py, SEMANTICS.md §13.1): the Q-network's regression on the
// TD target of its target network, with the replay priority td_error, in one kernel. The
// networks' outputs are the inputs: the current net's action values on s (with gradient), the
// target net's on s', and for double DQN the current net's on s' (detached).

const dqnSource = "torchrl/objectives/dqn.py"

// The keys of the value-based off-policy losses (DQN, the discrete CQL).
var (
	keyNextActionValue = spec.KeyDef{Name: "next_action_value", NextOf: "action_value", Shape: "[*batch, A] | [*batch, K, A] | [Q, *batch, A]",
		Doc:    "the target Q-network's action values on the next observation [*batch, A] (TorchRL computes them with target_value_network_params on (next, action_value)): no gradient",
		Sample: spec.Sample{Dist: "normal", Std: 2, ExtremeTie: true, ExtremeBig: true}}
	keyNextActionValueOnline = spec.KeyDef{Name: "next_action_value_online", Default: []string{"next", "action_value_online"}, Shape: "[*batch, A] | [*batch, K, A]",
		Doc:    "double DQN: the current Q-network's action values on the next observation [*batch, A], which choose the next action (TorchRL: value_network_params.data, detached)",
		Sample: spec.Sample{Dist: "normal", Std: 2, ExtremeTie: true}}
)

// rejectPriority is the replay-priority weighting of DQNLoss and DistributionalDQNLoss
// (their priority_key is the key argument for keys.priority).
var rejectPriority = []spec.Rejected{
	{Name: "use_prioritized_weights", Why: "not taken: the kernel reads no priority_weight; with reduction: none, weight the per-sample loss yourself"}}

// dqnKeys are the keys DQNLoss reads and writes (DiscreteCQLLoss: all but the online next
// values); the estimator declares reward, done and terminated.
var dqnKeys = []spec.KeyDef{keyActionValue, keyAction, keyNextActionValue, keyNextActionValueOnline, keyPriority, keyMask}

// rejectedActionSpaces are the action spaces TorchRL's _find_action_space maps that the
// value-based losses do not take (SEMANTICS.md §13.1), in every spelling it accepts.
var rejectedActionSpaces = func() []spec.Rejected {
	mult := "the stored action is one index (categorical) or one one-hot vector (one_hot); " +
		"TorchRL runs mult_one_hot through the one-hot branch, Σ_a Q(s)_a·action_a, with QValueModule's greedy value per chunk of var_nums, " +
		"which lossgen's value-based losses do not implement (the qvalue transform does)"
	out := []spec.Rejected{{Name: "binary", Why: "TorchRL's QValueModule raises NotImplementedError for binary actions (torchrl/modules/tensordict_module/actors.py QValueModule._binary), so the loss cannot bootstrap from it"}}
	for _, name := range []string{"mult_one_hot", "mult-one-hot", "multi_one_hot", "multi-one-hot"} {
		out = append(out, spec.Rejected{Name: name, Why: mult})
	}
	return out
}()

// dqnParams are the constructor arguments DQNLoss and DiscreteCQLLoss share, with TorchRL's
// defaults: the value type and γ come from the estimator section (TorchRL's
// make_value_estimator; TD(0) with γ 0.99 when it is absent).
func dqnParams() []spec.ParamDef {
	return []spec.ParamDef{
		{Name: "loss_function", Type: spec.Enum, Default: "l2", Enum: distances, Doc: "the distance between Q(s, a) and the TD target"},
		{Name: "delay_value", Type: spec.Bool, Default: true, Doc: "whether a target network gives the next values (false: the current net, detached; the same math, the input is then its values)"},
		{Name: "action_space", Type: spec.Enum, Enum: []string{"one_hot", "categorical"}, ValueAliases: []spec.Alias{oneHotAlias}, RejectedValues: rejectedActionSpaces,
			Doc: "how the stored action selects Q(s, a) and the next action is chosen: an index (categorical) or a one-hot vector (one_hot; a k-way tie of the next values counts k times, TorchRL's QValueModule)"},
		paramActionDim,
		{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions, Doc: "how the loss outputs are reduced"},
	}
}

func init() {
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "dqn", Class: "DQNLoss", Source: dqnSource,
			Params: append(dqnParams(), spec.ParamDef{Name: "double_dqn", Type: spec.Bool, Default: false,
				Doc: "Double DQN: the current net's next values (keys.next_action_value_online) choose the next action, the target net's value it"}),
			Rejected: rejectPriority,
			Keys:     dqnKeys,
			Check:    checkDQN,
			Example:  &spec.Example{Params: map[string]any{"action_dim": "A", "action_space": "one_hot"}, After: []spec.Dim{{Name: "A", Size: 4}}}},
		Bootstrap: dqnBootstrap,
		Lower:     lowerDQN,
	})
}

// checkDQN applies DQNLoss's defaults and checks: the TD estimator (TD(0), γ 0.99 by default;
// GAE and V-trace raise NotImplementedError), the action dim and space, and double_dqn's need
// of a target network (ValueError, dqn.py:190).
func checkDQN(c *spec.Check) {
	checkTDEstimator(c)
	checkInnerDim(c, "action_dim", "after")
	checkActionSpace(c)
	if c.Stage.Bool("double_dqn") && !c.Stage.Bool("delay_value") {
		c.Errorf("double_dqn", "requires delay_value: true (TorchRL raises ValueError: double_dqn=True requires delay_value=True)")
	}
}

// dqnBootstrap is what the value network gives the estimator before it runs (TorchRL's
// value_estimate with target_params; SEMANTICS.md §13.1): with keys.mask, the mask first, so
// padding reaches no result; then
//
//	next_value = Σ_a greedy(Q')_a·Q'_a              (target net, one_hot: k·max at a k-way tie)
//	           = Q'[argmax Q']                       (categorical: the maximum)
//	double DQN: Q'[greedy(Q_online)]                 (the target's value at the current net's
//	                                                  choice; one_hot: Σ of Q' at every tied max)
//	value      = Q(s, a)                             (the estimator's advantage is y − Q(s, a))
//
// The next values carry no gradient (target params, or params.data for double DQN's choice).
func dqnBootstrap(l *Lowerer, st *spec.Stage) {
	b := l.B
	l.readMask()
	a := st.String("action_dim")
	shape := b.Shape(append(l.Batch().Names(), a)...)
	q := l.ReadShaped("action_value", shape)
	l.KeyDoc("action_value", "the current Q-network's action values on the observation [*batch, "+a+"] (TorchRL key action_value)")
	target := l.ReadShaped("next_action_value", shape)
	choice := target
	if st.Bool("double_dqn") {
		choice = l.ReadShaped("next_action_value_online", shape)
	}
	l.Set("next_value", b.Note(l.valueAt(st, target, l.greedy(st, choice)), "next_chosen_action_value"))
	l.Set("value", b.Note(l.valueAt(st, q, l.storedAction(st)), "pred_val_index"))
}

// lowerDQN is DQNLoss.forward (dqn.py:285-371; SEMANTICS.md §13.1), with y the estimator's
// value_target (TD(0): r + γ(1 − terminated)·next_value, γ a float32 buffer):
//
//	loss     = reduce(distance(Q(s, a), y))        (TorchRL's key loss, not loss_*)
//	td_error = (Q(s, a) − y)²                      (detached; the replay priority)
func lowerDQN(l *Lowerer, st *spec.Stage) {
	b := l.B
	reduction, fn := st.String("reduction"), st.String("loss_function")
	pred, y := l.Read("value"), l.Read("value_target")
	l.Output("loss", l.reduce(l.distance(pred, y, fn), reduction), ir.LossTerm,
		fn+"(Q(s, a), y), y the TD target, reduced by reduction ("+reduction+") (TorchRL key loss)")
	l.Write("priority", l.maskOf(b.Detach(b.Square(b.Sub(pred, y)))), ir.Metric,
		"the replay priority (Q(s, a) − y)², detached (TorchRL key td_error, written into the input tensordict; [*batch], TorchRL's [*batch, 1])")
	l.GradDoc("action_value", "loss: ℓ'(Q(s, a) − y)·s at the stored action only (the gathered entry, or action_a for one_hot), ℓ' = 2x (l2), sign(x) (l1), clamp(x, −1, 1) (smooth_l1); s = 1/n for mean, 1 for sum and none (SEMANTICS.md §13.1; "+dqnSource+" DQNLoss.forward)")
}
