package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

func init() {
	register(&Stage{
		StageDef: ppoDef("clip_ppo", "ClipPPOLoss", []spec.ParamDef{{Name: "clip_epsilon", Type: spec.FloatOrPair, Default: 0.2, Min: 0, Max: 1, MinOpen: true, MaxOpen: true,
			Doc: "ε: log-weights are clamped to [log1p(−ε), log1p(ε)]; [ε_low, ε_high] clips asymmetrically"}}, nil, nil),
		Lower:     lowerClipPPO,
		Bootstrap: policyBootstrap,
		Summary:   ppoSummary,
	})
}

// lowerClipPPO is TorchRL v0.11.0's ClipPPOLoss.forward (SEMANTICS.md §2.2–2.7), with the
// advantage and value target from the estimator before it, or inputs:
//
//	A    = standardize(A) if normalize_advantage and numel > 1      (§1.3, per call)
//	lw   = log_prob − sample_log_prob
//	lwc  = clamp(lw, log1p(−ε_low), log1p(ε_high))                 (bounds in log space)
//	loss_objective = reduce(−min(exp(lw)·A, exp(lwc)·A))
//	               = reduce(−A·(A ≥ 0 ? min(e^lw, e^hi) : max(e^lw, e^lo)))  (sign-aware, §11.15)
//	clip_fraction  = mean(lwc ≠ lw);  kl_approx = mean(sample_log_prob − log_prob)
//	ESS  = reduce(exp(2·lse₀(lw) − lse₀(2·lw))) / B₀   (lse over the first dim left by squeeze())
//	entropy = mean(H);  loss_entropy = reduce(−c·H)
//	loss_critic = reduce(critic_coeff · distance(value_target, V)), pessimistically clipped
//	explained_variance = 1 − Var₀(y − V)/(Var₀(y) + eps(dtype)), variance along dim 0
func lowerClipPPO(l *Lowerer, st *spec.Stage) {
	b := l.B
	c := l.ppoBegin(st)
	adv, lw := c.adv, c.lw

	gain, lwc := l.clippedGain(st, lw, adv)

	l.Output("loss_objective", l.reduce(b.Neg(gain), c.reduction), ir.LossTerm,
		"clipped surrogate −min(r·A, clip(r, 1−ε, 1+ε)·A), reduced by reduction ("+c.reduction+")")
	l.objectiveGradDoc(c, "loss_objective: −A·exp(lw)·s where the unclipped gain is the min (A ≥ 0 and lw ≤ log1p(ε_high), or A < 0 and lw ≥ log1p(−ε_low), bounds included), else 0; s = 1/n for mean, 1 for sum and none (SEMANTICS.md §2.8, §11.5, §11.15; torchrl/objectives/ppo.py ClipPPOLoss.forward)")
	l.Output("clip_fraction", l.mean(b.Ne(lwc, lw)), ir.Metric,
		"fraction of elements whose log-weight lies outside [log1p(−ε), log1p(ε)]; always a mean")
	l.klApprox(c)
	l.ppoEnd(c)
	l.ess(lw, c.reduction)
}

// clipEpsilon is (ε_low, ε_high): clip_epsilon, or its two values.
func clipEpsilon(st *spec.Stage) (lo, hi float64) {
	if p, ok := st.Get("clip_epsilon").([]float64); ok {
		return p[0], p[1]
	}
	e := st.Float("clip_epsilon")
	return e, e
}

// ess is ClipPPOLoss's effective sample size (SEMANTICS.md §2.3 item 6, §11.6): TorchRL
// squeezes the [*batch, 1] log-weight (dropping every size-1 dim), takes logsumexp along
// dim 0 of what is left, reduces with reduction and divides by the first batch extent.
func (l *Lowerer) ess(lw *ir.Node, reduction string) {
	b := l.B
	batch := l.Batch()
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
		// With a mask, the log-sum-exps run over the valid elements (−inf elsewhere).
		x := lw
		if l.mask != nil {
			x = b.Where(l.mask, lw, b.Const(math.Inf(-1)))
		}
		lse1 := b.Note(b.LogSumExp(x, first), "log_sum_w")              // log Σ w, w = exp(lw)
		lse2 := b.Note(b.LogSumExp(b.Mul(two, x), first), "log_sum_w2") // log Σ w²
		ess = b.Note(b.Exp(b.Sub(b.Mul(two, lse1), lse2)), "ess_col")   // (Σ w)²/Σ w²
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
	var red *ir.Node
	if l.mask == nil {
		red = reduceShape(b, ess, reduction)
	} else {
		// Columns without a valid element have no ESS: they count as 0 and drop out of a mean.
		has := b.Gt(b.Sum(b.Where(l.mask, b.Const(1), b.Const(0)), sameExcept(batch, ess.Shape)...), b.Const(0))
		ess = b.Where(has, ess, b.Const(0))
		red = reduceShape(b, ess, reduction)
		if reduction == "mean" && len(ess.Shape) > 0 {
			red = b.Div(b.SumAll(ess), b.Max(b.SumAll(has), b.Const(1)))
		} else if reduction == "mean" {
			red = ess
		}
	}
	out := b.Div(red, b.Const(float64(batch[0].Size)))
	l.Output("ESS", out, ir.Metric, "effective sample size (Σw)²/Σw²/B₀ of w = exp(log-weight), along the first non-singleton batch dim, reduced by reduction, divided by the first batch extent")
}

// reduceShape is _reduce without a mask, for a metric whose shape is not the batch's (ESS
// per column).
func reduceShape(b *ir.Builder, x *ir.Node, reduction string) *ir.Node {
	switch reduction {
	case "mean":
		return b.MeanAll(x)
	case "sum":
		return b.SumAll(x)
	}
	return x
}

// sameExcept lists the batch dims that shape lacks (the dims a per-column metric reduced).
func sameExcept(batch, shape ir.Shape) []string {
	var out []string
	for _, d := range batch {
		if !shape.Has(d.Name) {
			out = append(out, d.Name)
		}
	}
	return out
}
