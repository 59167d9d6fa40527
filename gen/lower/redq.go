package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// REDQLoss (torchrl/objectives/redq.py, SEMANTICS.md §15.4): SAC with a large Q ensemble whose
// soft TD target takes the minimum over a random subset of the target members, and whose
// actor and critic losses keep every member's term. The subset is an input (the caller's RNG
// drew it): a flag per member, since the IR gathers one element along a dim, not a list of them.

const redqSource = "torchrl/objectives/redq.py"

// keySelectedModels marks the members of the target ensemble in the subset.
var keySelectedModels = spec.KeyDef{Name: "selected_models", Default: []string{"selected_models"}, Kind: spec.BoolKey, Shape: "[Q]",
	Doc:    "true for the target Q-networks whose minimum gives the next value: REDQ's random subset, one for the whole batch (TorchRL's torch.randperm(num_qvalue_nets)[:sub_sample_len] as flags); at least one must be true",
	Sample: spec.Sample{Dist: "flag", P: 0.7}}

func init() {
	inf := math.Inf(1)
	n := paramNumQValueNets
	n.Default = 10
	params := append([]spec.ParamDef{n}, pickParams(sacParams(), "ensemble_dim", "loss_function", "fixed_alpha", "target_entropy", "action_dim", "reduction")...)
	params = append(params,
		spec.ParamDef{Name: "min_alpha", Type: spec.Float, Default: 0.1, Min: 0, Max: inf, Doc: "the lower bound of α: log α is clamped to log min_alpha (a float32 buffer); 0: none (TorchRL's log 0 = −inf)"},
		spec.ParamDef{Name: "max_alpha", Type: spec.Float, Default: 10.0, Min: 0, Max: inf, MinOpen: true, Doc: "the upper bound of α, as min_alpha"})
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "redq", Class: "REDQLoss", Source: redqSource,
			Params: params,
			Ignored: append([]spec.ParamDef{ignoredAlphaInit,
				{Name: "sub_sample_len", Type: spec.Int, Min: 1, Max: inf, Doc: "the size of TorchRL's random subset of the target ensemble, which the caller draws here: " +
					"the subset is an input, keys.selected_models, a flag per member; set max(1, min(sub_sample_len, num_qvalue_nets − 1)) of them, drawn as TorchRL's torch.randperm"}},
				ignoredTargetNets("next_state_action_value", "delay_qvalue")...),
			Rejected: []spec.Rejected{
				{Name: "gSDE", Why: "not taken: the actor runs outside the kernel; its log-probs are inputs"}},
			Keys: []spec.KeyDef{keyLogProb, keyStateActionValue, keyStateActionValueActor, keyNextStateActionValue, keyNextLogProb, keyLogAlpha,
				keySelectedModels, keyPriority, keyMask, keyReward, keyDone, keyTerminated, keyValueTarget},
			Check: checkSAC,
			Example: &spec.Example{Params: map[string]any{"action_dim": 1},
				Before: []spec.Dim{{Name: "Q", Size: 10}}, Sizes: ensembleSize}},
		Bootstrap: prepareREDQ,
		Lower:     lowerREDQ,
	})
}

// prepareREDQ is REDQLoss.forward up to the estimator (redq.py:498-566): under no_grad, the
// subset's soft next value
//
//	V' = min_{k ∈ subset} (Q'_k(s', a') − α·log π(a'|s'))
//
// which the estimator (TD(0) by default) bootstraps from. An empty subset is a data error:
// the fault output empty_model_subset is 1 (TorchRL always draws at least one member).
func prepareREDQ(l *Lowerer, st *spec.Stage) {
	b := l.B
	l.readMask()
	ens := st.String("ensemble_dim")
	_, alpha := l.sacLogAlpha(st)
	qn := l.ReadShaped("next_state_action_value", l.ensembleShape(st))
	l.KeyDoc("next_state_action_value", "Q'_k(s', a'): each member of the target Q ensemble at the next action ["+ens+", *batch]; only the members of selected_models are used: no gradient")
	sel := l.ReadAs("selected_models", b.Shape(ens), spec.BoolKey)
	l.KeyDoc("selected_models", "true for the target Q-networks in REDQ's random subset ["+ens+"], one subset for the whole batch (TorchRL's torch.randperm(num_qvalue_nets)[:sub_sample_len]); at least one must be true")
	l.Output("empty_model_subset", b.Sub(b.Const(1), b.Min(b.SumAll(sel), b.Const(1))), ir.Fault,
		"1 when selected_models selects no member (the next value would be +inf; TorchRL always draws at least one), else 0; Forward returns a *runtime.DataError when it is not 0")
	soft := b.Sub(qn, b.Mul(alpha, l.Read("next_log_prob")))
	l.TargetOnly(b.ReduceMin(b.Where(sel, soft, b.Const(math.Inf(1))), ens))
}

// lowerREDQ is REDQLoss.forward (redq.py:490-650; SEMANTICS.md §15.4), with y the estimator's
// value_target, α = exp(clamp(log α, log min_alpha, log max_alpha)) detached and ŝ the clamped
// log α with the unclamped gradient (_safe_log_alpha):
//
//	loss_actor  = reduce_{k,b}(α·log π(ã|s) − Q_k(s, ã))      (every member, no minimum)
//	loss_qvalue = reduce_{k,b}(distance(Q_k(s, a), y))         (no sum over the members)
//	loss_alpha  = reduce_{i,b}(−exp(ŝ)·(lp_i.detach() + target_entropy)),  lp = (log π(ã|s), log π(a'|s'))
//	alpha = α;  entropy = −mean_{i,b} lp_i                      (not with reduction none)
//	next_state_value = V';  td_error = max_k (Q_k(s, a) − y)²   (detached)
//
// mean runs over the N·B (and 2·B) elements; with reduction none loss_actor and loss_qvalue are
// [Q, *batch], and loss_alpha is [*batch], the two samples' terms of a transition summed.
func lowerREDQ(l *Lowerer, st *spec.Stage) {
	b := l.B
	ens := st.String("ensemble_dim")
	red := st.String("reduction")
	shape := l.ensembleShape(st)
	logAlpha, alpha := l.sacLogAlpha(st)
	lp := l.Read("log_prob")
	l.KeyDoc("log_prob", "log π(ã|s) of the actor's reparameterised sample ã on s [*batch] (TorchRL's sample_log_prob of the actor's rsample)")
	qa := l.ReadShaped("state_action_value_actor", shape)
	l.KeyDoc("state_action_value_actor", "Q_k(s, ã): every member of the current Q ensemble, with detached parameters, at the actor's sample ã ["+ens+", *batch] (TorchRL's state_action_value_actor)")
	l.Output("loss_actor", l.reduceEnsemble(b.Sub(b.Mul(alpha, lp), qa), ens, red), ir.LossTerm,
		"α·log π(ã|s) − Q_k(s, ã) for every member k, reduced by reduction ("+red+") over the members and the batch")

	q := l.ReadShaped("state_action_value", shape)
	l.KeyDoc("state_action_value", "Q_k(s, a): every member of the current Q ensemble at the stored action ["+ens+", *batch] (TorchRL key state_action_value)")
	y := b.Detach(l.Read("value_target"))
	fn := st.String("loss_function")
	l.Output("loss_qvalue", l.reduceEnsemble(l.distance(q, y, fn), ens, red), ir.LossTerm,
		fn+"(Q_k(s, a), y) for every member k, y the subset's soft TD target, reduced by reduction over the members and the batch")

	te := l.sacTargetEntropy(st)
	lpn := l.Read("next_log_prob")
	both := b.Add(b.Detach(lp), b.Detach(lpn)) // the two samples of a transition, summed
	terms := b.Mul(b.Neg(b.Exp(logAlpha)), b.Add(both, b.Const(2*te)))
	var lossAlpha *ir.Node
	switch red {
	case "mean": // over the 2·B elements
		lossAlpha = l.mean(b.Mul(b.Const(0.5), terms))
	default:
		lossAlpha = l.reduce(terms, red)
	}
	l.Output("loss_alpha", lossAlpha, ir.LossTerm,
		"−α·(log π + target_entropy) over the current and the next sample, log π detached, reduced by reduction; none: [*batch], the two samples' terms summed (_loss_alpha)")
	if red != "none" {
		l.Output("alpha", alpha, ir.Metric, "α = exp(clamp(log_alpha, log min_alpha, log max_alpha)), detached (REDQLoss.alpha)")
		l.Output("entropy", l.mean(b.Mul(b.Const(-0.5), both)), ir.Metric, "−mean of the current and the next sample's log π, detached")
	}
	l.Output("next_state_value", l.Read("next_value"), ir.Metric, "V' = min over the subset of Q'_k(s', a') − α·log π(a'|s'), detached [*batch]")
	l.Write("priority", l.maskOf(b.Detach(b.ReduceMax(b.Square(b.Sub(q, y)), ens))), ir.Metric,
		"the replay priority max_k (Q_k(s, a) − y)² over the ensemble, detached (TorchRL key td_error)")

	s := "s = 1/(N·n) for mean (N members, n elements), 1 for sum and none"
	l.GradDoc("state_action_value", "loss_qvalue: ℓ'(Q_k − y)·s for each member k, ℓ' = 2x (l2), sign(x) (l1), clamp(x, −1, 1) (smooth_l1); "+s+" (SEMANTICS.md §15.4; redq.py REDQLoss.forward)")
	l.GradDoc("state_action_value_actor", "loss_actor: −s for every member; chain it into ã with the Q-networks' detached parameters; "+s+" (SEMANTICS.md §15.4; redq.py REDQLoss.forward)")
	l.GradDoc("log_prob", "loss_actor: N·α·s (α detached); loss_alpha uses log π detached and adds nothing; "+s+" (SEMANTICS.md §15.4; redq.py REDQLoss.forward)")
	if !st.Bool("fixed_alpha") {
		l.GradDoc("log_alpha", "loss_alpha: −α·Σ (log π(ã|s) + log π(a'|s') + 2·target_entropy)·s' over the batch, α the clamped value (the clamp passes the gradient straight through), s' = 1/(2n) for mean, 1 for sum and none (SEMANTICS.md §15.4; redq.py REDQLoss._loss_alpha)")
	}
}

// reduceEnsemble reduces x [Q, *batch] over the members and the batch as TorchRL's _reduce
// reduces REDQ's [N, *batch] losses: mean over the N·n elements (the mean over the members of
// each element, then the mean over the valid elements), sum over all, none keeps x.
func (l *Lowerer) reduceEnsemble(x *ir.Node, ens, red string) *ir.Node {
	switch red {
	case "mean":
		return l.mean(l.B.Mean(x, ens))
	case "sum":
		return l.reduce(l.B.Sum(x, ens), red)
	}
	return l.maskOf(x)
}
