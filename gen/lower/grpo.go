package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// GRPOLoss and what DAPO and CISPOLoss share with it (torchrl/objectives/llm/grpo.py,
// SEMANTICS.md §12): token batches [*batch, L] whose last batch dim is the token, keys.mask
// true at the tokens that count, and masks that select everywhere (§11.16): every mean, loss
// term and metric alike, runs over the tokens it sums, so padding, whatever it holds, reaches
// no output and no gradient.

const grpoSource = "torchrl/objectives/llm/grpo.py"

// aggregations are GRPOLoss's aggregation strategies (grpo.py _aggregate_loss_value).
var aggregations = []string{"token_mean", "prompt_mean", "none"}

func init() {
	register(&Stage{StageDef: grpoDef("grpo", "GRPOLoss", 0.2, nil), Lower: lowerGRPO})
}

// grpoDef is the registry entry of a GRPOLoss-family loss: GRPOLoss's arguments with its
// defaults (clip_epsilon's given), plus the class's own.
func grpoDef(typ, class string, clipEps any, extra []spec.ParamDef) spec.StageDef {
	inf := math.Inf(1)
	unused := func(p spec.ParamDef, why string) spec.ParamDef {
		p.Doc = class + " accepts it but never reads it (" + why + ")"
		return p
	}
	return spec.StageDef{
		Kind: spec.Loss, Type: typ, Class: class, Source: grpoSource,
		Params: append([]spec.ParamDef{
			{Name: "clip_epsilon", Type: spec.FloatOrPair, Default: clipEps, Min: 0, Max: inf,
				Doc: "ε, or [ε_low, ε_high] (DAPO's clip-higher): log-weights are clamped to [log1p(−ε_low), log1p(ε_high)], bounds rounded to float32 as TorchRL's buffers; ε_low < 1"},
			{Name: "kl_mask_threshold", Type: spec.Float, Null: 0.0, Min: 0, Max: inf,
				Doc: "KL-Mask: drop the tokens with ½(log_prob − sample_log_prob)² > threshold from the loss terms, ESS and the KL terms (TorchRL compares against sample_log_prob, not the reference model); null or 0: no filtering"},
			{Name: "aggregation", Type: spec.Enum, Default: "token_mean", Enum: aggregations,
				Doc: "how the per-token loss terms are reduced: token_mean (mean over the batch's kept tokens), prompt_mean (each sequence's mean over its kept tokens, then the mean over sequences), none (per token, 0 at dropped tokens)"},
			{Name: "entropy_bonus", Type: spec.Bool, Default: true, Doc: "add the entropy term loss_entropy (the per-token entropy is the input keys.entropy)"},
			{Name: "entropy_coeff", Type: spec.Float, Default: 0.01, Min: -inf, Max: inf, Doc: "loss_entropy = −entropy_coeff·H, aggregated as loss_objective"},
			{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions,
				Doc: "none acts as aggregation none; sum sums where aggregation means (token_mean: over the kept tokens; prompt_mean: the sequences' means); the KL terms stay means"},
			{Name: "kl_to_ref_coeff", Type: spec.Float, Null: 0.0, Min: 0, Max: inf,
				Doc: "adds loss_kl_to_ref = coeff·mean k3 KL(π‖π_ref) over the kept tokens (keys.ref_log_prob); null or 0: none"},
			{Name: "kl_to_inference_coeff", Type: spec.Float, Null: "none", Min: -inf, Max: inf,
				Doc: "adds loss_kl_to_inference = coeff·mean k3 KL(π‖π_old) against sample_log_prob over the kept tokens; absent or null (TorchRL's default None): none, 0: the metric with a zero loss term (TorchRL: any coefficient but None)"},
			{Name: "masking_strategy", Type: spec.Enum, Default: "sft", Enum: []string{"sft", "rlhf", "generic"},
				Doc: "informational: which tokens TorchRL's actor masks (sft: the response, rlhf: assistant tokens, generic: all but padding); here keys.mask is that mask"},
		}, extra...),
		Ignored: []spec.ParamDef{
			{Name: "samples_mc_entropy", Type: spec.Int, Min: 1, Max: inf,
				Doc: "TorchRL samples the entropy only where the distribution has no closed form, and its LLM distributions have one; the per-token entropy is an input here, keys.entropy"},
			unused(spec.ParamDef{Name: "gamma", Type: spec.Float, Null: 0.0, Min: -inf, Max: inf}, "GRPO has no value estimator"),
			unused(spec.ParamDef{Name: "clip_value", Type: spec.FloatOrBool, Null: 0.0, Min: -inf, Max: inf}, "GRPO has no critic"),
		},
		Keys: []spec.KeyDef{keyLogProb, keySampleLogProb, keyAdvantage, keyMask, keyEntropy, keyRefLogProb},
		Check: func(c *spec.Check) {
			if lo, _ := clipEpsilon(c.Stage); lo >= 1 {
				c.Errorf("clip_epsilon", "ε_low must be < 1 (so that 1 − ε_low > 0), got %v (TorchRL raises ValueError)", lo)
			}
			checkEntropyCoeff(c)
		},
	}
}

// lowerGRPO is GRPOLoss.forward (grpo.py:649-757) with the PPO-clip objective
// _compute_policy_objective (760-774), per token:
//
//	lw  = log_prob − sample_log_prob          (both 0 at padding)
//	loss_objective = AGG(−min(e^lw·A, e^clamp(lw, log1p(−ε_low), log1p(ε_high))·A))
func lowerGRPO(l *Lowerer, st *spec.Stage) {
	g := l.grpoBegin(st)
	gain, lwc := l.clippedGain(st, g.lw, g.adv)
	l.grpoEnd(g, l.B.Neg(gain), lwc,
		"clipped surrogate −min(r·A, clip(r, 1−ε_low, 1+ε_high)·A) per token, aggregated by aggregation",
		"loss_objective: −A·exp(lw)·s at kept tokens where the unclipped gain is the min (A ≥ 0 and lw ≤ log1p(ε_high), or A < 0 and lw ≥ log1p(−ε_low), bounds included), else 0")
}

// grpoCall is what GRPOLoss.forward has before its objective: the masked log-probs, the
// log-weight, the advantage and the kept tokens m'.
type grpoCall struct {
	st             *spec.Stage
	cur, prev, adv *ir.Node // log_prob, sample_log_prob (0 at padding), advantage
	lw             *ir.Node // cur − prev
	// kept is m' = mask ∧ (½·lw² ≤ kl_mask_threshold), 0/1, or nil when every token is kept;
	// nKept is Σ m'.
	kept, nKept *ir.Node
}

// grpoBegin reads the mask and log-probs and applies the KL-Mask (grpo.py:670-693, 929-935).
func (l *Lowerer) grpoBegin(st *spec.Stage) *grpoCall {
	b := l.B
	l.readMask()
	g := &grpoCall{st: st, cur: l.Read("log_prob"), prev: l.Read("sample_log_prob"), adv: l.Read("advantage")}
	g.lw = b.Note(b.Sub(g.cur, g.prev), "log_weight")
	g.kept = l.mask
	if thr := st.Float("kl_mask_threshold"); thr > 0 {
		thr = l.Hyper("kl_mask_threshold", thr, false, "KL-Mask: tokens with ½(log_prob − sample_log_prob)² above it are dropped")
		ok := b.Le(b.Mul(b.Const(0.5), b.Square(g.lw)), b.Const(thr))
		if l.mask != nil {
			ok = b.Where(l.mask, ok, b.Const(0))
		}
		g.kept = b.Note(ok, "kept")
		g.nKept = b.Note(b.SumAll(g.kept), "num_kept")
		l.Output("num_kept", g.nKept, ir.Metric,
			"the number of tokens kept by the mask and kl_mask_threshold, which the loss terms, ESS and the KL terms run over")
	} else if l.mask != nil {
		g.nKept = l.valid
	}
	return g
}

// grpoEnd aggregates the per-token objective loss and adds the metrics, the entropy term,
// ESS and the KL terms, in TorchRL's output order (grpo.py:704-757).
func (l *Lowerer) grpoEnd(g *grpoCall, loss, lwc *ir.Node, doc, gradDoc string) {
	b, st := l.B, g.st
	l.Output("loss_objective", g.aggregate(l, loss), ir.LossTerm, doc)
	l.GradDoc("log_prob", gradDoc+"; s = 1/Σm' (token_mean), 1/(n_seq·Σ_t m'_b) (prompt_mean), 1 (none, sum) ("+grpoSource+" "+st.Def.Class+")")
	l.Output("clip_fraction", l.mean(b.Ne(lwc, g.lw)), ir.Metric,
		"fraction of valid tokens whose log-weight lies outside [log1p(−ε_low), log1p(ε_high)]")
	l.Output("kl_approx", l.mean(b.Sub(g.prev, g.cur)), ir.Metric,
		"mean of sample_log_prob − log_prob over the valid tokens, the k1 estimate of KL(old ‖ new)")
	if st.Bool("entropy_bonus") {
		h := l.Read("entropy")
		c := l.Hyper("entropy_coeff", st.Float("entropy_coeff"), false, "weighs the entropy bonus: loss_entropy = −entropy_coeff·H")
		l.Output("entropy", l.mean(h), ir.Metric, "mean entropy over the valid tokens")
		l.Output("loss_entropy", g.aggregate(l, b.Mul(b.Const(-c), h)), ir.LossTerm, "−entropy_coeff·H per token, aggregated as loss_objective")
		l.GradDoc("entropy", "loss_entropy: −entropy_coeff·s at kept tokens, s as for loss_objective")
	}
	l.grpoESS(g)
	if c := st.Float("kl_to_ref_coeff"); c > 0 {
		l.klTerm(g, "ref", l.Read("ref_log_prob"), l.Hyper("kl_to_ref_coeff", c, false, "weighs loss_kl_to_ref"))
	}
	if c, ok := st.Get("kl_to_inference_coeff").(float64); ok {
		l.klTerm(g, "inference", g.prev, l.Hyper("kl_to_inference_coeff", c, false, "weighs loss_kl_to_inference"))
	}
}

// klTerm is GRPOLoss._kl_to_ref (grpo.py:858-888) against other (the reference model's or
// the behaviour policy's log-probs): kl_to_<name> = mean over the kept tokens of the k3
// estimate of KL(π‖π_other), e^d − 1 − d with d = other − log_prob, and
// loss_kl_to_<name> = coeff·kl_to_<name>, a mean whatever the aggregation.
func (l *Lowerer) klTerm(g *grpoCall, name string, other *ir.Node, coeff float64) {
	b := l.B
	d := b.Sub(other, g.cur)
	if g.kept != nil {
		d = b.Where(g.kept, d, b.Const(0)) // k3(0) = 0: dropped tokens add nothing to the sum
	}
	kl := b.Note(g.keptMean(l, l.k3(d)), "kl_to_"+name)
	l.Output("loss_kl_to_"+name, b.Mul(b.Const(coeff), kl), ir.LossTerm,
		"kl_to_"+name+"_coeff · kl_to_"+name)
	l.Output("kl_to_"+name, b.Detach(kl), ir.Metric,
		"mean over the kept tokens of the k3 estimate e^d − 1 − d of KL(π ‖ π_"+name+"), d = "+map[string]string{"ref": "ref_log_prob", "inference": "sample_log_prob"}[name]+" − log_prob")
	l.GradDoc("log_prob", "loss_kl_to_"+name+": coeff·(1 − e^d)/Σm' at kept tokens")
}

// k3 is Schulman's k3 KL estimator e^d − 1 − d (TorchRL's expm1(d) − d), computed by the IR
// op that avoids the cancellation of that difference at small |d| (ir.OpExpM1MinusX); its
// gradient is e^d − 1 (torch.expm1's derivative e^d, minus 1), formed as k3 + d.
func (l *Lowerer) k3(d *ir.Node) *ir.Node { return l.B.Note(l.B.ExpM1MinusX(d), "k3") }

// grpoESS is GRPOLoss's effective sample size (grpo.py:695-701, 723) over the kept tokens:
// exp(2·lse(lw) − lse(2·lw))/Σm', with the log-sum-exps over every kept token of the batch;
// 0 when no token is kept (TorchRL: NaN from the empty logsumexp).
func (l *Lowerer) grpoESS(g *grpoCall) {
	b := l.B
	x := g.lw
	if g.kept != nil {
		x = b.Where(g.kept, x, b.Const(math.Inf(-1)))
	}
	dims := l.Batch().Names()
	two := b.Const(2)
	ess := b.Exp(b.Sub(b.Mul(two, b.LogSumExp(x, dims...)), b.LogSumExp(b.Mul(two, x), dims...)))
	if g.nKept == nil {
		ess = b.Div(ess, b.Const(float64(l.Batch().Numel())))
	} else {
		ess = b.Where(b.Gt(g.nKept, b.Const(0)), b.Div(ess, b.Max(g.nKept, b.Const(1))), b.Const(0))
	}
	l.Output("ESS", ess, ir.Metric, "effective sample size (Σw)²/Σw² of w = exp(log-weight) over the kept tokens, divided by their number")
}

// aggregate is GRPOLoss._aggregate_loss_value (grpo.py:776-808) with masks that select:
// none (or reduction none) keeps the per-token values, 0 at dropped tokens; token_mean is
// the mean over the kept tokens; prompt_mean the mean over sequences of each sequence's mean
// over its kept tokens (the last batch dim is the token; a sequence with none counts as 0).
// reduction sum sums instead: the kept tokens' values, or the sequences' means.
func (g *grpoCall) aggregate(l *Lowerer, x *ir.Node) *ir.Node {
	b := l.B
	agg, red := g.st.String("aggregation"), g.st.String("reduction")
	sel := g.select0(l, x)
	if agg == "none" || red == "none" {
		return sel
	}
	if agg == "token_mean" {
		if red == "sum" {
			return b.SumAll(sel)
		}
		return g.keptMean(l, x)
	}
	batch := l.Batch()
	tok := batch[len(batch)-1].Name
	n := float64(batch[len(batch)-1].Size)
	var per *ir.Node
	if g.kept == nil {
		per = b.Div(b.Sum(sel, tok), b.Const(n))
	} else {
		per = b.Div(b.Sum(sel, tok), b.Max(b.Sum(g.kept, tok), b.Const(1)))
	}
	per = b.Note(per, "sequence_mean")
	switch {
	case len(per.Shape) == 0:
		return per
	case red == "sum":
		return b.SumAll(per)
	}
	return b.MeanAll(per)
}

// select0 is x at the kept tokens and 0 elsewhere.
func (g *grpoCall) select0(l *Lowerer, x *ir.Node) *ir.Node {
	if g.kept == nil {
		return x
	}
	return l.B.Where(g.kept, x, l.B.Const(0))
}

// keptMean is the mean of x over the kept tokens (0 when there is none).
func (g *grpoCall) keptMean(l *Lowerer, x *ir.Node) *ir.Node {
	b := l.B
	if g.kept == nil {
		return b.MeanAll(x)
	}
	return b.Div(b.SumAll(g.select0(l, x)), b.Max(g.nKept, b.Const(1)))
}
