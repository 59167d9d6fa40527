package lower

import (
	"fmt"
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// DiscreteSACLoss (torchrl/objectives/sac.py, SEMANTICS.md §15.3): SAC over a discrete action
// set, each expectation over the actions taken exactly with the policy's probabilities from
// its logits. The networks' outputs are the inputs: the actor's logits on s and s', the
// current Q ensemble's action values on s and the target ensemble's on s'.

// keyNextLogits is the actor's logits on the next observation.
var keyNextLogits = spec.KeyDef{Name: "next_logits", NextOf: "logits", Shape: "[*batch, A]",
	Doc:    "the current policy's logits on the next observation [*batch, A] (TorchRL runs the actor on next under no_grad): no gradient",
	Sample: spec.Sample{Dist: "normal", Std: 1.5, ExtremeLogits: true}}

func init() {
	inf := math.Inf(1)
	params := pickParams(sacParams(), "num_qvalue_nets", "ensemble_dim", "loss_function", "min_alpha", "max_alpha", "fixed_alpha", "target_entropy", "skip_done_states", "reduction")
	for i := range params {
		switch p := &params[i]; p.Name {
		case "target_entropy":
			p.Doc = "the entropy target of loss_alpha; auto: −log(1/A)·target_entropy_weight, A the size of action_dim"
		case "skip_done_states":
			p.Doc = "TorchRL runs the actor only on the next states that are not done: there the next log-probabilities are the normalised logits (not log of the clamped probabilities), and the next value is 0 where done"
		}
	}
	params = append(params,
		spec.ParamDef{Name: "target_entropy_weight", Type: spec.Float, Default: 0.98, Min: -inf, Max: inf, Doc: "the fraction of the uniform policy's entropy log A that target_entropy auto is"},
		spec.ParamDef{Name: "action_space", Type: spec.Enum, Enum: []string{"one_hot", "categorical"}, ValueAliases: []spec.Alias{oneHotAlias},
			Doc: "how the stored action selects Q(s, a): an index (categorical) or a one-hot vector (one_hot)"},
		paramActionDim)
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "discrete_sac", Class: "DiscreteSACLoss", Source: sacSource,
			Params:  params,
			Ignored: append([]spec.ParamDef{ignoredAlphaInit, ignoredNumActions}, ignoredTargetNets("next_action_value", "delay_qvalue")...),
			Keys: []spec.KeyDef{keyLogits, keyActionValue, keyAction, keyNextLogits, keyNextActionValue, keyLogAlpha,
				keyPriority, keyMask, keyReward, keyDone, keyTerminated, keyValueTarget},
			Check: func(c *spec.Check) {
				checkTDEstimator(c)
				checkEnsembleDim(c)
				checkInnerDim(c, "action_dim", "after")
				checkActionSpace(c)
				checkAlphaBounds(c)
			},
			Example: &spec.Example{Params: map[string]any{"action_dim": "A", "action_space": "one_hot"},
				Before: []spec.Dim{ensembleExample}, After: []spec.Dim{{Name: "A", Size: 4}}, Sizes: ensembleSize}},
		Bootstrap: prepareDiscreteSAC,
		Lower:     lowerDiscreteSAC,
	})
}

// actionShape is the layout of the actor's logits, [*batch, A]; ensembleActionShape that of an
// ensemble's action values, [Q, *batch, A].
func (l *Lowerer) actionShape(st *spec.Stage) ir.Shape { return l.eventShape(st.String("action_dim")) }

func (l *Lowerer) ensembleActionShape(st *spec.Stage) ir.Shape {
	return append(l.ensembleShape(st), l.B.Shape(st.String("action_dim"))...)
}

// prepareDiscreteSAC is DiscreteSACLoss._compute_target up to the estimator (sac.py:1402-1480):
// under no_grad, with p' = softmax(next logits),
//
//	V' = Σ_a p'_a·(min_k Q'_k(s', a) − α·log p'_a),  log p' = log(where(p' = 0, 1e-8, p'))
//
// with skip_done_states: log p' = log_softmax(next logits), and V' = 0 where done.
func prepareDiscreteSAC(l *Lowerer, st *spec.Stage) {
	b := l.B
	l.readMask()
	a := st.String("action_dim")
	_, alpha := l.sacLogAlpha(st)
	qn := l.ReadShaped("next_action_value", l.ensembleActionShape(st))
	l.KeyDoc("next_action_value", "Q'_k(s', ·): each member of the target Q ensemble's action values on the next observation ["+st.String("ensemble_dim")+", *batch, "+a+"]: no gradient")
	z := l.ReadShaped("next_logits", l.actionShape(st))
	s, es, sum := l.softmaxParts(z, a)
	p := b.Div(es, sum)
	var lp *ir.Node
	if st.Bool("skip_done_states") {
		lp = b.Sub(s, b.Log(sum)) // next_dist.logits
	} else {
		lp = b.Log(b.Where(b.Eq(p, b.Const(0)), b.Const(1e-8), p))
	}
	v := b.Sum(b.Mul(p, b.Sub(b.ReduceMin(qn, st.String("ensemble_dim")), b.Mul(alpha, lp))), a)
	if st.Bool("skip_done_states") {
		v = b.Where(l.Read("done"), b.Const(0), v)
	}
	l.TargetOnly(v)
}

// lowerDiscreteSAC is DiscreteSACLoss.forward (sac.py qvalue_loss l.1482, actor_loss l.1522,
// _alpha_loss; SEMANTICS.md §15.3), with y the estimator's value_target, p = softmax(z) and
// log p = log_softmax(z) of the actor's logits z, α detached:
//
//	loss_qvalue = reduce(Σ_k distance(Q_k(s, a), y))          (a the stored action)
//	loss_actor  = reduce(Σ_a p_a·(α·log p_a − min_k Q_k(s, a).detach()))
//	loss_alpha  = reduce(−log α·(Σ_a p_a·log p_a + target_entropy))   (the sum detached)
//	alpha = α;  entropy = mean(−Σ_a p_a·log p_a)                (not with reduction none)
//	td_error = max_k |Q_k(s, a) − y|                          (the priority, detached)
func lowerDiscreteSAC(l *Lowerer, st *spec.Stage) {
	b := l.B
	ens, a := st.String("ensemble_dim"), st.String("action_dim")
	red := st.String("reduction")
	logAlpha, alpha := l.sacLogAlpha(st)
	qAll := l.ReadShaped("action_value", l.ensembleActionShape(st))
	l.KeyDoc("action_value", "Q_k(s, ·): each member of the current Q ensemble's action values on the observation ["+ens+", *batch, "+a+"] (TorchRL key action_value, from qvalue_network_params)")
	q := b.Note(l.valueAt(st, qAll, l.storedAction(st)), "chosen_action_value")
	y := b.Detach(l.Read("value_target"))
	fn := st.String("loss_function")
	l.Output("loss_qvalue", l.reduce(b.Sum(l.distance(q, y, fn), ens), red), ir.LossTerm,
		"Σ_k "+fn+"(Q_k(s, a), y) over the ensemble, y the soft TD target, reduced by reduction ("+red+") (qvalue_loss)")

	z := l.ReadShaped("logits", l.actionShape(st))
	l.KeyDoc("logits", "the current policy's logits on the observation [*batch, "+a+"] (network output)")
	s, es, sum := l.softmaxParts(z, a)
	p := b.Div(es, sum)
	logp := b.Note(b.Sub(s, b.Log(sum)), "log_softmax")
	minQ := b.Note(b.ReduceMin(b.Detach(qAll), ens), "min_q")
	g := b.Sub(b.Mul(alpha, logp), minQ)
	l.Output("loss_actor", l.reduce(b.Sum(b.Mul(p, g), a), red), ir.LossTerm,
		"Σ_a π(a|s)·(α·log π(a|s) − min_k Q_k(s, a)), Q detached, reduced by reduction (actor_loss)")

	te := st.Float("target_entropy")
	if st.Get("target_entropy") == "auto" {
		// −float(np.log(1/num_actions)·target_entropy_weight), in double.
		te = -(math.Log(1/float64(b.Shape(a).Numel())) * st.Float("target_entropy_weight"))
	}
	te = l.Hyper("target_entropy", te, true, "the entropy target (a float32 buffer in TorchRL; auto: −log(1/A)·target_entropy_weight)")
	l.sacAlphaTerms(st, logAlpha, alpha, b.Note(b.Sum(b.Mul(p, logp), a), "expected_log_prob"), te, "Σ_a π(a|s)·log π(a|s)", "the policy's entropy", "SEMANTICS.md §14.3; sac.py DiscreteSACLoss.", "_alpha_loss")
	l.Write("priority", l.maskOf(b.Detach(b.ReduceMax(b.Abs(b.Sub(q, y)), ens))), ir.Metric,
		"the replay priority max_k |Q_k(s, a) − y| over the ensemble (absolute, not squared), detached (TorchRL key td_error)")

	sc := "s = 1/n for mean, 1 for sum and none"
	l.GradDoc("action_value", "loss_qvalue: ℓ'(Q_k(s, a) − y)·s for each member k at the stored action only (the gathered entry, or action_a for one_hot), ℓ' = 2x (l2), sign(x) (l1), clamp(x, −1, 1) (smooth_l1); loss_actor uses the values detached; "+sc+" (SEMANTICS.md §15.3; sac.py DiscreteSACLoss.qvalue_loss)")
	l.GradDoc("logits", "loss_actor: p_j·(g_j − Σ_a p_a·g_a)·s, g_a = α·log p_a − min_k Q_k(s, a); loss_alpha uses the expectation detached and adds nothing; "+sc+" (SEMANTICS.md §15.3; sac.py DiscreteSACLoss.actor_loss)")
}

// ignoredNumActions is DiscreteSACLoss's num_actions, which the spec's action dim already
// says: a note when it is that dim's size, an error when not.
var ignoredNumActions = spec.ParamDef{Name: "num_actions", Type: spec.Int, Min: 1, Max: math.Inf(1),
	Doc: "the number of actions, which is the size of the dim action_dim names",
	Refuse: func(s *spec.Spec, st *spec.Stage, v any) string {
		a := st.String("action_dim")
		if n := s.DimSize(a); v != n {
			return fmt.Sprintf("%v differs from the size %d of action_dim %s: the number of actions is that dim's size; remove num_actions, or declare %s: %v under dims", v, n, a, a, v)
		}
		return ""
	}}
