package lower

import (
	"math"
	"slices"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// DistributionalDQNLoss (torchrl/objectives/dqn.py, SEMANTICS.md §16.1): C51's cross-entropy
// between the current net's atom distribution at the stored action and the target net's
// distribution at the next action, shifted by the Bellman operator and projected back onto
// the support, all in the kernel. The networks' raw outputs [*batch, K, A] are the inputs.

func init() {
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "distributional_dqn", Class: "DistributionalDQNLoss", Source: dqnSource,
			Params: []spec.ParamDef{
				unitParam("gamma", "the discount γ (required, a float32 buffer in TorchRL; the loss bootstraps itself and takes no estimator)"),
				paramActionDim,
				{Name: "atom_dim", Type: spec.DimName, Doc: "the dim of the atoms, declared after the batch dims and before action_dim (values are [*batch, K, A])"},
				{Name: "support", Type: spec.FloatList, Min: math.Inf(-1), Max: math.Inf(1), LinspaceDim: "atom_dim",
					Doc: "the K atoms' values, the value network's support (TorchRL's support tensor, usually torch.linspace(v_min, v_max, K)); the projection uses v_min = min, v_max = max and Δz = (v_max − v_min)/(K − 1)"},
				{Name: "action_space", Type: spec.Enum, Enum: []string{"one_hot", "categorical"}, ValueAliases: []spec.Alias{oneHotAlias},
					Doc: "how the stored action is given: an index (categorical) or a one-hot vector (one_hot); the next action is the first maximal expected value either way"},
				{Name: "delay_value", Type: spec.Bool, Default: true, Doc: "whether a target network gives the next distribution (false: the current net, detached, whose next values then also choose the next action: keys.next_action_value_online is not read)"},
				{Name: "make_log_softmax", Type: spec.Bool, Default: true,
					Doc: "the inputs are the networks' raw outputs and the kernel applies the log-softmax over the atoms (TorchRL's DistributionalDQNnet); false: they are log-softmax values already, and a value above 0 is a data error (TorchRL raises ValueError)"},
				{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions, Doc: "how the loss output is reduced"},
			},
			Rejected: rejectPriority,
			Keys: []spec.KeyDef{keyActionValue, keyAction, keyNextActionValue, keyNextActionValueOnline, keyPriority, keyMask,
				keyReward, keyDone, keyTerminated},
			Check: checkDistributionalDQN,
			Example: &spec.Example{Params: map[string]any{"gamma": 0.99, "action_dim": "A", "atom_dim": "K", "action_space": "categorical",
				"support": []float64{-2, -1, 0, 1, 2}},
				After: []spec.Dim{{Name: "K", Size: 5}, {Name: "A", Size: 4}}}},
		Lower: lowerDistributionalDQN,
	})
}

// checkDistributionalDQN checks the mandatory γ, that no estimator is given (TorchRL's forward
// always bootstraps from the target distribution), the action and atom dims and the support,
// with at least two atoms (TorchRL divides by K − 1), and adds the source-atom dim the
// projection needs (sourceAtomDim).
func checkDistributionalDQN(c *spec.Check) {
	st, s := c.Stage, c.Spec
	if st.Get("gamma") == nil {
		c.Errorf("gamma", "required: the discount γ (TorchRL's DistributionalDQNLoss takes gamma as a mandatory argument)")
	}
	if s.Estimator != nil {
		c.ErrorAt("estimator.type", "estimator.type: "+s.Estimator.Type+" is not supported by distributional_dqn: it takes no estimator (TorchRL's DistributionalDQNLoss always bootstraps from the target distribution with its own gamma); remove the estimator section and set loss.gamma")
	}
	checkActionSpace(c)
	inferAtomDim(c)
	if !checkInnerDim(c, "action_dim", "after") || !checkInnerDim(c, "atom_dim", "after") {
		return
	}
	checkSupport(c)
	k := st.String("atom_dim")
	if s.DimSize(k) < 2 {
		c.Errorf("atom_dim", "dims.%s has %d atom; the projection needs at least 2 (TorchRL divides by n_atoms − 1)", k, s.DimSize(k))
		return
	}
	if sup, _ := st.Get("support").([]float64); len(sup) == s.DimSize(k) && slices.Min(sup) == slices.Max(sup) {
		c.Errorf("support", "spans no width (every atom is %g): the projection divides by Δz = (v_max − v_min)/(K − 1) = 0, and every output would be NaN (TorchRL's too)", sup[0])
		return
	}
	src := sourceAtomDim(k)
	if s.DimSize(src) > 0 {
		c.Errorf("atom_dim", "the spec declares a dim %s, the name distributional_dqn gives the projection's source atoms; rename that dim", src)
		return
	}
	if len(s.Dims) >= spec.MaxDims {
		c.Errorf("atom_dim", "the spec declares %d dims, the most it may; distributional_dqn adds one (%s, the projection's source atoms)", len(s.Dims), src)
		return
	}
	for i, d := range s.Dims {
		if d.Name == k {
			s.Dims = append(s.Dims[:i+1], append([]spec.Dim{{Name: src, Size: d.Size, Pos: st.Pos}}, s.Dims[i+1:]...)...)
			break
		}
	}
}

// sourceAtomDim names the second atom dim the check adds (K → KSrc): the atoms of the next
// state's distributions, the source atoms i the projection sums over, while the atom dim
// indexes the projected atoms j. The next-state inputs are [*batch, KSrc, A], the memory
// layout of [*batch, K, A]: the plan cannot move a value from one dim to the other inside a
// loop over either, so the source side never lives on K.
func sourceAtomDim(atom string) string { return atom + "Src" }

// lowerDistributionalDQN is DistributionalDQNLoss.forward (dqn.py:516-640; SEMANTICS.md
// §16.1), with lsm the log-softmax over the atoms (make_log_softmax), z the support and
// Δz = (max z − min z)/(K − 1):
//
//	a*   = first argmax_a Σ_k exp(lsm(next_action_value_online))[k, a]·z_k   (no gradient)
//	p    = softmax(next_action_value)[:, a*]                                   (target net)
//	Tz_i = clamp(r + (1 − terminated)·γ·z_i, min z, max z);  b_i = (Tz_i − min z)/Δz
//	m_j  = Σ_i p_i·max(0, 1 − |b_i − j|)        (TorchRL's floor/ceil index_add, exactly)
//	loss = reduce(−Σ_j m_j·lsm(action_value)[j, a])   (TorchRL's key loss)
//	td_error = −Σ_j m_j·lsm(action_value)[j, a]       (detached; the replay priority)
//
// The triangular kernel gives each atom the mass TorchRL's floor/ceil projection gives it,
// its fix for a b on an atom included (l = u = b: all the mass on b), without a scatter.
func lowerDistributionalDQN(l *Lowerer, st *spec.Stage) {
	b := l.B
	l.readMask()
	a, k := st.String("action_dim"), st.String("atom_dim")
	ks := sourceAtomDim(k)
	red := st.String("reduction")
	shape := b.Shape(append(l.Batch().Names(), k, a)...)
	lsm := func(x *ir.Node, atoms string) *ir.Node {
		if st.Bool("make_log_softmax") {
			return b.Sub(x, b.LogSumExp(x, atoms))
		}
		return x
	}
	raw := "raw outputs (logits over the atoms; the kernel applies the log-softmax)"
	if !st.Bool("make_log_softmax") {
		raw = "log-softmax values over the atoms"
	}
	q := l.ReadShaped("action_value", shape)
	l.KeyDoc("action_value", "the current net's "+raw+" on s [*batch, "+k+", "+a+"] (TorchRL key action_value)")
	// lsm(q) at the stored action, as q there minus its logsumexp there: the logsumexp over
	// the atoms is per action, outside the loops over the atoms that use the result.
	act := l.storedAction(st)
	lp := b.Note(l.valueAt(st, q, act), "log_ps_a")
	if st.Bool("make_log_softmax") {
		lp = b.Note(b.Sub(lp, l.valueAt(st, b.LogSumExp(q, k), act)), "log_ps_a")
	}
	// The next state's distributions are laid out over the source atoms ks, which the
	// projection sums over: the same memory as [*batch, K, A].
	nextShape := b.Shape(append(l.Batch().Names(), ks, a)...)
	target := l.ReadShaped("next_action_value", nextShape)
	l.KeyDoc("next_action_value", "the target net's "+raw+" on s' [*batch, "+ks+", "+a+"], "+ks+" the atoms again (the projection's source atoms; the layout of [*batch, "+k+", "+a+"]): no gradient")
	online := target
	if st.Bool("delay_value") {
		online = l.ReadShaped("next_action_value_online", nextShape)
		l.KeyDoc("next_action_value_online", "the current net's "+raw+" on s' [*batch, "+ks+", "+a+"] (the layout of [*batch, "+k+", "+a+"]), which choose the next action (TorchRL: value_network_params under no_grad): no gradient")
	}
	if !st.Bool("make_log_softmax") {
		bad := b.Add(b.Add(b.SumAll(l.maskOf(b.Gt(q, b.Const(0)))), b.SumAll(l.maskOf(b.Gt(target, b.Const(0))))),
			b.SumAll(l.maskOf(b.Gt(online, b.Const(0)))))
		l.Output("invalid_action_value", bad, ir.Fault,
			"the number of action_value, next action_value and online next action_value elements above 0: log-softmax values must be ≤ 0, and TorchRL raises ValueError (Forward returns a *runtime.DataError when it is not 0)")
	}

	sup := l.support(st)
	lo, hi := slices.Min(sup), slices.Max(sup)
	dz := l.Hyper("delta_z", (hi-lo)/float64(len(sup)-1), false, "Δz = (v_max − v_min)/(K − 1), in Python double from the support's extremes")
	l.Hyper("v_min", lo, false, "the support's minimum")
	l.Hyper("v_max", hi, false, "the support's maximum")
	g := l.Hyper("gamma", st.Float("gamma"), true, "γ (a float32 buffer in TorchRL)")

	// The next action and its target distribution over the source atoms, under no_grad.
	next := b.ArgMax(l.expectedValues(lsm(b.Detach(online), ks), sup, ks), a)
	p := b.Note(b.Gather(b.Exp(lsm(b.Detach(target), ks)), next, a), "pns_a")
	notTerm := b.Sub(b.Const(1), l.ReadOr("terminated", "done"))
	z := b.ConstTensor(b.Shape(ks), sup)
	tz := b.Note(b.Clamp(b.Add(l.Read("reward"), b.Mul(b.Mul(notTerm, b.Const(g)), z)), b.Const(lo), b.Const(hi)), "Tz")
	l.Output("invalid_target", b.SumAll(l.maskOf(b.Ne(tz, tz))), ir.Fault,
		"the number of NaN elements of the shifted support Tz (a NaN reward): TorchRL raises RuntimeError (Tz has some non-finite elements); Forward returns a *runtime.DataError when it is not 0")
	pos := b.Note(b.Div(b.Sub(tz, b.Const(lo)), b.Const(dz)), "b")
	// Source atom i's share of projected atom j (the atom dim k): the triangular kernel.
	w := b.Max(b.Const(0), b.Sub(b.Const(1), b.Abs(b.Sub(pos, b.Iota(k, false)))))
	m := b.Note(b.Detach(b.Sum(b.Mul(p, w), ks)), "m")

	ce := b.Note(b.Neg(b.Sum(b.Mul(m, lp), k)), "cross_entropy")
	l.Output("loss", l.reduce(ce, red), ir.LossTerm,
		"the cross-entropy −Σ_k m_k·log p(s, a)_k of the projected target distribution m, reduced by reduction ("+red+") (TorchRL key loss, not loss_*)")
	l.Output("target_distribution", l.maskOf(m), ir.Metric,
		"m, the target distribution projected onto the support [*batch, "+k+"], detached (TorchRL computes it and does not return it)")
	l.Write("priority", l.maskOf(b.Detach(ce)), ir.Metric,
		"the replay priority, the per-sample cross-entropy, detached (TorchRL key td_error, written into the input tensordict; [*batch], TorchRL's [*batch, 1])")

	// softmax of logits of size x moves by x·eps when they round: the target's logits
	// reach 1e3 in the extreme sample, so m and the per-sample cross-entropy carry 1e3 ulps.
	b.MarkIllConditioned("target_distribution", 2e-3)
	b.MarkIllConditioned(spec.DataName(l.S.Keys["priority"]), 2e-3)

	s := "s = 1/n for mean, 1 for sum and none"
	if st.Bool("make_log_softmax") {
		l.GradDoc("action_value", "loss: (softmax(Q(s, ·, a))_k·Σ_j m_j − m_k)·s = (softmax_k − m_k)·s at the stored action a only (Σ m = 1), m the projected target distribution; "+s+" (SEMANTICS.md §16.1; "+dqnSource+" DistributionalDQNLoss.forward)")
	} else {
		l.GradDoc("action_value", "loss: −m_k·s at the stored action a only, m the projected target distribution; "+s+" (SEMANTICS.md §16.1; "+dqnSource+" DistributionalDQNLoss.forward)")
	}
}
