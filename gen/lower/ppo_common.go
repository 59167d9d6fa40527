package lower

import (
	"math"
	"sort"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// What the three PPO losses (PPOLoss, ClipPPOLoss, KLPENPPOLoss, torchrl/objectives/ppo.py)
// share: their constructor arguments, checks, entropy and critic terms (SEMANTICS.md §2).

const ppoSource = "torchrl/objectives/ppo.py"

// ppoParams are PPOLoss's arguments that need no network, with TorchRL v0.11.0's defaults.
func ppoParams() []spec.ParamDef {
	inf := math.Inf(1)
	return []spec.ParamDef{
		{Name: "entropy_bonus", Type: spec.Bool, Default: true, Doc: "add the entropy term loss_entropy"},
		{Name: "entropy_coeff", Type: spec.FloatOrMap, Default: 0.01, Min: -inf, Max: inf, Doc: "the entropy coefficient, or one per action head {head: coeff}",
			Aliases: []spec.Alias{{Name: "entropy_coef", Deprecated: "TorchRL's name up to v0.8, deprecated in v0.9 and v0.10 and removed in v0.11 (TypeError)"}}},
		{Name: "heads", Type: spec.Names, Doc: "the action heads of a composite action, when entropy_coeff is a mapping"},
		{Name: "critic_coeff", Type: spec.Float, Default: 1.0, Null: 1.0, Min: -inf, Max: inf, Doc: "scales the critic loss; 0 drops the critic term; null is TorchRL's None, 1.0 with a critic (PPOLoss.__init__'s code; its docstring says otherwise)",
			Aliases: []spec.Alias{{Name: "critic_coef", Deprecated: "TorchRL's name up to v0.9.1, deprecated in v0.9.2 and v0.10 and removed in v0.11 (TypeError)"}}},
		{Name: "loss_critic_type", Type: spec.Enum, Default: "smooth_l1", Enum: distances, Doc: "the critic's distance"},
		{Name: "normalize_advantage", Type: spec.Bool, Default: false, Doc: "standardise the advantage per call"},
		{Name: "normalize_advantage_exclude_dims", Type: spec.IntList, Doc: "dims (TorchRL indices on the [*batch, 1] advantage, counted in the order of dims, the tensors' layout, not of the batch list; -1 is the trailing singleton) normalised independently: [0] standardises each index of the first dim (each agent of [agents, envs, time]) on its own"},
		{Name: "clip_value", Type: spec.FloatOrBool, Null: 0.0, Min: -inf, Max: inf, Doc: "value-clipping δ; null or false: none"},
		{Name: "log_explained_variance", Type: spec.Bool, Default: true, Doc: "report explained_variance"},
		{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions, Doc: "how the loss_* outputs are reduced"},
	}
}

// ignoredMCEntropy is PPOLoss's and A2CLoss's samples_mc_entropy, the sample count of
// TorchRL's Monte-Carlo entropy, which it takes only where the distribution has no
// closed-form entropy (PPOLoss._get_entropy). With categorical, one_hot_categorical or
// normal the kernel computes the closed form, as TorchRL does, so the count changes
// nothing; with tanh_normal or none it would, but the kernel samples nothing (SEMANTICS.md
// §2.5, §11.9): then it is an error that says to pass the entropy in.
var ignoredMCEntropy = spec.ParamDef{Name: "samples_mc_entropy", Type: spec.Int, Min: 1, Max: math.Inf(1),
	Doc: "TorchRL samples the entropy only where the distribution has none in closed form: categorical, one_hot_categorical and normal have one, which TorchRL and the kernel compute, " +
		"and without entropy_bonus no entropy is computed (with tanh_normal or none and entropy_bonus it is an error: the entropy is then an input, keys.entropy)",
	Refuse: func(_ *spec.Spec, st *spec.Stage, _ any) string {
		if d := st.String("distribution"); st.Bool("entropy_bonus") && (d == "tanh_normal" || d == "none") {
			return "not taken with distribution " + d + ": TorchRL would estimate the entropy from samples_mc_entropy samples, and lossgen samples nothing (SEMANTICS.md §11.9): " +
				"the entropy is an input, keys.entropy, that you compute (by sampling, §2.5); remove samples_mc_entropy, or use distribution categorical, one_hot_categorical or normal, whose entropy the kernel computes in closed form"
		}
		return ""
	}}

// ppoKeys are the keys every PPO loss may read.
var ppoKeys = append([]spec.KeyDef{keySampleLogProb, keyAdvantage, keyValueTarget, keyValue, keyOldValue, keyMask}, policyKeys...)

// ppoDef is the registry entry of a PPO-family loss: PPOLoss's parameters and keys plus the
// class's own.
func ppoDef(typ, class string, extra []spec.ParamDef, keys []spec.KeyDef, check func(*spec.Check)) spec.StageDef {
	return spec.StageDef{
		Kind: spec.Loss, Type: typ, Class: class, Source: ppoSource,
		Params:  append(append(ppoParams(), policyParams("none")...), extra...),
		Ignored: []spec.ParamDef{ignoredMCEntropy},
		Keys:    append(append([]spec.KeyDef(nil), ppoKeys...), keys...),
		Check: func(c *spec.Check) {
			checkPPO(c)
			checkPolicy(c)
			if check != nil {
				check(c)
			}
		},
	}
}

// ppoCall is what every PPO loss's forward computes before its objective (SEMANTICS.md
// §2.2): the mask, the (standardised) advantage, the current policy and the log-weight.
type ppoCall struct {
	st        *spec.Stage
	reduction string
	adv       *ir.Node // [*batch]
	pol       *policy
	lp, lpOld *ir.Node // log π(a), the stored sample_log_prob
	lw        *ir.Node // lp − lpOld
}

// ppoSummary says where a PPO loss gets the estimator's results when no estimator runs in
// the kernel (Stage.Summary).
func ppoSummary(s *spec.Spec, _ *spec.Stage) []string {
	if s.Estimator != nil {
		return nil
	}
	return []string{"The estimator's results (advantage, value_target) are inputs, computed beforehand, e.g. over the whole rollout."}
}

// ppoBegin is steps 2–4 of §2.2: the estimator has run (or advantage is an input).
func (l *Lowerer) ppoBegin(st *spec.Stage) *ppoCall {
	l.readMask()
	c := &ppoCall{st: st, reduction: st.String("reduction")}
	c.adv = l.advantage(st)
	c.pol = l.policy(st)
	c.lp, c.lpOld = c.pol.lp, l.Read("sample_log_prob")
	c.lw = l.B.Note(l.B.Sub(c.lp, c.lpOld), "log_weight")
	return c
}

// klApprox is the kl_approx metric every PPO loss reports (§2.4).
func (l *Lowerer) klApprox(c *ppoCall) {
	l.Output("kl_approx", l.mean(l.B.Sub(c.lpOld, c.lp)), ir.Metric,
		"mean(sample_log_prob − log_prob), the k1 estimate of KL(old ‖ new); always a mean")
}

// ppoEnd adds the entropy and critic terms (steps 6–7).
func (l *Lowerer) ppoEnd(c *ppoCall) {
	l.entropyTerm(c.st, c.pol, "torchrl/objectives/ppo.py PPOLoss._weighted_loss_entropy")
	l.criticTerm(c.st)
}

// objectiveGradDoc is the log_prob gradient doc line of a PPO objective, passed on to the
// distribution's parameters when the kernel evaluates the policy.
func (l *Lowerer) objectiveGradDoc(c *ppoCall, doc string) { l.policyGradDoc(c.pol, doc) }

// policyGradDoc is the log_prob gradient doc line of an objective, passed on to the
// distribution's parameters when the kernel evaluates the policy.
func (l *Lowerer) policyGradDoc(pol *policy, doc string) {
	l.GradDoc("log_prob", doc)
	if pol.dist != "none" {
		for _, k := range []string{"logits", "loc", "scale"} {
			l.GradDoc(k, "loss_objective through log π(a): "+doc)
		}
	}
}

// hasCritic reports whether a PPO loss has an active critic term (TorchRL: critic_coeff > 0).
func hasCritic(st *spec.Stage) bool { return st.Float("critic_coeff") > 0 }

// clipValue is the value-clipping δ (0: none): a number, or for ClipPPOLoss true = ε.
func clipValue(st *spec.Stage) float64 {
	switch v := st.Get("clip_value").(type) {
	case float64:
		return v
	case bool:
		if v {
			return st.Float("clip_epsilon")
		}
	}
	return 0
}

// checkPPO validates the arguments every PPO loss shares.
func checkPPO(c *spec.Check) {
	st := c.Stage
	if st.Float("critic_coeff") < 0 {
		c.Errorf("critic_coeff", "must be >= 0 (0 drops the critic term), got %v; TorchRL silently drops the critic for a negative value", st.Float("critic_coeff"))
	}
	switch v := st.Get("clip_value").(type) {
	case bool:
		if v && st.Type != "clip_ppo" {
			c.Errorf("clip_value", "true is accepted by clip_ppo only (it means clip_epsilon); %s takes a number", st.Type)
		}
	case float64:
		if v < 0 {
			c.Errorf("clip_value", "must be >= 0 (0 or null: no value clipping), got %v", v)
		}
	}
	m, perHead := st.Get("entropy_coeff").(map[string]float64)
	if heads, _ := st.Get("heads").([]string); !perHead && len(heads) > 0 {
		c.Warnf("heads", "is ignored: it names the heads of a per-head entropy_coeff mapping, and entropy_coeff is one number")
	}
	if perHead {
		heads, _ := st.Get("heads").([]string)
		if len(heads) == 0 {
			c.Errorf("entropy_coeff", "a per-head mapping needs loss.heads, the list of action heads")
		}
		in := map[string]bool{}
		for _, h := range heads {
			in[h] = true
			if _, ok := m[h]; !ok {
				c.Errorf("entropy_coeff", "no coefficient for head %q (TorchRL raises KeyError: Missing entropy coeff for head)", h)
			}
		}
		var names []string
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if len(heads) > 0 && !in[k] {
				c.ErrorAt(st.Path+".entropy_coeff."+k, st.Path+".entropy_coeff: \""+k+"\" is not a head "+allowedList(heads))
			}
		}
	}
	checkClipValue(c, hasCritic(st))
	checkEntropyCoeff(c)
	if st.Bool("normalize_advantage") {
		checkNormalize(c)
	} else if st.Written("normalize_advantage_exclude_dims") {
		c.Warnf("normalize_advantage_exclude_dims", "is ignored: normalize_advantage is false")
	}
}

// checkClipValue warns about value clipping that does nothing: without a critic term, or
// after an estimator in the kernel (PPOLoss, A2CLoss, ReinforceLoss).
func checkClipValue(c *spec.Check, critic bool) {
	cv := clipValue(c.Stage)
	if cv > 0 && !critic {
		c.Warnf("clip_value", "has no effect without a critic term (critic_coeff is 0)")
	}
	if cv > 0 && critic && c.Spec.Estimator != nil {
		c.Warnf("clip_value", "has no effect when the estimator runs in the kernel: TorchRL's estimator overwrites the stored value with the current critic's, so V_old = V (SEMANTICS.md §1.4); value_clip_fraction is 0")
	}
}

// checkEntropyCoeff warns about an entropy_coeff that entropy_bonus: false switches off.
func checkEntropyCoeff(c *spec.Check) {
	if !c.Stage.Bool("entropy_bonus") && c.Stage.Written("entropy_coeff") {
		c.Warnf("entropy_coeff", "is ignored: entropy_bonus is false (no entropy term)")
	}
}

func allowedList(vals []string) string {
	v := append([]string(nil), vals...)
	sort.Strings(v)
	out := "(allowed: "
	for i, x := range v {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out + ")"
}

// checkNormalize validates normalize_advantage_exclude_dims as torchrl/_utils.py _standardize
// does, on TorchRL's advantage layout [*batch, 1] (so -1 is the trailing singleton dim), and
// rejects the NaN case TorchRL would run into (SEMANTICS.md §1.3, §11.11).
func checkNormalize(c *spec.Check) {
	s, st := c.Spec, c.Stage
	rank := len(s.Batch) + 1
	ex := map[int]bool{}
	exclude, _ := st.Get("normalize_advantage_exclude_dims").([]int)
	for i, x := range exclude {
		p := st.Path + ".normalize_advantage_exclude_dims[" + itoa(i) + "]"
		y := x
		if y < 0 {
			y += rank
		}
		if y < 0 || y >= rank {
			c.ErrorAt(p, p+": dim "+itoa(x)+" is out of range for the advantage's "+itoa(rank)+" dims [*batch, 1] (allowed: "+itoa(-rank)+" .. "+itoa(rank-1)+")")
			continue
		}
		if ex[y] {
			c.ErrorAt(p, p+": dim "+itoa(x)+" repeats an excluded dim (TorchRL raises ValueError)")
		}
		ex[y] = true
	}
	numel := 1
	for _, n := range s.BatchShape() {
		numel *= n
	}
	if numel == 1 {
		c.Warnf("normalize_advantage", "does nothing on a one-element batch (TorchRL standardises only when advantage.numel() > 1)")
		return
	}
	if len(ex) == rank {
		c.Warnf("normalize_advantage_exclude_dims", "every dim is excluded: TorchRL warns and leaves the advantage unchanged")
		return
	}
	included := 1
	for i, n := range s.BatchShape() {
		if !ex[i] {
			included *= n
		}
	}
	if included == 1 {
		c.Errorf("normalize_advantage", "the dims included in the statistics have 1 element, so the unbiased std is NaN (TorchRL would return NaN); exclude fewer dims or disable normalisation")
	}
}

// normalizeDims resolves normalize_advantage_exclude_dims to the batch dims the statistics
// run over. ok is false when every dim is excluded (TorchRL then returns the advantage
// unchanged) or the batch has one element (TorchRL standardises only when numel > 1).
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
	for i, d := range batch {
		if !ex[i] {
			over = append(over, d.Name)
		}
	}
	return over, len(over) > 0
}

// advantage is the advantage a PPO loss uses: what the estimator wrote, or the input,
// standardised per call when normalize_advantage is set (SEMANTICS.md §1.3).
func (l *Lowerer) advantage(st *spec.Stage) *ir.Node {
	adv := l.Read("advantage")
	if st.Bool("normalize_advantage") {
		exclude, _ := st.Get("normalize_advantage_exclude_dims").([]int)
		if over, ok := normalizeDims(l.Batch(), exclude); ok {
			adv = l.B.Note(l.standardize(adv, over, 1e-6), "advantage_normalized")
		}
	}
	return adv
}

// entropyTerm is the entropy bonus (SEMANTICS.md §2.5, §11.4): entropy = mean(H) and
// loss_entropy = reduce(−c·H), H the policy's entropy; with per-head coefficients
// {head: c_h}, each head's entropy is an input <head>_entropy, loss_entropy =
// reduce(Σ_h −c_h·H_h), entropy = mean(Σ_h H_h), and composite_entropy.<head>_entropy
// reports each head's H_h (detached, unreduced).
// src names the TorchRL code of the term, for the Grads doc.
func (l *Lowerer) entropyTerm(st *spec.Stage, pol *policy, src string) {
	if !st.Bool("entropy_bonus") {
		return
	}
	b := l.B
	var h, loss *ir.Node
	if coeffs, ok := st.Get("entropy_coeff").(map[string]float64); ok {
		heads, _ := st.Get("heads").([]string)
		for _, head := range heads {
			key := "entropy." + head
			hh := l.readDerived(key, keyEntropy, []string{head + "_entropy"})
			c := l.Hyper("entropy_coeff."+head, coeffs[head], false, "weighs head "+head+"'s entropy in loss_entropy")
			term := b.Mul(b.Const(-c), hh)
			if h == nil {
				h, loss = hh, term
			} else {
				h, loss = b.Add(h, hh), b.Add(loss, term)
			}
			l.Output("composite_entropy."+head+"_entropy", b.Detach(hh), ir.Metric,
				"the entropy of action head "+head+", detached and unreduced (TorchRL composite_entropy)")
			l.GradDoc(key, "loss_entropy: −entropy_coeff["+head+"]·s, s = 1/n for mean, 1 for sum and none (SEMANTICS.md §2.8, §11.4; "+src+")")
		}
	} else {
		h = pol.entropy()
		c := l.Hyper("entropy_coeff", st.Float("entropy_coeff"), true, "weighs the entropy bonus: loss_entropy = −entropy_coeff·H")
		loss = b.Mul(b.Const(-c), h)
		doc := "loss_entropy: −entropy_coeff·s, s = 1/n for mean, 1 for sum and none (SEMANTICS.md §2.8; " + src + ")"
		l.GradDoc("entropy", doc)
		if pol.dist == "categorical" || pol.dist == "one_hot_categorical" || pol.dist == "normal" {
			for _, k := range []string{"logits", "scale"} {
				l.GradDoc(k, doc+", times ∂H/∂"+k)
			}
		}
	}
	l.Output("entropy", l.mean(h), ir.Metric, "mean entropy of the current policy; always a mean")
	l.Output("loss_entropy", l.reduce(loss, st.String("reduction")), ir.LossTerm,
		"−entropy_coeff·H, reduced by reduction ("+src+")")
}

// criticTerm is PPOLoss.loss_critic (SEMANTICS.md §1.4–1.5, §2.6). After an estimator in the
// kernel the stored value is the current critic's (the estimator overwrote it), so V_old = V
// and clipping changes nothing, as in TorchRL.
func (l *Lowerer) criticTerm(st *spec.Stage) {
	if !hasCritic(st) {
		return
	}
	b := l.B
	y, v, lossValue, doc := l.valueLoss(st, clipValue(st))
	cc := l.Hyper("critic_coeff", st.Float("critic_coeff"), true, "scales the critic loss")
	l.GradDoc("value", "loss_critic: critic_coeff·"+doc+" (SEMANTICS.md §1.4, §2.8; torchrl/objectives/ppo.py PPOLoss.loss_critic)")
	fn := st.String("loss_critic_type")
	l.Output("loss_critic", l.reduce(b.Mul(b.Const(cc), lossValue), st.String("reduction")), ir.LossTerm,
		"critic_coeff·"+fn+"(value_target, V), reduced by reduction")
	if st.Bool("log_explained_variance") {
		resid := b.Note(l.var0(b.Sub(y, v)), "resid_var")
		total := b.Note(l.var0(y), "target_var")
		ev := b.Sub(b.Const(1), b.Div(resid, b.Add(total, b.Const(l.DType().Eps()))))
		l.Output("explained_variance", ev, ir.Metric,
			"1 − Var(y − V)/(Var(y) + eps), biased variances along the first batch dim only, eps = machine epsilon of the dtype; shape = batch without its first dim")
		// Var(y) of a column whose few values nearly agree cancels: the backends' last-ulp
		// differences in y (the AVX2 GAE composes 8 steps) become 1e-4 of the ratio at N = 2,
		// and up to 1.3e-2 in 26944 columns of two values ([2, 64, 421], extreme rewards).
		rel := 2e-3
		if bs := l.S.BatchShape(); len(bs) > 0 && bs[0] < 4 {
			rel = 5e-2
		}
		l.B.MarkIllConditioned("explained_variance", rel)
	}
}

// valueLoss is the critic's regression distance(value_target, V) elementwise, with the larger
// of it and the clipped loss distance(value_target, V_old + clamp(V − V_old, ±cv)) when cv > 0,
// reporting value_clip_fraction (torchrl/objectives/utils.py _clip_value_loss): the critic
// term PPOLoss, A2CLoss and ReinforceLoss share. doc is the gradient of one element with
// respect to V, for the Grads doc.
func (l *Lowerer) valueLoss(st *spec.Stage, cv float64) (y, v, loss *ir.Node, doc string) {
	b := l.B
	y, v = l.Read("value_target"), l.Read("value")
	fn := st.String("loss_critic_type")
	loss = l.distance(y, v, fn)
	if cv > 0 {
		cv = l.Hyper("clip_value", cv, true, "the value-clipping δ")
		vOld := l.Read("old_value")
		pre := b.Sub(v, vOld)
		clipped := b.Clamp(pre, b.Const(-cv), b.Const(cv))
		l.Output("value_clip_fraction", l.mean(b.Ne(pre, clipped)), ir.Metric,
			"fraction of elements whose value change V − V_old was clipped to ±clip_value; always a mean (torchrl/objectives/utils.py _clip_value_loss)")
		lossClipped := l.distance(y, b.Add(vOld, clipped), fn)
		loss = b.Max(loss, lossClipped)
	}
	doc = "ℓ'(V − value_target)·s with ℓ' = 2x (l2), sign(x) (l1), clamp(x, −1, 1) (smooth_l1); s = 1/n for mean, 1 for sum and none"
	if cv > 0 {
		doc += "; with value clipping the larger of the unclipped and clipped losses', the clipped one's only where |V − V_old| ≤ clip_value, half each on a tie"
	}
	return y, v, loss, doc
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// clippedGain is the PPO-clip gain min(r·A, clip(r, 1−ε_low, 1+ε_high)·A) of ClipPPOLoss and
// GRPOLoss, r = exp(lw), with the clip in log space at TorchRL's float32 bounds
// log1p(−ε_low), log1p(ε_high) (SEMANTICS.md §11.14), and the clamped log-weight lwc.
//
// It is computed sign-aware with one exp (§11.15): where A ≥ 0 the smaller gain is at the
// smaller ratio, min(r, e^hi); where A < 0 at the larger, max(r, e^lo) (exp is monotone, so
// these are exp of the clamped log-weight, e^hi and e^lo the correctly rounded exponentials
// of the bounds). Only a log-weight beyond its bound (lw > hi, lw < lo) is compared with the
// bound's exponential: on the bound or inside it r is the gain's ratio whatever the kernel's
// exp rounds it to (AVX2's float64 exp gives r one ulp above e^hi at lw = hi, which min
// would clip). Beyond the bound, a tie of the rounded exponentials keeps the unclipped gain,
// as TorchRL's stack-min does. Wherever TorchRL's value is finite it is the same product;
// where exp(lw) overflows float32 it stays finite (A = 0 gives 0, not inf·0). The gradient
// goes to r wherever the gain is r·A. r is shared with ESS's logsumexp.
func (l *Lowerer) clippedGain(st *spec.Stage, lw, adv *ir.Node) (gain, lwc *ir.Node) {
	b := l.B
	lo, hi := l.logClipBounds(st)
	lwc = l.clampLogWeight(lw, lo, hi)
	r := b.Note(b.Exp(lw), "ratio")
	// lwc ≠ lw exactly where lw is beyond a bound (or NaN): the comparison clip_fraction
	// makes. Beyond hi, max(r, e^lo) is r; below lo, min(r, e^hi) is r.
	out := b.Ne(lwc, lw)
	bhi := b.Where(out, b.Const(expRounded(hi)), b.Const(math.Inf(1)))
	blo := b.Where(out, b.Const(expRounded(lo)), b.Const(math.Inf(-1)))
	rc := b.Note(b.Where(b.Ge(adv, b.Const(0)), b.MinFirst(r, bhi), b.MaxFirst(r, blo)), "ratio_clipped")
	return b.Note(b.Mul(adv, rc), "gain"), lwc
}

// ratioClipGain is min(r·A, clamp(r, lo, hi)·A) for ratio bounds 0 < lo ≤ 1 ≤ hi, sign-aware
// as clippedGain explains: A·min(r, hi) where A ≥ 0, A·max(r, lo) where A < 0, the gradient
// going to r where the min/max picks it (ties included). GSPO's clip is on the ratio itself
// (Liger-Kernel's clamp(coef_1, 1 − ε_low, 1 + ε_high)), so comparing r is its rule.
func (l *Lowerer) ratioClipGain(r, adv *ir.Node, lo, hi float64) *ir.Node {
	b := l.B
	rc := b.Note(b.Where(b.Ge(adv, b.Const(0)), b.MinFirst(r, b.Const(hi)), b.MaxFirst(r, b.Const(lo))), "ratio_clipped")
	return b.Note(b.Mul(adv, rc), "gain")
}

// logClipBounds are the log-weight clip bounds log1p(−ε_low), log1p(ε_high) as TorchRL holds
// them (float32 buffers, §11.14), declared as hyper-parameters.
func (l *Lowerer) logClipBounds(st *spec.Stage) (lo, hi float64) {
	epsLo, epsHi := clipEpsilon(st)
	if l.S.ParamDType == spec.Float32 {
		// The range checks ran on the written value; TorchRL rounds it into its buffer.
		if e := float32(epsLo); e >= 1 || e == 0 {
			l.Errorf("clip_epsilon", "ε_low %v rounds to %v in float32 (TorchRL's float32 buffer; param_dtype), giving the clip bound log1p(−%v) = %v: want a value that stays in (0, 1)", epsLo, e, e, math.Log1p(-float64(e)))
		}
		if float32(epsHi) == 0 {
			l.Errorf("clip_epsilon", "ε_high %v rounds to 0 in float32 (TorchRL's float32 buffer; param_dtype): the clip bounds would be 0", epsHi)
		}
	}
	lo = l.Hyper("log1p(-clip_epsilon)", l.Log1p32(-epsLo), false, "the lower clip bound of the log-weight")
	hi = l.Hyper("log1p(clip_epsilon)", l.Log1p32(epsHi), false, "the upper clip bound of the log-weight")
	return lo, hi
}

// clampLogWeight is clamp(lw, lo, hi), TorchRL's log_weight.clamp(*clip_bounds): its gradient
// passes at the bounds.
func (l *Lowerer) clampLogWeight(lw *ir.Node, lo, hi float64) *ir.Node {
	return l.B.Note(l.B.Clamp(lw, l.B.Const(lo), l.B.Const(hi)), "log_weight_clip")
}
