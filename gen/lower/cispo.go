package lower

import "github.com/lossgen/lossgen/spec"

func init() {
	register(&Stage{
		StageDef: grpoDef("cispo", "CISPOLoss", 0.2, []spec.ParamDef{{Name: "stop_gradient", Type: spec.Bool, Default: false,
			Doc: "false: TorchRL's −clip(r)·A, whose clipped tokens get no gradient; true: the MiniMax-M1 paper's −sg(clip(r))·A·log_prob, whose every kept token gets −clip(r)·A"}}),
		Lower: lowerCISPO,
	})
}

// lowerCISPO is CISPOLoss (grpo.py:1004-1025): GRPOLoss with the objective, per token,
//
//	stop_gradient false (TorchRL):  −exp(clamp(lw, log1p(−ε_low), log1p(ε_high)))·A
//	stop_gradient true (the paper): −sg(exp(clamp(lw, ...)))·A·log_prob
//
// TorchRL's form has neither the stop-gradient nor the log π factor, so it is PPO without
// the min and a clipped token's gradient is 0: what CISPO exists to keep (SEMANTICS.md §12.3).
func lowerCISPO(l *Lowerer, st *spec.Stage) {
	b := l.B
	g := l.grpoBegin(st)
	lo, hi := l.logClipBounds(st)
	lwc := l.clampLogWeight(g.lw, lo, hi)
	w := b.Note(b.Exp(lwc), "ratio_clip")
	if st.Bool("stop_gradient") {
		l.grpoEnd(g, b.Neg(b.Mul(b.Mul(b.Detach(w), g.adv), g.cur)), lwc,
			"−sg(clip(r, 1−ε_low, 1+ε_high))·A·log_prob per token (MiniMax-M1's CISPO), aggregated by aggregation",
			"loss_objective: −clip(r)·A·s at every kept token, clipped or not")
		return
	}
	l.grpoEnd(g, b.Neg(b.Mul(w, g.adv)), lwc,
		"−clip(r, 1−ε_low, 1+ε_high)·A per token (TorchRL's CISPOLoss), aggregated by aggregation",
		"loss_objective: −A·exp(lw)·s at kept tokens with log1p(−ε_low) ≤ lw ≤ log1p(ε_high) (clamp passes the gradient at its bounds), else 0")
}
