package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// SACLoss, version 2 (no value network; torchrl/objectives/sac.py, SEMANTICS.md §14): the
// actor's α·log π − min_k Q_k, the Q ensemble's regression on the soft TD target, and the
// temperature loss, in one kernel. The networks' outputs are the inputs (TorchRL calls the
// networks inside the loss): the caller chains the gradients into its own networks.

const sacSource = "torchrl/objectives/sac.py"

// The keys the off-policy actor-critic losses (SAC, TD3, DDPG) read besides the ensemble's
// state_action_value.
var (
	keyStateActionValueActor = spec.KeyDef{Name: "state_action_value_actor", Default: []string{"state_action_value_actor"}, Differentiable: true, Shape: "[Q, *batch] | [*batch]",
		Doc:    "the current Q-networks, with detached parameters, at the actor's action ã ~ π(·|s) or π(s): the gradient flows into the action (TorchRL computes state_action_value with _cached_detached_qvalue_params)",
		Sample: spec.Sample{Dist: "normal", Std: 2}}
	keyNextStateActionValue = spec.KeyDef{Name: "next_state_action_value", NextOf: "state_action_value", Shape: "[Q, *batch] | [Q, *batch, R] | [*batch]",
		Doc:    "the target Q-networks at (s', a'), a' the next action (TorchRL computes state_action_value on the next observation with target_qvalue_network_params): no gradient",
		Sample: spec.Sample{Dist: "normal", Std: 2, ExtremeBig: true}}
	keyNextLogProb = spec.KeyDef{Name: "next_log_prob", NextOf: "log_prob",
		Doc:    "log π(a'|s') of the next action a' sampled on the next observation (TorchRL's next_sample_log_prob, under no_grad): no gradient",
		Sample: spec.Sample{Dist: "uniform", Lo: -3, Hi: 1}}
	keyLogAlpha = spec.KeyDef{Name: "log_alpha", Default: []string{"log_alpha"}, Differentiable: true, Shape: "[]",
		Doc:    "log α, the entropy temperature's logarithm, a scalar (TorchRL's parameter log_alpha; a buffer with fixed_alpha)",
		Sample: spec.Sample{Dist: "normal", Std: 0.5}}
)

// sacParams are SACLoss's arguments; DiscreteSACLoss and REDQLoss take some of them.
func sacParams() []spec.ParamDef {
	inf := math.Inf(1)
	return []spec.ParamDef{
		paramNumQValueNets, paramEnsembleDim,
		{Name: "loss_function", Type: spec.Enum, Default: "smooth_l1", Enum: distances, Doc: "the Q regression's distance"},
		{Name: "min_alpha", Type: spec.Float, Null: 0.0, Min: 0, Max: inf, Doc: "the lower bound of α: log α is clamped to log min_alpha (TorchRL clamps the parameter in place); null or 0: none"},
		{Name: "max_alpha", Type: spec.Float, Null: 0.0, Min: 0, Max: inf, Doc: "the upper bound of α, as min_alpha; null (or 0 without min_alpha): none, or 1e9 when min_alpha is set (TorchRL fills it so; 0 beside min_alpha is TorchRL's ValueError)"},
		{Name: "fixed_alpha", Type: spec.Bool, Default: false, Doc: "α is a constant: log_alpha gets no gradient (TorchRL registers it as a buffer); loss_alpha is still reported"},
		{Name: "target_entropy", Type: spec.FloatOrAuto, Default: "auto", Min: -inf, Max: inf, Doc: "the entropy target of loss_alpha; auto: −action_dim"},
		{Name: "action_dim", Type: spec.Int, DimSize: true, Min: 1, Max: inf, Doc: "the number of action elements (TorchRL's action_spec numel), for target_entropy auto"},
		{Name: "skip_done_states", Type: spec.Bool, Default: false, Doc: "TorchRL runs the actor only on the next states that are not done and uses log π' = 0 (and the action 0) elsewhere: the kernel zeroes next_log_prob where done"},
		{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions, Doc: "how the loss_* outputs are reduced; none drops alpha and entropy (TorchRL's scalar_output_mode exclude)"},
	}
}

func init() {
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "sac", Class: "SACLoss", Source: sacSource,
			Params:  sacParams(),
			Ignored: append([]spec.ParamDef{ignoredAlphaInit}, ignoredTargetNets("next_state_action_value", "delay_actor", "delay_qvalue", "delay_value")...),
			Keys: ([]spec.KeyDef{keyLogProb, keyStateActionValue, keyStateActionValueActor, keyNextStateActionValue, keyNextLogProb, keyLogAlpha,
				keyPriority, keyMask, keyReward, keyDone, keyTerminated, keyValueTarget}),
			Check: checkSAC,
			Example: &spec.Example{Params: map[string]any{"action_dim": 1},
				Before: []spec.Dim{ensembleExample}, Sizes: ensembleSize}},
		Bootstrap: prepareSAC,
		Lower:     lowerSAC,
	})
}

// checkSAC applies SACLoss's defaults: TD(0) with γ 0.99 (TD(1), TD(λ) allowed) and the
// ensemble dim; target_entropy auto (−action_dim, lowerSAC) needs action_dim.
func checkSAC(c *spec.Check) {
	checkTDEstimator(c)
	checkEnsembleDim(c)
	checkActionDimSize(c)
	st := c.Stage
	if st.Get("target_entropy") == "auto" {
		if st.Int("action_dim") == 0 {
			c.Errorf("action_dim", "required with target_entropy auto (−action_dim, TorchRL's −numel of the action spec): the number of action elements; or give target_entropy")
		}
	} else if st.Written("action_dim") {
		c.Warnf("action_dim", "is used by target_entropy auto only; ignored")
	}
	checkAlphaBounds(c)
}

// checkActionDimSize rejects an action_dim written as the name of a dim the stage uses for
// something else (a batch dim's is a spec error already): the ensemble's (the Q-networks),
// CQL's sampled actions (random_dim).
func checkActionDimSize(c *spec.Check) {
	d := c.Stage.Values["action_dim"].Dim
	if d == "" {
		return
	}
	for _, p := range []struct{ param, what string }{{"ensemble_dim", "the ensemble dim (the Q-networks)"}, {"random_dim", "CQL's random_dim (the sampled actions)"}} {
		if c.Stage.Def.Param(p.param) != nil && d == c.Stage.String(p.param) {
			c.Errorf("action_dim", "%q is %s, not a size of the action: give the number of action elements, or the name of a dim of the action", d, p.what)
		}
	}
}

// checkAlphaBounds rejects min_alpha above max_alpha, and max_alpha 0 beside min_alpha, as
// TorchRL raises ValueError for it (sac.py:410-414: "max_alpha must be either None or greater
// than 0"; null is the 1e9 TorchRL fills in).
func checkAlphaBounds(c *spec.Check) {
	lo, hi := c.Stage.Float("min_alpha"), c.Stage.Float("max_alpha")
	if lo > 0 && hi > 0 && lo > hi {
		c.Errorf("min_alpha", "%g is above max_alpha %g", lo, hi)
	}
	if v := c.Stage.Values["max_alpha"]; lo > 0 && v.Written && !v.Null && hi == 0 {
		c.Errorf("max_alpha", "must be null or greater than 0 when min_alpha is set (TorchRL raises ValueError: max_alpha must be either None or greater than 0.)")
	}
}

// ensembleShape is the layout of an ensemble key, [Q, *batch].
func (l *Lowerer) ensembleShape(st *spec.Stage) ir.Shape {
	return l.B.Shape(append([]string{st.String("ensemble_dim")}, l.Batch().Names()...)...)
}

// sacLogAlpha reads log_alpha and returns it as loss_alpha uses it, and α as every other term
// uses it (SACLoss._alpha, SEMANTICS.md §11.24): exp of log α, clamped to [log min_alpha,
// log max_alpha] when set (max_alpha 1e9 when min_alpha comes alone, as TorchRL fills it),
// detached. TorchRL clamps the parameter's data in place, so
// loss_alpha sees the clamped value while the gradient is the unclamped one's (straight
// through); fixed_alpha makes log_alpha data (a buffer).
func (l *Lowerer) sacLogAlpha(st *spec.Stage) (logAlpha, alpha *ir.Node) {
	b := l.B
	logAlpha = l.ReadShaped("log_alpha", b.Shape())
	if in := l.env["log_alpha"]; st.Bool("fixed_alpha") && in.Op == ir.OpInput {
		in.Input.Differentiable = false // a buffer in TorchRL: data
	}
	clamped := logAlpha
	// torch.tensor(min_alpha).log(): a float32 buffer, the log taken in float32.
	log32 := func(name string, v float64) *ir.Node {
		x := l.Hyper(name, v, true, "α's bound as TorchRL stores it")
		lg := math.Log(x)
		if l.S.ParamDType == spec.Float32 {
			lg = float64(float32(lg))
		}
		l.Hyper("log_"+name, lg, false, "log of "+name+" (a float32 buffer in TorchRL)")
		return b.Const(lg)
	}
	lo, hi := st.Float("min_alpha"), st.Float("max_alpha")
	if lo > 0 && hi == 0 {
		hi = 1e9 // TorchRL's bound when min_alpha comes alone (sac.py:410-414)
	}
	if lo > 0 {
		clamped = b.MaxFirst(clamped, log32("min_alpha", lo))
	}
	if hi > 0 {
		clamped = b.MinFirst(clamped, log32("max_alpha", hi))
	}
	if clamped != logAlpha {
		// log α − log α.detach() + clamp(log α).detach(): the clamped value, the identity's gradient.
		logAlpha = b.Note(b.Add(b.Sub(logAlpha, b.Detach(logAlpha)), b.Detach(clamped)), "log_alpha_clamped")
	}
	return logAlpha, b.Note(b.Detach(b.Exp(clamped)), "alpha")
}

// prepareSAC is SACLoss._compute_target_v2 up to the estimator (SEMANTICS.md §14.2): under
// no_grad, the next state's soft value
//
//	V' = min_k (Q'_k(s', a') − α·log π(a'|s'))
//
// which the estimator (TD(0) by default) bootstraps from: value_target = r + γ(1 − terminated)V'.
func prepareSAC(l *Lowerer, st *spec.Stage) {
	b := l.B
	l.readMask()
	_, alpha := l.sacLogAlpha(st)
	qn := l.ReadShaped("next_state_action_value", l.ensembleShape(st))
	lpn := l.Read("next_log_prob")
	if st.Bool("skip_done_states") {
		// The actor runs on the states that are not done; masked_scatter_ leaves log π' = 0 elsewhere.
		lpn = b.Where(l.Read("done"), b.Const(0), lpn)
	}
	v := b.ReduceMin(b.Sub(qn, b.Mul(alpha, lpn)), st.String("ensemble_dim"))
	l.TargetOnly(v)
}

// lowerSAC is SACLoss.forward, version 2 (sac.py qvalue_v2_loss, actor_loss, _alpha_loss;
// SEMANTICS.md §14), with y the estimator's value_target and α detached:
//
//	loss_qvalue = reduce(Σ_k distance(Q_k(s, a), y))
//	loss_actor  = reduce(α·log π(ã|s) − min_k Q_k(s, ã))     (Q_k with detached parameters)
//	loss_alpha  = reduce(−log α·(log π(ã|s).detach() + target_entropy))
//	alpha = α;  entropy = mean(−log π(ã|s))                 (not with reduction none)
//	td_error = max_k |Q_k(s, a) − y|                        (the priority, detached)
func lowerSAC(l *Lowerer, st *spec.Stage) {
	b := l.B
	ens := st.String("ensemble_dim")
	logAlpha, alpha := l.sacLogAlpha(st)
	ref := "SEMANTICS.md §14.3; sac.py SACLoss."
	q, y := l.sacQValueLoss(st, "the soft TD target", "qvalue_v2_loss", ref)
	lp := l.sacActorLoss(st, alpha, ref)
	l.sacAlphaTerms(st, logAlpha, alpha, lp, l.sacTargetEntropy(st), "log π(ã|s)", "the entropy's sample estimate", ref, "_alpha_loss")
	l.Write("priority", l.maskOf(b.Detach(b.ReduceMax(b.Abs(b.Sub(q, y)), ens))), ir.Metric,
		"the replay priority max_k |Q_k(s, a) − y| over the ensemble (absolute, not squared), detached (TorchRL key td_error)")
}

// sacQValueLoss is the Q ensemble's regression SACLoss (qvalue_v2_loss) and CQLLoss (q_loss)
// share, y the estimator's value_target (target names it in the doc; method is the TorchRL
// method, ref the SEMANTICS.md section and class the gradient doc cites, ending in "."):
//
//	loss_qvalue = reduce(Σ_k distance(Q_k(s, a), y))
//
// It returns Q_k(s, a) [Q, *batch] and y (detached), for the loss's priority.
func (l *Lowerer) sacQValueLoss(st *spec.Stage, target, method, ref string) (q, y *ir.Node) {
	b := l.B
	ens := st.String("ensemble_dim")
	red := st.String("reduction")
	q = l.ReadShaped("state_action_value", l.ensembleShape(st))
	l.KeyDoc("state_action_value", "Q_k(s, a): each member of the current Q ensemble at the stored action ["+ens+", *batch] (TorchRL key state_action_value, from qvalue_network_params)")
	y = b.Detach(l.Read("value_target"))
	fn := st.String("loss_function")
	l.Output("loss_qvalue", l.reduce(b.Sum(l.distance(q, y, fn), ens), red), ir.LossTerm,
		"Σ_k "+fn+"(Q_k(s, a), y) over the ensemble, y "+target+", reduced by reduction ("+red+") ("+method+")")
	l.GradDoc("state_action_value", "loss_qvalue: ℓ'(Q_k − y)·s for each member k, ℓ' = 2x (l2), sign(x) (l1), clamp(x, −1, 1) (smooth_l1); s = 1/n for mean, 1 for sum and none ("+ref+method+")")
	return q, y
}

// sacActorLoss is the actor's term SACLoss and CQLLoss share (actor_loss), α detached and the
// Q-networks' parameters detached (ref as for sacQValueLoss):
//
//	loss_actor = reduce(α·log π(ã|s) − min_k Q_k(s, ã))
//
// It returns log π(ã|s) [*batch], which the temperature terms use detached.
func (l *Lowerer) sacActorLoss(st *spec.Stage, alpha *ir.Node, ref string) (lp *ir.Node) {
	b := l.B
	ens := st.String("ensemble_dim")
	lp = l.Read("log_prob")
	l.KeyDoc("log_prob", "log π(ã|s) of the actor's reparameterised sample ã on s [*batch] (TorchRL's compute_rsample_log_prob in actor_loss)")
	qa := l.ReadShaped("state_action_value_actor", l.ensembleShape(st))
	l.KeyDoc("state_action_value_actor", "Q_k(s, ã): each member of the current Q ensemble, with detached parameters, at the actor's sample ã ["+ens+", *batch] (TorchRL's state_action_value in actor_loss)")
	minQ := b.Note(firstMin(b, qa, ens), "min_q_actor")
	l.Output("loss_actor", l.reduce(b.Sub(b.Mul(alpha, lp), minQ), st.String("reduction")), ir.LossTerm,
		"α·log π(ã|s) − min_k Q_k(s, ã), reduced by reduction (actor_loss)")
	s := "s = 1/n for mean, 1 for sum and none"
	l.GradDoc("state_action_value_actor", "loss_actor: −s at the first minimal member k* = argmin_k Q_k(s, ã), 0 at the others (torch.min's index); chain it into ã with the Q-networks' detached parameters; "+s+" ("+ref+"actor_loss)")
	l.GradDoc("log_prob", "loss_actor: α·s (α detached); loss_alpha uses log π detached and adds nothing; "+s+" ("+ref+"actor_loss)")
	return lp
}

// sacTargetEntropy is the entropy target of SACLoss, REDQLoss and CQLLoss as the kernel uses
// it: target_entropy, or for auto −action_dim (TorchRL's −numel of the action spec), a
// float32 buffer either way (SEMANTICS.md §14.2).
func (l *Lowerer) sacTargetEntropy(st *spec.Stage) float64 {
	te := st.Float("target_entropy")
	if st.Get("target_entropy") == "auto" {
		te = -float64(st.Int("action_dim"))
	}
	return l.Hyper("target_entropy", te, true, "the entropy target (a float32 buffer in TorchRL; auto: −action_dim)")
}

// sacAlphaTerms are the temperature loss and the metrics of SACLoss and DiscreteSACLoss
// (_alpha_loss, forward), lp the log-probability term (what names it in the docs, entropyDoc
// says what −lp estimates):
//
//	loss_alpha = reduce(−log α·(lp.detach() + target_entropy))
//	alpha = α;  entropy = mean(−lp)           (detached; not with reduction none)
func (l *Lowerer) sacAlphaTerms(st *spec.Stage, logAlpha, alpha, lp *ir.Node, te float64, what, entropyDoc, ref, method string) {
	b := l.B
	red := st.String("reduction")
	l.Output("loss_alpha", l.reduce(b.Neg(b.Mul(logAlpha, b.Add(b.Detach(lp), b.Const(te)))), red), ir.LossTerm,
		"−log α·("+what+" + target_entropy), log π detached, reduced by reduction ("+method+")")
	if red != "none" {
		l.Output("alpha", alpha, ir.Metric, "α = exp(log_alpha) (clamped to [min_alpha, max_alpha] when set), detached ("+l.stage.Def.Class+"._alpha)")
		l.Output("entropy", l.mean(b.Neg(b.Detach(lp))), ir.Metric, "mean(−"+what+"), "+entropyDoc+", detached")
	}
	if !st.Bool("fixed_alpha") {
		l.GradDoc("log_alpha", "loss_alpha: −Σ ("+what+" + target_entropy)·s over the batch, the unclamped gradient where min_alpha/max_alpha clamp the value; s = 1/n for mean, 1 for sum and none ("+ref+method+")")
	}
}

// firstMin is x's minimum over axis with torch.min(dim)'s gradient: all of it to the first
// minimal index (a NaN counts as minimal, as torch.min propagates it), where ReduceMin
// shares it among ties (SEMANTICS.md §14.1).
func firstMin(b *ir.Builder, x *ir.Node, axis string) *ir.Node {
	return b.Gather(x, b.ArgMax(b.Neg(x), axis), axis)
}
