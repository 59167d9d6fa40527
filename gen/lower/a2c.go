package lower

import (
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// A2CLoss (torchrl/objectives/a2c.py, SEMANTICS.md §15.1): the policy gradient −log π(a)·A,
// the entropy bonus and the critic's regression, in one kernel. Like the PPO family it takes
// the advantage and value target from the estimator before it, or as inputs, and the
// current policy's log-prob and entropy as inputs or from a distribution evaluated in the
// kernel.

const a2cSource = "torchrl/objectives/a2c.py"

func init() {
	params := pickParams(ppoParams(), "entropy_bonus", "entropy_coeff", "critic_coeff", "loss_critic_type", "clip_value", "reduction")
	for i := range params {
		p := &params[i]
		switch p.Name {
		case "entropy_coeff":
			p.Type, p.Null, p.Doc = spec.Float, 0.01, "the entropy coefficient (TorchRL's None is 0.01); 0 drops entropy and loss_entropy (entropy_bonus and entropy_coeff)"
		case "critic_coeff":
			// TorchRL: None drops loss_critic; 0.0 keeps it, as zeros.
			p.Null, p.Min, p.Doc = "none", 0, "scales the critic loss; null drops the critic term and its inputs, 0 keeps loss_critic as zeros"
		case "clip_value":
			p.Type, p.Min = spec.Float, 0
		}
	}
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Loss, Type: "a2c", Class: "A2CLoss", Source: a2cSource,
			Params:  append(params, policyParams("none")...),
			Ignored: []spec.ParamDef{ignoredMCEntropy},
			Keys:    append([]spec.KeyDef{keyAdvantage, keyValueTarget, keyValue, keyOldValue, keyMask}, policyKeys...),
			Check: func(c *spec.Check) {
				checkPolicy(c)
				checkClipValue(c, a2cCritic(c.Stage))
			},
		},
		Lower:     lowerA2C,
		Bootstrap: policyBootstrap,
		Summary:   ppoSummary,
	})
}

// pickParams returns the named parameters of ps, in ps's order.
func pickParams(ps []spec.ParamDef, names ...string) []spec.ParamDef {
	var out []spec.ParamDef
	for _, p := range ps {
		if contains(names, p.Name) {
			out = append(out, p)
		}
	}
	return out
}

// a2cCritic reports whether A2CLoss has its critic term: critic_coeff is not None.
func a2cCritic(st *spec.Stage) bool { return st.Get("critic_coeff") != "none" }

// lowerA2C is A2CLoss.forward (a2c.py:539-580; SEMANTICS.md §15.1), H the policy's entropy:
//
//	loss_objective = reduce(−log π(a)·A)                      (no ratio, no clipping)
//	loss_entropy   = reduce(−entropy_coeff·H);  entropy = mean(H)   (entropy_bonus and entropy_coeff ≠ 0)
//	loss_critic    = reduce(critic_coeff·distance(value_target, V))  (critic_coeff not null;
//	                 with clip_value the larger of it and the clipped loss, as PPO)
func lowerA2C(l *Lowerer, st *spec.Stage) {
	b := l.B
	l.readMask()
	red := st.String("reduction")
	adv := l.Read("advantage")
	pol := l.policy(st)
	l.Output("loss_objective", l.reduce(b.Neg(b.Mul(pol.lp, adv)), red), ir.LossTerm,
		"the policy gradient −log π(a)·A, reduced by reduction ("+red+")")
	l.policyGradDoc(pol, "loss_objective: −A·s, s = 1/n for mean, 1 for sum and none (SEMANTICS.md §15.1; "+a2cSource+" A2CLoss.forward)")
	if st.Float("entropy_coeff") != 0 { // TorchRL: entropy_bonus and entropy_coeff
		l.entropyTerm(st, pol, a2cSource+" A2CLoss.forward")
	}
	if !a2cCritic(st) {
		return
	}
	_, _, lossValue, doc := l.valueLoss(st, st.Float("clip_value"))
	cc := l.Hyper("critic_coeff", st.Float("critic_coeff"), true, "scales the critic loss (a float32 buffer in TorchRL)")
	l.GradDoc("value", "loss_critic: critic_coeff·"+doc+" (SEMANTICS.md §15.1; "+a2cSource+" A2CLoss.loss_critic)")
	l.Output("loss_critic", l.reduce(b.Mul(b.Const(cc), lossValue), red), ir.LossTerm,
		"critic_coeff·"+st.String("loss_critic_type")+"(value_target, V), reduced by reduction")
}
