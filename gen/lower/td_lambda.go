package lower

import (
	"github.com/lossgen/lossgen/spec"
)

func init() {
	register(&Stage{
		StageDef: spec.StageDef{
			Kind: spec.Estimator, Type: "td_lambda", Class: "TDLambdaEstimator", Source: valueSource,
			Params:  []spec.ParamDef{unitParam("gamma", "the discount γ"), unitParam("lmbda", "the TD(λ) λ (TorchRL's spelling)"), paramAverageRewards, paramTimeDim},
			Ignored: []spec.ParamDef{paramVectorized(nil)}, // vectorized: bool = True
			Keys:    estimatorKeys,
			Example: discountExample("gamma", "lmbda"),
			Check:   estimatorCheck([]string{"gamma", "lmbda"}, "average_rewards"),
		},
		Lower: lowerTDLambda,
	})
}

// lowerTDLambda is TD(λ), the loop form with rolling γ (functional.py
// td_lambda_return_estimate; SEMANTICS.md §3.4): with Ṽ'_t = (1−τ_t)V'_t, from g = Ṽ'_{T−1},
// backwards,
//
//	g ← Ṽ'_t if d_t else g;  G_t = R_t + γ((1−λ)Ṽ'_t + λg);  g ← G_t
//	advantage = G − V;  value_target = G
//
// as the reverse scan G_t = b_t + a_t·G_{t+1} of §3.4's affine form: a_t = γλ(1−d'_t),
// b_t = R_t + γṼ'_t(1 − λ(1−d'_t)), d' = done forced at the row's last step. This rounds
// differently from the loop (by an ulp per step; the tests hold it to 1e-12 in float64).
// γ and λ stay doubles (§11.14). average_rewards standardises R first, floor 1e-4 (§11.10:
// the reward itself, not TorchRL's write to the wrong key).
func lowerTDLambda(l *Lowerer, st *spec.Stage) {
	b := l.B
	time := l.timeDim(st)
	one := b.Const(1)
	gamma := l.Hyper("gamma", st.Float("gamma"), false, "γ (a tensor of the data's dtype in TorchRL)")
	lmbda := l.Hyper("lmbda", st.Float("lmbda"), false, "λ (a tensor of the data's dtype in TorchRL)")
	r := l.averageRewards(st, l.Read("reward"), 1e-4)
	term := l.ReadOr("terminated", "done")
	done := b.Max(l.Read("done"), l.lastStep(time))
	v := l.estimatorValue()
	vNext := b.Note(b.Mul(l.Read("next_value"), b.Sub(one, term)), "next_value_bootstrap")
	notDone := b.Sub(one, done)
	at := b.Note(b.Mul(b.Const(gamma*lmbda), notDone), "tdl_a")
	bt := b.Note(b.Add(r, b.Mul(b.Mul(b.Const(gamma), vNext), b.Sub(one, b.Mul(b.Const(lmbda), notDone)))), "tdl_b")
	ret := b.Note(b.Scan(bt, at, time, true, l.cutAtDone()), "td_lambda_return")
	l.writeEstimate(ret, v, "value target: the TD(λ) return (TorchRL key value_target)")
}
