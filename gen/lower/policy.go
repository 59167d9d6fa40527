package lower

import (
	"math"
	"slices"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// The policy distributions a PPO-family loss (and IQL's actor) evaluates in the kernel
// (SEMANTICS.md §1.8, §11.9): with distribution none the current log-prob and entropy are
// inputs; otherwise the kernel computes them from the distribution's parameters and the stored
// action, in closed form, with their gradients to those parameters.

// distributions are the values of the distribution parameter.
var distributions = []string{"none", "categorical", "one_hot_categorical", "normal", "tanh_normal"}

// policyParams are the parameters that choose and shape the policy distribution.
func policyParams(def string) []spec.ParamDef {
	inf := math.Inf(1)
	return []spec.ParamDef{
		{Name: "distribution", Type: spec.Enum, Default: def, Enum: distributions,
			Doc: "the policy distribution evaluated in the kernel: none (log_prob and entropy are inputs), categorical (logits, integer action), one_hot_categorical (logits, one-hot action), normal (IndependentNormal: loc, scale, action), tanh_normal (TanhNormal: loc, scale, action; entropy is an input)"},
		{Name: "action_dim", Type: spec.DimName, Doc: "the distribution's event dim: A actions (logits [*batch, A]) or D action dims (loc, scale, action [*batch, D])"},
		{Name: "low", Type: spec.Float, Default: -1.0, Min: -inf, Max: inf, MinOpen: true, MaxOpen: true, Applies: tanhNormal, Doc: "tanh_normal: the action's lower bound (TanhNormal low)"},
		{Name: "high", Type: spec.Float, Default: 1.0, Min: -inf, Max: inf, MinOpen: true, MaxOpen: true, Applies: tanhNormal, Doc: "tanh_normal: the action's upper bound (TanhNormal high)"},
	}
}

// The keys of the distributions' parameters and the stored action.
var (
	keyLogits = spec.KeyDef{Name: "logits", Default: []string{"logits"}, Differentiable: true, Shape: "[*batch, A]",
		Doc:    "the current policy's logits [*batch, A] (network output)",
		Sample: spec.Sample{Dist: "normal", Std: 1.5, ExtremeLogits: true}}
	keyAction = spec.KeyDef{Name: "action", Default: []string{"action"}, Kind: spec.IndexKey, Shape: "[*batch] | [*batch, A] | [*batch, D]",
		Doc:    "the stored action: an index [*batch] (categorical), a one-hot vector or a point [*batch, A or D] (one_hot_categorical, normal, tanh_normal)",
		Sample: spec.Sample{Dist: "action", ExtremeAction: true}}
	keyLoc = spec.KeyDef{Name: "loc", Default: []string{"loc"}, Differentiable: true, Shape: "[*batch, D]",
		Doc:    "the current policy's Normal mean μ [*batch, D] (network output)",
		Sample: spec.Sample{Dist: "normal", Std: 0.5}}
	keyScale = spec.KeyDef{Name: "scale", Default: []string{"scale"}, Differentiable: true, Pad: 1, Shape: "[*batch, D]",
		Doc:    "the current policy's Normal standard deviation σ > 0 [*batch, D] (network output)",
		Sample: spec.Sample{Dist: "uniform", Lo: 0.3, Hi: 1.5}}
	keyOldLogits = spec.KeyDef{Name: "old_logits", Default: []string{"old_logits"}, Shape: "[*batch, A]",
		Doc:    "the behaviour policy's logits [*batch, A], stored with the data (KLPENPPOLoss rebuilds previous_dist from them)",
		Sample: spec.Sample{Dist: "normal", Std: 0.3, Offset: "logits"}}
	keyOldLoc = spec.KeyDef{Name: "old_loc", Default: []string{"old_loc"}, Shape: "[*batch, D]",
		Doc:    "the behaviour policy's Normal mean [*batch, D], stored with the data",
		Sample: spec.Sample{Dist: "normal", Std: 0.2, Offset: "loc"}}
	keyOldScale = spec.KeyDef{Name: "old_scale", Default: []string{"old_scale"}, Pad: 1, Shape: "[*batch, D]",
		Doc:    "the behaviour policy's Normal standard deviation [*batch, D], stored with the data",
		Sample: spec.Sample{Dist: "uniform", Lo: 0.3, Hi: 1.5}}
)

// policyKeys are the keys a stage with a policy may read.
var policyKeys = []spec.KeyDef{keyLogProb, keyEntropy, keyLogits, keyAction, keyLoc, keyScale}

// checkPolicy validates the distribution parameters together.
func checkPolicy(c *spec.Check) {
	st := c.Stage
	d := st.String("distribution")
	if d == "none" {
		if st.Written("action_dim") {
			c.Warnf("action_dim", "is ignored: distribution is none (log_prob and entropy are inputs)")
		}
	} else {
		if st.String("action_dim") == "" && !dimAfterBatch(c.Spec) {
			c.Errorf("distribution", "%s needs action_dim, the dim of its %s: declare it under dims after the batch dims (e.g. %s: <size>)", d,
				map[bool]string{true: "logits [*batch, A]", false: "loc, scale and action [*batch, D]"}[categorical(d)], map[bool]string{true: "A", false: "D"}[categorical(d)])
		} else {
			checkInnerDim(c, "action_dim", "after") // the event dim ends the layout [*batch, A]; the one dim there by default
		}
		if _, ok := st.Get("entropy_coeff").(map[string]float64); ok {
			c.Errorf("distribution", "per-head entropy coefficients take each head's entropy as an input; use distribution: none")
		}
	}
	if !tanhNormal(st) {
		for _, p := range []string{"low", "high"} {
			if st.Written(p) {
				c.Warnf(p, "is ignored: it bounds a tanh_normal action")
			}
		}
	} else if !(st.Float("high") > st.Float("low")) {
		c.Errorf("high", "must be greater than low (%v); TanhNormal raises RuntimeError", st.Float("low"))
	}
}

// tanhNormal reports a stage whose policy is a TanhNormal, the one with action bounds.
func tanhNormal(st *spec.Stage) bool { return st.String("distribution") == "tanh_normal" }

func categorical(d string) bool { return d == "categorical" || d == "one_hot_categorical" }

// policy is the current policy as a loss sees it: the log-probability of the stored action
// and, when asked for, the entropy, both [*batch], with their gradients flowing to the
// distribution's parameters.
type policy struct {
	l    *Lowerer
	st   *spec.Stage
	dist string
	axis string   // the event dim
	lp   *ir.Node // log π(action)
	// categorical: the normalised log-probabilities logp = s − log S, [*batch, A], from the
	// shifted logits s = z − max z, their exponentials e^s and S = Σ e^s
	logp, s, es, sum *ir.Node
	// normal, tanh_normal: the parameters and the action in the base Normal's space
	loc, scale *ir.Node
}

// policy evaluates the stage's distribution (SEMANTICS.md §1.8): log_prob as an input, or
// computed from logits and the action, or from loc, scale and the action.
func (l *Lowerer) policy(st *spec.Stage) *policy {
	p := &policy{l: l, st: st, dist: st.String("distribution"), axis: st.String("action_dim")}
	b := l.B
	switch p.dist {
	case "none", "":
		p.lp = l.Read("log_prob")
		return p
	case "categorical", "one_hot_categorical":
		ev := l.eventShape(p.axis)
		z := l.ReadShaped("logits", ev)
		p.s, p.es, p.sum = l.softmaxParts(z, p.axis)
		p.logp = b.Note(b.Sub(p.s, b.Log(p.sum)), "log_softmax")
		var idx *ir.Node
		if p.dist == "categorical" {
			idx = l.ReadAs("action", l.Batch(), spec.IndexKey)
			l.KeyDoc("action", "the stored action: an index into "+p.axis+" [*batch]")
		} else {
			// OneHotCategorical.log_prob: the categorical log-prob at argmax of the vector.
			idx = b.ArgMax(l.ReadAs("action", ev, spec.FloatKey), p.axis)
			l.KeyDoc("action", "the stored action: a one-hot vector [*batch, "+p.axis+"]")
		}
		p.lp = b.Gather(p.logp, idx, p.axis)
		l.GradDoc("logits", "through log π(a) = log_softmax(z)_a: ∂/∂z_j = 1[j = a] − p_j; through H = −Σ p log p: ∂/∂z_j = −p_j (log p_j + H) (SEMANTICS.md §1.8, §2.8)")
	case "normal", "tanh_normal":
		ev := l.eventShape(p.axis)
		p.loc, p.scale = l.ReadShaped("loc", ev), l.ReadShaped("scale", ev)
		x := l.ReadAs("action", ev, spec.FloatKey)
		l.KeyDoc("action", "the stored action: a point [*batch, "+p.axis+"] (the "+p.dist+" sample)")
		if p.dist == "tanh_normal" {
			x = l.untanh(x, st)
		}
		p.lp = b.Sum(l.normalLogProb(x, p.loc, p.scale), p.axis)
		if p.dist == "tanh_normal" {
			p.lp = b.Sub(p.lp, l.tanhJacobian(x, st, p.axis))
		}
		l.GradDoc("loc", "through log π(a) = Σ_d log N(x_d; μ_d, σ_d): ∂/∂μ = (x − μ)/σ² (SEMANTICS.md §1.8, §2.8)")
		l.GradDoc("scale", "through log π(a): ∂/∂σ = −1/σ + (x − μ)²/σ³; through the Normal entropy: 1/σ (SEMANTICS.md §1.8, §2.8)")
	}
	p.lp = b.Note(p.lp, "log_prob")
	return p
}

// policyBootstrap gives the estimator the current policy's log-prob of the stored action
// when the loss evaluates its distribution in the kernel and the estimator reads log_prob
// (V-trace's log_pi, the log-prob of the stored action as the functional takes it;
// SEMANTICS.md §3.6, §10.4): the kernel computes it from the distribution's parameters
// instead of taking it as a second input that would have to agree with them. It reads them
// unmasked, as the estimator reads all its data (§11.18; the mask is read after the
// estimator, by the loss), so it is the log_prob input's stand-in; but a categorical action
// index at padding reads as 0 (padding may hold any index). Without a mask the loss's own
// evaluation reuses the same nodes (the builder merges them).
func policyBootstrap(l *Lowerer, st *spec.Stage) {
	if st.String("distribution") == "none" || l.S.Estimator == nil || !slices.ContainsFunc(stageOf(l.S.Estimator).Keys, func(k spec.KeyDef) bool { return k.Name == "log_prob" }) {
		return
	}
	if l.S.KeyWritten("log_prob") && !l.read["log_prob"] { // a transform before may read it
		l.S.Warnf("keys.log_prob", "keys.log_prob is ignored: %s takes log_pi from the loss's %s distribution at the stored action, and the kernel takes no log_prob", l.S.Estimator.Type, st.String("distribution"))
	}
	if l.Mapped("mask") { // an index at padding reads as 0: padding may hold −100 (§11.18)
		l.indexMask = l.Read("mask")
		defer func() { l.indexMask = nil }()
	}
	l.Set("log_prob", l.policy(st).lp)
}

// entropy is the policy's entropy [*batch]: the input, or the closed form (§1.8, §11.9).
// A tanh_normal policy has none in closed form: its entropy is an input.
func (p *policy) entropy() *ir.Node {
	l, b := p.l, p.l.B
	switch p.dist {
	case "categorical", "one_hot_categorical":
		// Categorical.entropy −Σ p log p, with log p = s − log S and p = e^s/S, as
		// log S − Σ e^s·s / S: the sum shares the loop and the e^s of S (the planner joins
		// reductions over one axis), where torch computes the exponentials twice. s is clamped
		// at the dtype's most negative finite value, as torch clamps log p, so a class of
		// probability 0 adds 0·min = 0, not 0·(−inf) = NaN.
		sc := b.MaxFirst(p.s, b.Const(-l.DType().MaxFinite()))
		t := b.Sum(b.Mul(p.es, sc), p.axis)
		return b.Note(b.Sub(b.Log(p.sum), b.Div(t, p.sum)), "entropy")
	case "normal":
		// Normal.entropy summed over the event dim: ½ + ½ log 2π + log σ.
		c := b.Const(0.5 + 0.5*math.Log(2*math.Pi))
		return b.Note(b.Sum(b.Add(c, b.Log(p.scale)), p.axis), "entropy")
	}
	return l.Read("entropy")
}

// eventShape is the batch shape with the event dim appended ([*batch, A]).
func (l *Lowerer) eventShape(axis string) ir.Shape {
	return append(append(ir.Shape(nil), l.Batch()...), l.B.Shape(axis)...)
}

// logSoftmax is z − logsumexp(z) along axis, as (z − m) − log Σ exp(z − m) with m = max z
// detached: exact for huge logits ([10000, 9999] in float32 gives [−0.3133, −1.3133], where
// z − a rounded logsumexp loses three digits); the shift carries no gradient.
func (l *Lowerer) logSoftmax(z *ir.Node, axis string) *ir.Node {
	s, _, sum := l.softmaxParts(z, axis)
	return l.B.Sub(s, l.B.Log(sum))
}

// softmaxParts are s = z − m (m = max z along axis, detached), e^s and S = Σ e^s. The
// entropy's clamp constant is made here, before the sum, so that the entropy's sum can
// share its loop.
//
// Over a single class s is detached: log_softmax of one element is the constant 0 (NaN for a
// non-finite logit, as before), so its gradient 1 − p is exactly 0, where the chain rule
// would add the paths' contributions and subtract their sum again, leaving rounding noise
// (1e−16 of the loss's gradient in the reference, 6e−5 on huge advantages in float32) that
// each backend rounds differently.
func (l *Lowerer) softmaxParts(z *ir.Node, axis string) (s, es, sum *ir.Node) {
	b := l.B
	b.Const(-l.DType().MaxFinite())
	s = b.Sub(z, b.Detach(b.StabiliserMax(z, axis)))
	if b.Shape(axis).Numel() == 1 {
		s = b.Detach(s)
	}
	es = b.Exp(s)
	return s, es, b.Sum(es, axis)
}

// normalLogProb is torch.distributions.Normal.log_prob elementwise, in its op order:
// −(x − μ)²/(2σ²) − log σ − log √(2π).
func (l *Lowerer) normalLogProb(x, mu, sigma *ir.Node) *ir.Node {
	b := l.B
	d := b.Sub(x, mu)
	q := b.Div(b.Neg(b.Square(d)), b.Mul(b.Const(2), b.Square(sigma)))
	return b.Sub(b.Sub(q, b.Log(sigma)), b.Const(math.Log(math.Sqrt(2*math.Pi))))
}

// untanh maps a TanhNormal action back to the base Normal's space (SEMANTICS.md §1.8):
// a' = (a − (high + low)/2)/((high − low)/2), x = atanh(clamp(a', ±(1 − res))), res the
// dtype's resolution (1e−6 for float32). The action carries no gradient.
func (l *Lowerer) untanh(a *ir.Node, st *spec.Stage) *ir.Node {
	b := l.B
	lo, hi := l.tanhBounds(st)
	if lo != -1 || hi != 1 {
		a = b.Div(b.Sub(a, b.Const(l.Hyper("(high+low)/2", (hi+lo)/2, true, "the centre of the tanh_normal action range"))),
			b.Const(l.Hyper("(high-low)/2", (hi-lo)/2, true, "the half-width of the tanh_normal action range")))
	}
	// 1 − res is a Python float applied to the tensor: float32 in a float32 kernel, which
	// moves atanh of the clamped bound by 0.005 (7.2543 → 7.2598).
	lim := l.DType().Round(1 - l.DType().Resolution())
	c := b.Clamp(a, b.Const(-lim), b.Const(lim))
	// atanh(c) = sign(c)·½·log1p(2|c|/(1 − |c|)): accurate near 0 and near ±1 (1 − |c| is
	// exact there; the unsigned form loses the digits of log1p(−0.9999995) near −1).
	y := b.Abs(c)
	t := b.Mul(b.Const(0.5), b.Log1p(b.Div(b.Mul(b.Const(2), y), b.Sub(b.Const(1), y))))
	x := b.Where(b.Lt(c, b.Const(0)), b.Neg(t), t)
	return b.Note(b.Detach(x), "pre_tanh_action")
}

// tanhJacobian is the log-determinant TanhNormal.log_prob subtracts, summed over the event
// dim: Σ_d [2(log 2 − x − softplus(−2x)) + log((high − low)/2)], the SafeTanhTransform's term
// and, for bounds other than ±1, the affine transform's, added element by element before the
// sum, as torch's ComposeTransform.log_abs_det_jacobian adds its parts' terms and
// TransformedDistribution.log_prob then sums them over the event dim (continuous.py
// TanhNormal, at the commit lossgen follows). softplus(z) = log1p(exp(z)), and z itself above
// PyTorch's threshold 20.
func (l *Lowerer) tanhJacobian(x *ir.Node, st *spec.Stage, axis string) *ir.Node {
	b := l.B
	z := b.Mul(b.Const(-2), x)
	sp := b.Where(b.Gt(z, b.Const(20)), z, b.Log1p(b.Exp(z)))
	t := b.Mul(b.Const(2), b.Sub(b.Sub(b.Const(math.Ln2), x), sp))
	if lo, hi := l.tanhBounds(st); lo != -1 || hi != 1 {
		t = b.Add(t, b.Const(l.affineLogDet(lo, hi)))
	}
	return b.Sum(t, axis)
}

// affineLogDet is the affine transform's log-determinant at one action dim, as TorchRL
// computes it: its scale (high − low)/2 is a tensor of the bounds' dtype (float32 under
// param_dtype float32: continuous.py TanhNormal.update), and torch's AffineTransform takes
// log|scale| in that dtype; a float64 run adds that float32 value to each float64 term.
func (l *Lowerer) affineLogDet(lo, hi float64) float64 {
	if l.S.ParamDType == spec.Float32 {
		scale := (float32(hi) - float32(lo)) / 2
		return float64(float32(math.Log(float64(scale))))
	}
	return math.Log((hi - lo) / 2)
}

// tanhBounds are TanhNormal's low and high as TorchRL holds them: tensors of the default
// dtype (float32 rounding under param_dtype float32).
func (l *Lowerer) tanhBounds(st *spec.Stage) (lo, hi float64) {
	return l.Hyper("low", st.Float("low"), true, "the tanh_normal action's lower bound"),
		l.Hyper("high", st.Float("high"), true, "the tanh_normal action's upper bound")
}

// kl is the closed-form KL(old ‖ current) per batch element (SEMANTICS.md §1.8, §2.3):
// categorical Σ p_old (log p_old − log p) (0 where p_old = 0, +inf where p = 0 < p_old), as
// torch's _kl_categorical_categorical; Normal (and TanhNormal, whose shared transform leaves
// the KL unchanged) Σ_d ½(ρ + ((μ_old − μ)/σ)² − 1 − log ρ), ρ = (σ_old/σ)², as
// _kl_normal_normal. The gradient flows to the current parameters only.
func (p *policy) kl() *ir.Node {
	l, b := p.l, p.l.B
	ev := l.eventShape(p.axis)
	zero := b.Const(0)
	if categorical(p.dist) {
		old := l.logSoftmax(l.ReadShaped("old_logits", ev), p.axis)
		pOld := b.Exp(old)
		t := b.Mul(pOld, b.Sub(old, p.logp))
		t = b.Where(b.Eq(b.Exp(p.logp), zero), b.Const(math.Inf(1)), t)
		t = b.Where(b.Eq(pOld, zero), zero, t)
		l.GradDoc("logits", "through kl: ∂KL/∂z_j = p_j − p_old,j (SEMANTICS.md §1.8)")
		return b.Sum(t, p.axis)
	}
	muOld, sigmaOld := l.ReadShaped("old_loc", ev), l.ReadShaped("old_scale", ev)
	ratio := b.Square(b.Div(sigmaOld, p.scale))
	t1 := b.Square(b.Div(b.Sub(muOld, p.loc), p.scale))
	t := b.Mul(b.Const(0.5), b.Sub(b.Sub(b.Add(ratio, t1), b.Const(1)), b.Log(ratio)))
	l.GradDoc("loc", "through kl: ∂KL/∂μ = (μ − μ_old)/σ² (SEMANTICS.md §1.8)")
	l.GradDoc("scale", "through kl: ∂KL/∂σ = 1/σ − (σ_old² + (μ_old − μ)²)/σ³ (SEMANTICS.md §1.8)")
	return b.Sum(t, p.axis)
}
