package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// IQLLoss and DiscreteIQLLoss (torchrl/objectives/iql.py, SEMANTICS.md §4): the actor's
// advantage-weighted regression, the value network's expectile regression and the Q
// ensemble's TD(0) regression, with the priority td_error, in one kernel.

const iqlSource = "torchrl/objectives/iql.py"

// The keys only the IQL losses read and write.
var (
	keyStateActionValue = spec.KeyDef{Name: "state_action_value", Default: []string{"state_action_value"}, Differentiable: true, Shape: "[Q, *batch] | [Q, *batch, A] | [*batch]",
		Doc:    "Q-value of each member of the current Q ensemble at the stored action ([Q, *batch]; discrete: every action's, [Q, *batch, A]; a single critic: [*batch]) (TorchRL key state_action_value, from qvalue_network_params)",
		Sample: spec.Sample{Dist: "normal", Std: 2}}
	keyTargetStateActionValue = spec.KeyDef{Name: "target_state_action_value", Default: []string{"target_state_action_value"}, Shape: "[Q, *batch] | [Q, *batch, A]",
		Doc:    "the same from the target Q ensemble (TorchRL computes state_action_value with target_qvalue_network_params): no gradient",
		Sample: spec.Sample{Dist: "normal", Std: 0.3, Offset: "state_action_value", ExtremeBig: true}}
	keyPriority = spec.KeyDef{Name: "priority", Default: []string{"td_error"},
		Doc: "the per-sample replay priority from the TD error, as each loss defines it (IQL: max_k (Q_k − y)²; DQN: (Q − y)²) (TorchRL key td_error, written into the input tensordict)"}
)

func init() {
	inf := math.Inf(1)
	params := []spec.ParamDef{
		paramNumQValueNets, paramEnsembleDim,
		{Name: "loss_function", Type: spec.Enum, Default: "smooth_l1", Enum: distances, Doc: "the Q regression's distance"},
		{Name: "temperature", Type: spec.Float, Default: 1.0, Min: 0, Max: inf, MinOpen: true, MaxOpen: true, Doc: "β, the inverse temperature of the advantage weight exp(β(min Q − V))"},
		{Name: "expectile", Type: spec.Float, Default: 0.5, Min: 0, Max: 1, MinOpen: true, MaxOpen: true, Doc: "τ of the value network's expectile regression"},
		{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions, Doc: "how the loss_* outputs are reduced"},
	}
	keys := append([]spec.KeyDef{keyValue, keyValueTarget, keyStateActionValue, keyTargetStateActionValue, keyPriority}, policyKeys...)
	// The actor's policy: log_prob as an input, or a distribution evaluated in the kernel
	// (the discrete loss's policy is over its action_dim, so only the discrete distributions,
	// the one that fits action_space as checkIQL says, and no tanh_normal bounds).
	var discretePolicy []spec.ParamDef
	for _, p := range policyParams("none") {
		switch p.Name {
		case "action_dim", "low", "high":
			continue
		case "distribution":
			p.Enum = []string{"none", "categorical", "one_hot_categorical"}
			p.Doc = "the policy distribution evaluated in the kernel: none (log_prob and entropy are inputs), " +
				"categorical (logits, with action_space categorical) or one_hot_categorical (logits, with action_space one_hot)"
		}
		discretePolicy = append(discretePolicy, p)
	}
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "iql", Class: "IQLLoss", Source: iqlSource,
			Params: append(append([]spec.ParamDef(nil), params...), policyParams("none")...),
			Keys:   keys, Check: checkIQL, Example: &spec.Example{Before: []spec.Dim{ensembleExample}, Sizes: ensembleSize}},
		Lower: lowerIQL,
	})
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "discrete_iql", Class: "DiscreteIQLLoss", Source: iqlSource,
			Params: append(append(append([]spec.ParamDef(nil), params...),
				spec.ParamDef{Name: "action_space", Type: spec.Enum, Enum: []string{"one_hot", "categorical"}, ValueAliases: []spec.Alias{oneHotAlias},
					Doc: "how the stored action selects the Q-value: an index (categorical) or a one-hot vector (one_hot)"},
				paramActionDim), discretePolicy...),
			Keys: keys, Check: checkIQL,
			Example: &spec.Example{Params: map[string]any{"action_dim": "A", "action_space": "one_hot"},
				Before: []spec.Dim{ensembleExample}, After: []spec.Dim{{Name: "A", Size: 4}}, Sizes: ensembleSize}},
		Lower: lowerIQL,
	})
}

// The Q ensemble's parameters, as every ensemble loss takes them (checkEnsembleDim).
var (
	paramNumQValueNets = spec.ParamDef{Name: "num_qvalue_nets", Type: spec.Int, Default: 2, Min: 1, Max: math.Inf(1), Doc: "the number of Q-networks in the ensemble (the extent of ensemble_dim)"}
	paramEnsembleDim   = spec.ParamDef{Name: "ensemble_dim", Type: spec.DimName, Doc: "the dim of the Q ensemble, declared before the batch dims (default Q, added with num_qvalue_nets members when dims lacks it)"}
)

// ensembleExample is the Q ensemble dim of a starter spec: TorchRL's num_qvalue_nets default
// of 2, declared (before the batch) rather than added by checkEnsembleDim, so the layout shows.
var ensembleExample = spec.Dim{Name: "Q", Size: 2}

// ensembleSize ties num_qvalue_nets to the starter's ensemble dim.
var ensembleSize = map[string]string{"num_qvalue_nets": "Q"}

// paramActionDim is the dim of the discrete actions (the last dim of the action values).
var paramActionDim = spec.ParamDef{Name: "action_dim", Type: spec.DimName,
	Doc: "the dim of the discrete actions, declared after the batch dims (action values are [..., A])"}

// checkIQL applies IQL's defaults and checks (SEMANTICS.md §4.1, §4.3): the TD(0) target with
// γ 0.99 unless the spec gives a TD estimator (GAE and V-trace raise NotImplementedError in
// TorchRL), the ensemble dim, and for the discrete loss the action dim and action space.
func checkIQL(c *spec.Check) {
	checkTDEstimator(c)
	checkEnsembleDim(c)
	if c.Stage.Type != "discrete_iql" {
		checkPolicy(c)
		return
	}
	checkInnerDim(c, "action_dim", "after")
	checkActionSpace(c)
	// The actor of discrete actions is a categorical policy over the same actions, stored as
	// the action space says.
	want := map[string]string{"categorical": "categorical", "one_hot": "one_hot_categorical"}[c.Stage.String("action_space")]
	if d := c.Stage.String("distribution"); d != "none" && d != want {
		c.Errorf("distribution", "%s does not fit action_space %s: the actor's distribution over the discrete actions is %s (or none: log_prob is an input)", d, c.Stage.String("action_space"), want)
	}
}

// checkEnsembleDim resolves the ensemble dim: ensemble_dim, or Q. A declared dim must not be a
// batch dim and must come before every batch dim (TorchRL's layout [num_qvalue_nets,
// *batch]); its extent is num_qvalue_nets (an explicit num_qvalue_nets must agree). Q is
// added with num_qvalue_nets members when the spec declares no such dim.
func checkEnsembleDim(c *spec.Check) {
	checkCountedDim(c, countedDim{param: "ensemble_dim", count: "num_qvalue_nets", def: "Q", where: "before", what: "the ensemble dim", unit: "members"})
}

// countedDim describes a dim parameter whose extent an integer parameter gives: the
// ensemble dim and num_qvalue_nets, CQL's sample dim and num_random.
type countedDim struct {
	param, count string // the DimName parameter and the Int parameter of its extent
	def          string // the dim's name when param is not written
	where        string // "before" or "after" every batch dim, as the tensors' layout puts it
	what, unit   string // how messages name the dim ("the ensemble dim") and its elements ("members")
}

// checkCountedDim resolves d: its parameter, or its default name. A declared dim must not be
// a batch dim and must be declared where d's layout puts it; its extent is d.count's (an
// explicit count must agree). The default dim is added with d.count elements, before or
// after the declared dims, when the spec declares no dim of that name.
func checkCountedDim(c *spec.Check, d countedDim) {
	st, s := c.Stage, c.Spec
	name := st.String(d.param)
	if name == "" {
		name = d.def
		if s.DimSize(name) == 0 {
			if len(s.Dims) >= spec.MaxDims {
				c.Errorf(d.param, "the spec declares %d dims, the most it may; declare %s %s among them (or name one with %s)", len(s.Dims), d.what, name, d.param)
				return
			}
			dim := spec.Dim{Name: name, Size: st.Int(d.count), Pos: st.Pos}
			if d.where == "before" {
				s.Dims = append([]spec.Dim{dim}, s.Dims...)
			} else {
				s.Dims = append(s.Dims, dim)
			}
		}
		st.Set(d.param, name)
	}
	size := s.DimSize(name)
	if size == 0 {
		return // an undeclared dim is reported with the other dim names
	}
	if !checkInnerDim(c, d.param, d.where) {
		return
	}
	switch {
	case !st.Written(d.count):
		st.Set(d.count, size)
	case st.Int(d.count) != size:
		c.Errorf(d.count, "is %d but %s %s has %d %s", st.Int(d.count), d.what, name, size, d.unit)
	}
}

// lowerIQL is IQLLoss.forward, or DiscreteIQLLoss.forward when the stage has an action_dim
// (torchrl/objectives/iql.py, SEMANTICS.md §4.2–4.4), with y the TD target the estimator
// before it wrote (value_target; TD(0) with γ 0.99 by default):
//
//	m    = min_k Q^target_k                            (target ensemble, no gradient)
//	w    = min(exp((m − V.detach())·β), 100)           (detached)
//	loss_actor  = reduce(−(w·log_prob))
//	loss_value  = reduce(where(m − V > 0, f32(τ), f32(1 − τ))·(m − V)²)
//	loss_qvalue = reduce(Σ_k distance(Q_k, y))         (current ensemble, summed over members)
//	entropy     = mean(−log_prob)                       (detached)
//	td_error    = max_k (Q_k − y)²                      (detached)
//
// Discrete: Q_k is the ensemble's value at the stored action, gathered at an index
// (categorical) or Σ_a Q_k[a]·action[a] (one_hot). Continuous: Q_k is an input, the
// ensemble evaluated at the stored action, whatever the actor's distribution.
func lowerIQL(l *Lowerer, st *spec.Stage) {
	b := l.B
	ens := st.String("ensemble_dim")
	reduction := st.String("reduction")
	q := l.iqlChosen(st, "state_action_value")
	layout := "at the stored action [" + ens + ", *batch]"
	if st.Type == "discrete_iql" {
		layout = "for every action [" + ens + ", *batch, " + st.String("action_dim") + "]"
	}
	l.KeyDoc("state_action_value", "Q-value of each member of the current Q ensemble "+layout+" (TorchRL key state_action_value, from qvalue_network_params)")
	qt := l.iqlChosen(st, "target_state_action_value")
	v := l.Read("value")
	lp := l.iqlLogProb(st)

	// loss_actor: the advantage weight from the target ensemble and the detached value.
	beta := l.Hyper("temperature", st.Float("temperature"), false, "β, the advantage weight's inverse temperature (a Python float in TorchRL)")
	m := b.Note(b.Detach(b.ReduceMin(qt, ens)), "min_q")
	w := b.Note(b.Detach(b.Min(b.Exp(b.Mul(b.Sub(m, b.Detach(v)), b.Const(beta))), b.Const(100))), "awr_weight")
	l.Output("loss_actor", l.reduce(b.Neg(b.Mul(w, lp)), reduction), ir.LossTerm,
		"advantage-weighted regression −min(exp(β(min_k Q'_k − V)), 100)·log_prob, reduced by reduction ("+reduction+") (actor_loss)")

	// loss_qvalue: every member of the current ensemble regresses on the TD target.
	y := l.Read("value_target")
	fn := st.String("loss_function")
	l.Output("loss_qvalue", l.reduce(b.Sum(l.distance(q, y, fn), ens), reduction), ir.LossTerm,
		"Σ_k "+fn+"(Q_k, y) over the ensemble, y the TD target, reduced by reduction (qvalue_loss)")

	// loss_value: expectile regression of V on the target ensemble's minimum.
	tau := st.Float("expectile")
	tauHi := l.Hyper("expectile", tau, true, "τ, the expectile weight where min Q − V > 0")
	tauLo := l.Hyper("1-expectile", 1-tau, true, "1 − τ (formed in double), the weight elsewhere")
	u := b.Note(b.Sub(m, v), "value_diff")
	weight := b.Where(b.Gt(u, b.Const(0)), b.Const(tauHi), b.Const(tauLo))
	l.Output("loss_value", l.reduce(b.Mul(weight, b.Square(u)), reduction), ir.LossTerm,
		"expectile regression |τ − 1[min_k Q'_k − V ≤ 0]|·(min_k Q'_k − V)², reduced by reduction (value_loss)")

	l.Output("entropy", b.MeanAll(b.Neg(b.Detach(lp))), ir.Metric,
		"mean(−log_prob), the negative log-likelihood of the data's actions (not a true entropy); always a mean")
	l.Write("priority", b.Detach(b.ReduceMax(b.Square(b.Sub(q, y)), ens)), ir.Metric,
		"the replay priority max_k (Q_k − y)² over the ensemble, detached (TorchRL key td_error)")

	s := "s = 1/n for mean, 1 for sum and none"
	l.GradDoc("log_prob", "loss_actor: −w·s, w = min(exp(β(min_k Q'_k − V)), 100), detached; "+s+" (SEMANTICS.md §4.4; torchrl/objectives/iql.py IQLLoss.actor_loss)")
	l.GradDoc("value", "loss_value: −2·weight·(min_k Q'_k − V)·s, weight τ where min_k Q'_k − V > 0 and 1 − τ elsewhere; "+s+" (SEMANTICS.md §4.4; torchrl/objectives/iql.py IQLLoss.value_loss)")
	doc := "loss_qvalue: ℓ'(Q_k − y)·s for each member k, ℓ' = 2x (l2), sign(x) (l1), clamp(x, −1, 1) (smooth_l1); " + s
	if st.Type == "discrete_iql" {
		doc += "; only at the stored action (the gathered entry, or action_a for one_hot)"
	}
	l.GradDoc("state_action_value", doc+" (SEMANTICS.md §4.4; torchrl/objectives/iql.py IQLLoss.qvalue_loss)")
}

// iqlLogProb is the actor's log-probability of the stored action, log π(a|s) [*batch]: the
// log_prob input, or the stage's distribution evaluated in the kernel (policy.go).
func (l *Lowerer) iqlLogProb(st *spec.Stage) *ir.Node { return l.policy(st).lp }

// iqlChosen is an ensemble's value at the stored action [Q, *batch]: the key itself for
// IQLLoss (its Q-networks take the continuous action as an input; the action_dim of its
// policy is read by log π only); for DiscreteIQLLoss the key [Q, *batch, A] at the action,
// as DiscreteIQLLoss.actor_loss/value_loss/qvalue_loss select it (SEMANTICS.md §4.3).
func (l *Lowerer) iqlChosen(st *spec.Stage, key string) *ir.Node {
	b := l.B
	ens := st.String("ensemble_dim")
	batch := l.Batch().Names()
	if st.Type != "discrete_iql" {
		return l.ReadShaped(key, b.Shape(append([]string{ens}, batch...)...))
	}
	q := l.ReadShaped(key, b.Shape(append(append([]string{ens}, batch...), st.String("action_dim"))...))
	return l.valueAt(st, q, l.storedAction(st)) // vmapped over the ensemble
}
