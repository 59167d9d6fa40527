package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

func init() {
	inf := math.Inf(1)
	def := ppoDef("klpen_ppo", "KLPENPPOLoss", []spec.ParamDef{
		{Name: "dtarg", Type: spec.Float, Default: 0.01, Min: 0, Max: inf, MinOpen: true, MaxOpen: true, Doc: "the target KL: β grows when mean KL > 1.5·dtarg, shrinks when < dtarg/1.5"},
		{Name: "beta", Type: spec.Float, Default: 1.0, Min: 0, Max: inf, MaxOpen: true, Doc: "β₀, the initial KL coefficient (kernel state: State.Beta)"},
		{Name: "increment", Type: spec.Float, Default: 2.0, Min: 1, Max: inf, MaxOpen: true, Doc: "β ← β·increment when the KL is above target (TorchRL: ValueError below 1)"},
		{Name: "decrement", Type: spec.Float, Default: 0.5, Min: 0, Max: 1, MinOpen: true, Doc: "β ← β·decrement when the KL is below target (TorchRL: ValueError above 1)"},
	}, []spec.KeyDef{keyOldLogits, keyOldLoc, keyOldScale}, checkKLPEN)
	// KLPEN needs a distribution (checkKLPEN): a starter's is a categorical policy.
	def.Example = &spec.Example{Params: map[string]any{"distribution": "categorical", "action_dim": "A"}, After: []spec.Dim{{Name: "A", Size: 4}}}
	// TorchRL samples the KL only where torch.distributions has no closed form for the pair;
	// every distribution KLPEN takes here has one (checkKLPEN, SEMANTICS.md §11.9).
	def.Ignored = append(def.Ignored, spec.ParamDef{Name: "samples_mc_kl", Type: spec.Int, Min: 1, Max: inf,
		Doc: "TorchRL samples the KL only where the distributions have no closed-form KL; the kernel's distributions (categorical, one_hot_categorical, normal, tanh_normal) all have one, which TorchRL computes too"})
	register(&Stage{StageDef: def, Lower: lowerKLPEN, Summary: ppoSummary, Bootstrap: policyBootstrap})
}

// checkKLPEN requires a distribution with a closed-form KL (SEMANTICS.md §10.5, §11.9).
func checkKLPEN(c *spec.Check) {
	if c.Stage.String("distribution") == "none" {
		c.Errorf("distribution", "klpen_ppo computes KL(old ‖ current) in closed form from the distributions' parameters: set distribution to categorical or one_hot_categorical (the old and current logits [*batch, A]) or normal or tanh_normal (loc and scale [*batch, D]), "+
			"with the action dim declared under dims after the batch dims (e.g. dims: {N: 16, T: 256, A: 4}, distribution: categorical) (lossgen computes no Monte-Carlo KL, SEMANTICS.md §11.9)")
	}
}

// lowerKLPEN is TorchRL v0.11.0's KLPENPPOLoss.forward (SEMANTICS.md §2.3, §11.3):
//
//	kl = KL(old ‖ current) per element, closed form (old_logits or old_loc/old_scale)
//	loss_objective = reduce(−(exp(lw)·A − β·kl)),  β the state at the call's start
//	kl (detached, never reduced), kl_approx, entropy and critic terms as PPOLoss
//	beta = β·increment if mean(kl) > 1.5·dtarg, β·decrement if mean(kl) < dtarg/1.5, else β
//	       (masked: the mean over the valid elements; β itself when there is none)
//
// β is kernel state: the value and the gradient (∂/∂kl = β·s) use the β in force at the
// start of the call; the updated β is the beta output and the next call's state.
func lowerKLPEN(l *Lowerer, st *spec.Stage) {
	b := l.B
	c := l.ppoBegin(st)
	kl := b.Note(c.pol.kl(), "kl")
	beta0 := l.Hyper("beta", st.Float("beta"), true, "β₀, the KL coefficient State starts from and Reset restores")
	beta := l.stateInput("beta", beta0, "KLPEN's KL coefficient β in force at the call's start (kernel state)")
	neg := b.Sub(b.Mul(b.Exp(c.lw), c.adv), b.Mul(beta, kl))
	l.Output("loss_objective", l.reduce(b.Neg(neg), c.reduction), ir.LossTerm,
		"−(exp(lw)·A − β·KL(old ‖ current)), reduced by reduction ("+c.reduction+")")
	l.objectiveGradDoc(c, "loss_objective: −A·exp(lw)·s, s = 1/n for mean, 1 for sum and none (SEMANTICS.md §2.8; torchrl/objectives/ppo.py KLPENPPOLoss.forward)")
	for _, k := range []string{"logits", "loc", "scale"} {
		l.GradDoc(k, "loss_objective through its β·kl term: β·s·∂kl (β at the call's start, SEMANTICS.md §11.3)")
	}
	l.Output("kl", b.Detach(kl), ir.Metric, "KL(old ‖ current) per element, detached and never reduced")
	l.klApprox(c)
	l.ppoEnd(c)

	dtarg := l.Hyper("dtarg", st.Float("dtarg"), false, "the target KL")
	inc := l.Hyper("increment", st.Float("increment"), true, "β's growth factor")
	dec := l.Hyper("decrement", st.Float("decrement"), true, "β's shrink factor")
	m := b.Detach(l.mean(kl))
	scaled := func(f float64) *ir.Node {
		if l.S.ParamDType == spec.Float32 {
			// β is a float32 buffer updated in place (self.beta.data *= self.increment,
			// ppo.py KLPENPPOLoss.forward): the product rounds to float32 in a float64 run too.
			return b.RoundF32(b.Mul(beta, b.Const(f)))
		}
		return b.Mul(beta, b.Const(f))
	}
	next := b.Where(b.Gt(m, b.Const(dtarg*1.5)), scaled(inc),
		b.Where(b.Lt(m, b.Const(dtarg/1.5)), scaled(dec), beta))
	doc := "β for the next call: β·increment if mean(kl) > 1.5·dtarg, β·decrement if mean(kl) < dtarg/1.5, else β (State.Beta after the call)"
	if l.valid != nil {
		doc = "β for the next call: β·increment if mean(kl) > 1.5·dtarg, β·decrement if mean(kl) < dtarg/1.5, else β, mean(kl) over the valid elements; β itself when none is valid (State.Beta after the call)"
		// No valid element: the masked mean is 0 (§11.16), which would halve β for a call
		// that saw no data; TorchRL's NaN mean passes neither test and keeps β (§11.20).
		next = b.Where(b.Gt(l.valid, b.Const(0)), next, beta)
	}
	l.Output("beta", next, ir.State, doc)
}
