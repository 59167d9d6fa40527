package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// CQLLoss (torchrl/objectives/cql.py, SEMANTICS.md §16.2): SAC's actor, Q and temperature
// terms (sac.go), a behaviour-cloning actor term, and the conservative term, a logsumexp of
// the current Q-networks at sampled actions minus their value at the stored action, with the
// Lagrange variant's loss_alpha_prime. The sampled actions' Q-values and log-probs are inputs
// (the caller draws the actions and runs its networks): kernels draw no random numbers.

const cqlSource = "torchrl/objectives/cql.py"

// cqlRef starts the gradient docs' citations: the section and TorchRL's class.
const cqlRef = "SEMANTICS.md §16.2; cql.py CQLLoss."

// The keys only CQLLoss reads. The Q-values at sampled actions are [Q, *batch, R]: TorchRL's
// [Q, B·R, 1] with row b·R + r (repeat_interleave) reshaped.
var (
	cqlSample      = spec.Sample{Dist: "normal", Std: 2}
	cqlLogPiSample = spec.Sample{Dist: "uniform", Lo: -3, Hi: 1}

	keyBCSampleLogProb = spec.KeyDef{Name: "bc_sample_log_prob", Default: []string{"bc_sample_log_prob"}, Differentiable: true,
		Doc:    "log π(ã₂|s) of the second reparameterised sample ã₂ that actor_bc_loss draws on s for itself (TorchRL's rsample_and_log_prob in actor_bc_loss)",
		Sample: cqlLogPiSample}
	keyBCLogProb = spec.KeyDef{Name: "bc_log_prob", Default: []string{"bc_log_prob"}, Differentiable: true,
		Doc:    "log π(a|s) of the stored action under the current actor (TorchRL's dist.log_prob(action) in actor_bc_loss)",
		Sample: spec.Sample{Dist: "uniform", Lo: -4, Hi: 0}}
	keyQRandom = spec.KeyDef{Name: "q_random", Default: []string{"q_random"}, Differentiable: true, Shape: "[Q, *batch, R]",
		Doc:    "the current Q-networks at R actions drawn uniformly from [−1, 1]^D on s (TorchRL's q_random in cql_loss)",
		Sample: cqlSample}
	keyQCurr = spec.KeyDef{Name: "q_curr", Default: []string{"q_curr"}, Differentiable: true, Shape: "[Q, *batch, R]",
		Doc:    "the current Q-networks at R actions the actor samples on s (TorchRL's q_curr in cql_loss)",
		Sample: cqlSample}
	keyQNew = spec.KeyDef{Name: "q_new", Default: []string{"q_new"}, Differentiable: true, Shape: "[Q, *batch, R]",
		Doc:    "the current Q-networks on the next observation s' at R actions the actor samples on s' (TorchRL's q_new in cql_loss)",
		Sample: cqlSample}
	keyCurrLogPis = spec.KeyDef{Name: "curr_log_pis", Default: []string{"curr_log_pis"}, Shape: "[*batch, R]",
		Doc:    "log π of the R actions behind q_curr (TorchRL samples them with actor_params.data): no gradient",
		Sample: cqlLogPiSample}
	keyNewLogPis = spec.KeyDef{Name: "new_log_pis", Default: []string{"new_log_pis"}, Shape: "[*batch, R]",
		Doc:    "log π of the R actions behind q_new, sampled on s' (actor_params.data): no gradient",
		Sample: cqlLogPiSample}
	keyLogAlphaPrime = spec.KeyDef{Name: "log_alpha_prime", Default: []string{"log_alpha_prime"}, Differentiable: true, Shape: "[]",
		Doc:    "log α', the Lagrange multiplier's logarithm of with_lagrange, a scalar (TorchRL's parameter log_alpha_prime, initialised to 0)",
		Sample: spec.Sample{Dist: "normal", Std: 0.5}}
)

func init() {
	inf := math.Inf(1)
	n := paramNumQValueNets
	n.Min, n.Max = 2, 2
	n.Doc = "always 2: CQLLoss takes no such argument and fixes its ensemble at two Q-networks (cql.py:317); the extent of ensemble_dim"
	params := append([]spec.ParamDef{n}, pickParams(sacParams(), "ensemble_dim", "loss_function", "min_alpha", "max_alpha", "fixed_alpha", "target_entropy", "action_dim", "reduction")...)
	for i := range params {
		if params[i].Name == "action_dim" {
			params[i].Doc = "D, the number of action elements (TorchRL's action.shape[-1]): the uniform actions' log-density log(0.5^D), and target_entropy auto (−D)"
		}
	}
	withLagrange := func(st *spec.Stage) bool { return st.Bool("with_lagrange") }
	params = append(params,
		spec.ParamDef{Name: "temperature", Type: spec.Float, Default: 1.0, Min: 0, Max: inf, MinOpen: true, MaxOpen: true, Doc: "T of the conservative term T·logsumexp(x/T) (a Python float in TorchRL)"},
		spec.ParamDef{Name: "min_q_weight", Type: spec.Float, Default: 1.0, Min: 0, Max: inf, MaxOpen: true, Doc: "w, the conservative term's weight (a Python float in TorchRL)"},
		spec.ParamDef{Name: "max_q_backup", Type: spec.Bool, Default: false, Doc: "the next value is min_k max_r Q'_k(s', a'_r) over R actions sampled on s' (next_state_action_value [Q, *batch, R]), without the entropy term"},
		spec.ParamDef{Name: "deterministic_backup", Type: spec.Bool, Default: true, Applies: func(st *spec.Stage) bool { return !st.Bool("max_q_backup") },
			Doc: "the next value is min_k Q'_k(s', a') without −α·log π(a'|s'); false subtracts it (next_log_prob is then an input)"},
		spec.ParamDef{Name: "num_random", Type: spec.Int, Default: 10, Min: 1, Max: inf, Doc: "R, the number of sampled actions per kind (the extent of random_dim)"},
		spec.ParamDef{Name: "random_dim", Type: spec.DimName, Doc: "the dim of the R sampled actions, declared after the batch dims (default R, added with num_random samples when dims lacks it)"},
		spec.ParamDef{Name: "with_lagrange", Type: spec.Bool, Default: false, Doc: "adds loss_alpha_prime, the Lagrange multiplier's loss (log_alpha_prime is then an input); loss_cql is not scaled by α'"},
		spec.ParamDef{Name: "lagrange_thresh", Type: spec.Float, Default: 0.0, Min: -inf, Max: inf, MinOpen: true, MaxOpen: true, Applies: withLagrange,
			Doc: "τ, the target gap of loss_alpha_prime (TorchRL's target_action_gap, a Python float)"},
	)
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "cql", Class: "CQLLoss", Source: cqlSource,
			Params:   params,
			Rejected: []spec.Rejected{rejectGamma},
			Ignored:  append([]spec.ParamDef{ignoredAlphaInit}, ignoredTargetNets("next_state_action_value", "delay_actor", "delay_qvalue")...),
			Keys: []spec.KeyDef{keyLogProb, keyStateActionValue, keyStateActionValueActor, keyNextStateActionValue, keyNextLogProb, keyLogAlpha,
				keyBCSampleLogProb, keyBCLogProb, keyQRandom, keyQCurr, keyQNew, keyCurrLogPis, keyNewLogPis, keyLogAlphaPrime,
				keyPriority, keyMask, keyReward, keyDone, keyTerminated, keyValueTarget},
			Check: checkCQL,
			Example: &spec.Example{Params: map[string]any{"action_dim": 1},
				Before: []spec.Dim{ensembleExample}, After: []spec.Dim{{Name: "R", Size: 10}},
				Sizes: map[string]string{"num_qvalue_nets": "Q", "num_random": "R"}}},
		Bootstrap: prepareCQL,
		Lower:     lowerCQL,
	})
}

// checkCQL applies CQLLoss's defaults and checks: TD(0) with γ 0.99 (TD(1), TD(λ) allowed),
// the two-member ensemble dim, the sample dim, action_dim (always needed), α's bounds, and
// with_lagrange's scalar loss, which TorchRL cannot return beside reduction none's
// per-sample losses.
func checkCQL(c *spec.Check) {
	st := c.Stage
	checkTDEstimator(c)
	checkEnsembleDim(c)
	if ens := st.String("ensemble_dim"); c.Spec.DimSize(ens) > 0 && c.Spec.DimSize(ens) != 2 {
		c.Errorf("ensemble_dim", "dims.%s has %d members; CQLLoss's ensemble is always 2 Q-networks (cql.py:317)", ens, c.Spec.DimSize(ens))
	}
	checkCountedDim(c, countedDim{param: "random_dim", count: "num_random", def: "R", where: "after", what: "the sample dim", unit: "samples"})
	checkActionDimSize(c)
	if st.Int("action_dim") == 0 {
		c.Errorf("action_dim", "required: the number of action elements D (TorchRL's action.shape[-1]), for the uniform actions' log-density log(0.5^D)")
	}
	checkAlphaBounds(c)
	if st.Bool("max_q_backup") && st.Written("deterministic_backup") && !st.Bool("deterministic_backup") {
		c.Warnf("deterministic_backup", "is ignored with max_q_backup: TorchRL's max backup has no entropy term (cql.py:709-729)")
	}
	if !st.Bool("with_lagrange") && st.Written("lagrange_thresh") {
		c.Warnf("lagrange_thresh", "is used by with_lagrange only; ignored")
	}
	if st.Bool("with_lagrange") && st.String("reduction") == "none" {
		c.Errorf("with_lagrange", "does not go with reduction none: TorchRL raises, as loss_alpha_prime is a scalar that the [*batch] losses' output TensorDict cannot hold (cql.py:557-568); use reduction mean or sum")
	}
}

// sampleShape is the layout of the Q-values at sampled actions, [Q, *batch, R].
func (l *Lowerer) sampleShape(st *spec.Stage) ir.Shape {
	return l.B.Shape(append(append([]string{st.String("ensemble_dim")}, l.Batch().Names()...), st.String("random_dim"))...)
}

// prepareCQL is CQLLoss._get_value_v up to the estimator (cql.py:677-735; SEMANTICS.md §16.2):
// under no_grad, the next value
//
//	V' = min_k Q'_k(s', a')                          (deterministic_backup, the default)
//	   = min_k Q'_k(s', a') − α·log π(a'|s')          (deterministic_backup false)
//	   = min_k max_r Q'_k(s', a'_r)                    (max_q_backup: R actions sampled on s')
//
// which the estimator (TD(0) by default) bootstraps from.
func prepareCQL(l *Lowerer, st *spec.Stage) {
	b := l.B
	l.readMask()
	ens := st.String("ensemble_dim")
	if st.Bool("max_q_backup") {
		r := st.String("random_dim")
		qn := l.ReadShaped("next_state_action_value", l.sampleShape(st))
		l.KeyDoc("next_state_action_value", "Q'_k(s', a'_r): each member of the target Q ensemble at R actions the actor samples on s' ["+ens+", *batch, "+r+"] (max_q_backup; TorchRL's [Q, B·R, 1] reshaped): no gradient")
		l.TargetOnly(b.ReduceMin(b.ReduceMax(qn, r), ens))
		return
	}
	qn := l.ReadShaped("next_state_action_value", l.ensembleShape(st))
	l.KeyDoc("next_state_action_value", "Q'_k(s', a'): each member of the target Q ensemble at the action a' the actor samples on s' ["+ens+", *batch]: no gradient")
	v := b.ReduceMin(qn, ens)
	if !st.Bool("deterministic_backup") {
		_, alpha := l.sacLogAlpha(st)
		v = b.Sub(v, b.Mul(alpha, l.Read("next_log_prob")))
	}
	l.TargetOnly(v)
}

// lowerCQL is CQLLoss.forward (cql.py:531-584: q_loss, cql_loss, alpha_prime_loss,
// actor_bc_loss, actor_loss, alpha_loss; SEMANTICS.md §16.2), with y the estimator's
// value_target, α detached, w = min_q_weight, T = temperature, ρ = log(0.5^D):
//
//	loss_qvalue = reduce(Σ_k distance(Q_k(s, a), y))
//	lse_k[b, r] = w·T·logsumexp((q_random − ρ, q_new − new_log_pis, q_curr − curr_log_pis)_k[b, r] / T)
//	loss_cql    = reduce(mean_r Σ_k (lse_k[b, r] − w·Q_k(s_b, a_b)))
//	loss_alpha_prime = −α'·(mean_{b,k,r}(lse_k[b, r] − w·Q_k(s_b, a_b)) − τ),  α' = min(exp(log α'), 1e6)
//	loss_actor_bc = reduce(α·log π(ã₂|s) − log π(a|s))
//	loss_actor  = reduce(α·log π(ã|s) − min_k Q_k(s, ã))
//	loss_alpha  = reduce(−log α·(log π(ã|s).detach() + target_entropy))
//	alpha = α;  entropy = mean(−log π(ã|s))        (not with reduction none)
//	td_error = max_k (Q_k(s, a) − y)²              (the priority, detached)
//
// The logsumexp runs over the three sources of one sample index r, as TorchRL's
// concatenation along its last dim does; each row takes the mean over its own R samples
// (TorchRL broadcasts [B·R] against [B, 1] and gives every row the batch-wide mean, which
// mean and sum reduce to the same value).
func lowerCQL(l *Lowerer, st *spec.Stage) {
	b := l.B
	ens, red := st.String("ensemble_dim"), st.String("reduction")
	logAlpha, alpha := l.sacLogAlpha(st)
	q, y := l.sacQValueLoss(st, "the TD target", "q_loss", cqlRef)

	gap := l.cqlGap(st, q)
	l.Output("loss_cql", l.reduce(b.Mean(b.Sum(gap, ens), st.String("random_dim")), red), ir.LossTerm,
		"the conservative term: the mean over the row's R samples of Σ_k (w·T·logsumexp over the random, next and current sources − w·Q_k(s, a)), reduced by reduction ("+red+") (cql_loss)")
	if st.Bool("with_lagrange") {
		l.cqlAlphaPrime(st, gap)
	}

	bc := l.Read("bc_sample_log_prob")
	l.Output("loss_actor_bc", l.reduce(b.Sub(b.Mul(alpha, bc), l.Read("bc_log_prob")), red), ir.LossTerm,
		"α·log π(ã₂|s) − log π(a|s), ã₂ actor_bc_loss's own sample and a the stored action, reduced by reduction (actor_bc_loss)")
	lp := l.sacActorLoss(st, alpha, cqlRef)
	l.sacAlphaTerms(st, logAlpha, alpha, lp, l.sacTargetEntropy(st), "log π(ã|s)", "the entropy's sample estimate", cqlRef, "alpha_loss")
	l.Write("priority", l.maskOf(b.Detach(b.ReduceMax(b.Square(b.Sub(q, y)), ens))), ir.Metric,
		"the replay priority max_k (Q_k(s, a) − y)² over the ensemble (squared), detached (TorchRL key td_error)")

	s := "s = 1/n for mean, 1 for sum and none"
	l.GradDoc("bc_sample_log_prob", "loss_actor_bc: α·s (α detached); "+s+" ("+cqlRef+"actor_bc_loss)")
	l.GradDoc("bc_log_prob", "loss_actor_bc: −s; "+s+" ("+cqlRef+"actor_bc_loss)")
}

// cqlGap is the conservative term per member and sample, gap_k[b, r] = lse_k[b, r] −
// w·Q_k(s_b, a_b) [Q, *batch, R] (cql_loss's cql_q1_loss and cql_q2_loss, cql.py:874-910), q
// the ensemble at the stored action.
func (l *Lowerer) cqlGap(st *spec.Stage, q *ir.Node) *ir.Node {
	b := l.B
	ens, r := st.String("ensemble_dim"), st.String("random_dim")
	shape := l.sampleShape(st)
	w := l.Hyper("min_q_weight", st.Float("min_q_weight"), false, "w, the conservative term's weight (a Python float in TorchRL)")
	t := l.Hyper("temperature", st.Float("temperature"), false, "T, the conservative term's temperature (a Python float in TorchRL)")
	// np.log(0.5 ** D) in double: the log-density of the uniform actions on [−1, 1]^D.
	rho := l.Hyper("random_density", math.Log(math.Pow(0.5, float64(st.Int("action_dim")))), false, "ρ = log(0.5^D), the uniform actions' log-density (numpy float64 in TorchRL)")
	qRandom := l.ReadShaped("q_random", shape)
	qNew := l.ReadShaped("q_new", shape)
	qCurr := l.ReadShaped("q_curr", shape)
	lps := b.Shape(append(l.Batch().Names(), r)...)
	newLogPis := l.ReadShaped("new_log_pis", lps)
	currLogPis := l.ReadShaped("curr_log_pis", lps)
	l.KeyDoc("q_random", "Q_k(s, u_r): each member of the current Q ensemble at R actions u_r drawn uniformly from [−1, 1]^D on s ["+ens+", *batch, "+r+"] (TorchRL's q_random, [Q, B·R, 1] with row b·R + r, reshaped)")
	l.KeyDoc("q_curr", "Q_k(s, a_r): each member of the current Q ensemble at R actions a_r ~ π(·|s) ["+ens+", *batch, "+r+"] (TorchRL's q_curr, reshaped)")
	l.KeyDoc("q_new", "Q_k(s', a'_r): each member of the current Q ensemble on the next observation at R actions a'_r ~ π(·|s') ["+ens+", *batch, "+r+"] (TorchRL's q_new: its actions and its Q-values both on s', cql.py:802-806; reshaped)")
	l.KeyDoc("curr_log_pis", "log π(a_r|s) of q_curr's actions [*batch, "+r+"]: no gradient (TorchRL samples with actor_params.data)")
	l.KeyDoc("new_log_pis", "log π(a'_r|s') of q_new's actions [*batch, "+r+"]: no gradient")

	tc := b.Const(t)
	lse := logSumExp(b, b.Div(b.Sub(qRandom, b.Const(rho)), tc), b.Div(b.Sub(qNew, newLogPis), tc), b.Div(b.Sub(qCurr, currLogPis), tc))
	lse = b.Note(b.Mul(b.Mul(lse, b.Const(w)), tc), "min_qf_loss")
	gap := b.Note(b.Sub(lse, b.Mul(q, b.Const(w))), "cql_q_loss")

	sr := "s = 1/n for mean, 1 for sum and none, n the batch elements"
	src := func(x string) string {
		return "loss_cql: w·p_" + x + "·s/R, p_" + x + " the " + x + " source's softmax weight among the three of its sample at temperature T; " + sr + " (" + cqlRef + "cql_loss)"
	}
	l.GradDoc("q_random", src("random"))
	l.GradDoc("q_new", src("new"))
	l.GradDoc("q_curr", src("current"))
	l.GradDoc("state_action_value", "loss_cql: −w·s for each member; "+sr+" ("+cqlRef+"cql_loss)")
	return gap
}

// cqlAlphaPrime is CQLLoss.alpha_prime_loss (cql.py:925-959), always a mean, whatever the
// reduction (its _reduce_loss is called with reduction="mean", then .mean()):
//
//	loss_alpha_prime = −0.5·Σ_k α'·(mean(gap_k) − τ),  α' = clamp_max(exp(log α'), 1e6)
//
// α' is not detached, and neither is gap: the Q inputs get −α'·∂mean(gap)/∂Q from this term,
// which pushes the gap up (TorchRL's training script sums every loss term).
func (l *Lowerer) cqlAlphaPrime(st *spec.Stage, gap *ir.Node) {
	b := l.B
	ens, r := st.String("ensemble_dim"), st.String("random_dim")
	tau := l.Hyper("lagrange_thresh", st.Float("lagrange_thresh"), false, "τ, loss_alpha_prime's target gap (target_action_gap, a Python float in TorchRL)")
	lap := l.ReadShaped("log_alpha_prime", b.Shape())
	l.KeyDoc("log_alpha_prime", "log α', the Lagrange multiplier's logarithm, a scalar (TorchRL's parameter log_alpha_prime, initialised to log 1 = 0)")
	ap := b.Note(b.MinFirst(b.Exp(lap), b.Const(1e6)), "alpha_prime")
	// −0.5·(α'(m₁ − τ) + α'(m₂ − τ)) = −α'·((m₁ + m₂)/2 − τ): the mean over the members too.
	m := l.mean(b.Mean(gap, ens, r))
	l.Output("loss_alpha_prime", b.Neg(b.Mul(ap, b.Sub(m, b.Const(tau)))), ir.LossTerm,
		"−α'·(mean(lse_k − w·Q_k(s, a)) − τ) over the members, the batch and the samples, α' = min(exp(log_alpha_prime), 1e6); always a mean (alpha_prime_loss)")
	s := "s' = 1/(2·n·R), n the batch elements"
	l.GradDoc("log_alpha_prime", "loss_alpha_prime: −α'·(mean gap − τ) where exp(log α') ≤ 1e6, 0 above (clamp_max) ("+cqlRef+"alpha_prime_loss)")
	l.GradDoc("state_action_value", "loss_alpha_prime: +α'·w·R·s' for each member; "+s+" ("+cqlRef+"alpha_prime_loss)")
	for _, k := range []string{"q_random", "q_new", "q_curr"} {
		l.GradDoc(k, "loss_alpha_prime: −α'·w·p·s', p the source's softmax weight; "+s+" ("+cqlRef+"alpha_prime_loss)")
	}
}

// logSumExp is torch.logsumexp over the given tensors taken elementwise, as over a dim they
// were concatenated along: m + log Σ_i exp(x_i − m), m = max_i x_i detached, and m = 0 where
// it is infinite (so an infinite x_i gives ±inf, not NaN).
func logSumExp(b *ir.Builder, xs ...*ir.Node) *ir.Node {
	m := xs[0]
	for _, x := range xs[1:] {
		m = b.Max(m, x)
	}
	m = b.Detach(m)
	m = b.Where(b.Eq(b.Abs(m), b.Const(math.Inf(1))), b.Const(0), m)
	var sum *ir.Node
	for _, x := range xs {
		e := b.Exp(b.Sub(x, m))
		if sum == nil {
			sum = e
		} else {
			sum = b.Add(sum, e)
		}
	}
	return b.Add(b.Log(sum), m)
}
