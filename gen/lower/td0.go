package lower

import (
	"github.com/lossgen/lossgen/spec"
)

func init() {
	register(&Stage{
		StageDef: spec.StageDef{
			Kind: spec.Estimator, Type: "td0", Class: "TD0Estimator", Source: valueSource,
			Params:  []spec.ParamDef{unitParam("gamma", "the discount γ"), paramAverageRewards, paramTimeDim},
			Keys:    estimatorKeys,
			Example: discountExample("gamma"),
			Check:   estimatorCheck([]string{"gamma"}, "average_rewards"),
		},
		Lower: lowerTD0,
	})
}

// lowerTD0 is TD(0) (functional.py td0_return_estimate, TD0Estimator; SEMANTICS.md §3.2):
//
//	G_t = R_t + (γ·(1−τ_t))·V'_t;  advantage = G − V;  value_target = G
//
// elementwise: done does not matter, only terminated (done where terminated is null). γ·(1−τ)
// is a float32 tensor in TorchRL (param_dtype float32, §11.14). average_rewards standardises R
// first (unbiased std floored at 1e-5, §11.10).
func lowerTD0(l *Lowerer, st *spec.Stage) {
	b := l.B
	g := l.Hyper("gamma", st.Float("gamma"), true, "γ as TD(0)'s γ·(1 − terminated) uses it")
	r := l.averageRewards(st, l.Read("reward"), 1e-5)
	notTerm := b.Sub(b.Const(1), l.ReadOr("terminated", "done"))
	v, vNext := l.estimatorValue(), l.Read("next_value")
	ret := b.Note(b.Add(r, b.Mul(b.Mul(b.Const(g), notTerm), vNext)), "td0_return")
	l.writeEstimate(ret, v, "value target G = R + γ(1 − terminated)V' (TorchRL key value_target)")
}
