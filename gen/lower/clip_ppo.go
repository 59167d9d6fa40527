package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

const ppoSource = "torchrl/objectives/ppo.py ClipPPOLoss.forward"

// lowerClipPPO is TorchRL v0.11.0's ClipPPOLoss.forward (SEMANTICS.md §2.2–2.7), with the
// advantage and value target given (from the estimator, or as inputs):
//
//	A    = standardize(A) if normalize_advantage and numel > 1      (§1.3, per call)
//	lw   = log_prob − sample_log_prob
//	lwc  = clamp(lw, log1p(−ε), log1p(ε))                          (bounds in log space)
//	loss_objective = reduce(−min(exp(lw)·A, exp(lwc)·A))
//	clip_fraction  = mean(lwc ≠ lw);  kl_approx = mean(sample_log_prob − log_prob)
//	ESS  = reduce(exp(2·lse₀(lw) − lse₀(2·lw))) / B₀   (lse over the first dim left by squeeze())
//	entropy = mean(H);  loss_entropy = reduce(−c·H)
//	loss_critic = reduce(critic_coeff · distance(value_target, V)), pessimistically clipped
//	explained_variance = 1 − Var₀(y − V)/(Var₀(y) + eps(dtype)), variance along dim 0
func lowerClipPPO(l *lowerer, loss *spec.Loss, adv, vt *ir.Node, inKernel bool) {
	b := l.b
	batch := b.Batch()
	lp, lpOld := l.in("log_prob"), l.in("sample_log_prob")

	if loss.NormalizeAdvantage {
		if over, ok := normalizeDims(batch, loss.NormalizeExcludeDims); ok {
			adv = b.Note(l.standardize(adv, over, 1e-6), "advantage_normalized")
		}
	}

	lw := b.Note(b.Sub(lp, lpOld), "log_weight")
	lo := b.Const(math.Log1p(-loss.ClipEpsilon))
	hi := b.Const(math.Log1p(loss.ClipEpsilon))
	lwc := b.Note(b.Clamp(lw, lo, hi), "log_weight_clip")
	gain1 := b.Note(b.Mul(b.Exp(lw), adv), "gain1")
	gain2 := b.Note(b.Mul(b.Exp(lwc), adv), "gain2")
	gain := b.Min(gain1, gain2)

	b.Output("loss_objective", l.reduce(b.Neg(gain), loss.Reduction), ir.LossTerm,
		"clipped surrogate −min(r·A, clip(r, 1−ε, 1+ε)·A), reduced by reduction ("+loss.Reduction+")", ppoSource)
	b.Output("clip_fraction", b.MeanAll(b.Ne(lwc, lw)), ir.Metric,
		"fraction of elements whose log-weight lies outside [log1p(−ε), log1p(ε)]; always a mean", ppoSource)
	b.Output("kl_approx", b.MeanAll(b.Sub(lpOld, lp)), ir.Metric,
		"mean(sample_log_prob − log_prob), the k1 estimate of KL(old ‖ new); always a mean", "torchrl/objectives/ppo.py PPOLoss._log_weight, ClipPPOLoss.forward")

	if loss.EntropyBonus {
		h := l.in("entropy")
		b.Output("entropy", b.MeanAll(h), ir.Metric, "mean entropy of the current policy; always a mean", ppoSource)
		b.Output("loss_entropy", l.reduce(b.Mul(b.Const(-loss.EntropyCoeff), h), loss.Reduction), ir.LossTerm,
			"−entropy_coeff·H, reduced by reduction", "torchrl/objectives/ppo.py PPOLoss._weighted_loss_entropy")
	}
	if loss.HasCritic() {
		l.critic(loss, vt, inKernel)
	}
	l.ess(lw, loss.Reduction)
}

// normalizeDims resolves normalize_advantage_exclude_dims (TorchRL dim indices on the
// advantage's [*batch, 1] layout) to the batch dims the statistics run over. ok is false
// when every dim is excluded: TorchRL then returns the advantage unchanged. spec.Parse has
// already rejected out-of-range and repeated dims and an included extent of 1, and a
// one-element batch is skipped (TorchRL standardises only when numel > 1).
func normalizeDims(batch ir.Shape, exclude []int) (over []string, ok bool) {
	if batch.Numel() == 1 {
		return nil, false
	}
	rank := len(batch) + 1
	ex := map[int]bool{}
	for _, d := range exclude {
		if d < 0 {
			d += rank
		}
		ex[d] = true
	}
	if len(ex) == rank {
		return nil, false
	}
	for i, d := range batch {
		if !ex[i] {
			over = append(over, d.Name)
		}
	}
	if len(over) == 0 {
		// Only the trailing singleton is included: spec.Parse rejects this (std of one element).
		return nil, false
	}
	return over, true
}

// critic is PPOLoss.loss_critic (SEMANTICS.md §1.4–1.5, §2.6). With the estimator in the
// kernel the stored value is the current critic's (TorchRL's estimator overwrites it), so
// V_old = V and clipping changes nothing, as in TorchRL.
func (l *lowerer) critic(loss *spec.Loss, y *ir.Node, inKernel bool) {
	b := l.b
	v := l.in("value")
	lossValue := l.distance(y, v, loss.LossCriticType)
	if loss.ClipValue > 0 {
		vOld := v
		if !inKernel {
			vOld = l.in("old_value")
		}
		pre := b.Sub(v, vOld)
		clipped := b.Clamp(pre, b.Const(-loss.ClipValue), b.Const(loss.ClipValue))
		b.Output("value_clip_fraction", b.MeanAll(b.Ne(pre, clipped)), ir.Metric,
			"fraction of elements whose value change V − V_old was clipped to ±clip_value; always a mean", "torchrl/objectives/utils.py _clip_value_loss")
		lossClipped := l.distance(y, b.Add(vOld, clipped), loss.LossCriticType)
		lossValue = b.Max(lossValue, lossClipped)
	}
	b.Output("loss_critic", l.reduce(b.Mul(b.Const(loss.CriticCoeff), lossValue), loss.Reduction), ir.LossTerm,
		"critic_coeff·"+loss.LossCriticType+"(value_target, V), reduced by reduction", "torchrl/objectives/ppo.py PPOLoss.loss_critic")
	if loss.LogExplainedVariance {
		first := b.Batch()[0].Name
		resid := b.Var(b.Sub(y, v), 0, first)
		total := b.Var(y, 0, first)
		ev := b.Sub(b.Const(1), b.Div(resid, b.Add(total, b.Const(b.DType().Eps()))))
		b.Output("explained_variance", ev, ir.Metric,
			"1 − Var(y − V)/(Var(y) + eps), biased variances along the first batch dim only, eps = machine epsilon of the dtype; shape = batch without its first dim", "torchrl/objectives/ppo.py PPOLoss.loss_critic")
	}
}

// ess is ClipPPOLoss's effective sample size (SEMANTICS.md §2.3 item 6, §11.6): TorchRL
// squeezes the [*batch, 1] log-weight (dropping every size-1 dim), takes logsumexp along
// dim 0 of what is left, reduces with reduction and divides by the first batch extent.
func (l *lowerer) ess(lw *ir.Node, reduction string) {
	b := l.b
	batch := b.Batch()
	var first string
	for _, d := range batch {
		if d.Size != 1 {
			first = d.Name
			break
		}
	}
	two := b.Const(2)
	var ess *ir.Node
	if first == "" {
		ess = b.Exp(b.Sub(b.Mul(two, lw), b.Mul(two, lw))) // logsumexp over a 0-d tensor is the identity
	} else {
		lse1 := b.LogSumExp(lw, first)
		lse2 := b.LogSumExp(b.Mul(two, lw), first)
		ess = b.Exp(b.Sub(b.Mul(two, lse1), lse2))
	}
	// squeeze() dropped the size-1 dims; summing over one element drops them here, exactly.
	var ones []string
	for _, d := range ess.Shape {
		if d.Size == 1 {
			ones = append(ones, d.Name)
		}
	}
	if len(ones) > 0 {
		ess = b.Sum(ess, ones...)
	}
	out := b.Div(l.reduce(ess, reduction), b.Const(float64(batch[0].Size)))
	b.Output("ESS", out, ir.Metric, "effective sample size (Σw)²/Σw²/B₀ of w = exp(log-weight), along the first non-singleton batch dim, reduced by reduction, divided by the first batch extent", ppoSource)
}
