package lower

import (
	"github.com/lossgen/lossgen/spec"
)

func init() {
	register(&Stage{
		StageDef: spec.StageDef{
			Kind: spec.Estimator, Type: "td1", Class: "TD1Estimator", Source: valueSource,
			Params:  []spec.ParamDef{unitParam("gamma", "the discount γ"), paramAverageRewards, paramTimeDim},
			Keys:    estimatorKeys,
			Example: discountExample("gamma"),
			Check:   estimatorCheck([]string{"gamma"}, "average_rewards"),
		},
		Lower: lowerTD1,
	})
}

// lowerTD1 is TD(1), the loop form with rolling γ (functional.py td1_return_estimate;
// SEMANTICS.md §3.3): from g = V'_{T−1}, backwards,
//
//	G_t = R_t + γ(1−τ_t)·(V'_t if d_t ∧ ¬τ_t else G_{t+1});  advantage = G − V;  value_target = G
//
// as a reverse scan G_t = b_t + a_t·G_{t+1} with u_t = d'_t ∧ ¬τ_t (d' = done, forced at the
// row's last step, where the loop starts from V'): a_t = γ(1−τ_t)(1−u_t), b_t = R_t +
// γ(1−τ_t)u_t·V'_t. u is 0 or 1, so each step rounds as TorchRL's loop does (one product,
// one sum). γ stays a double (TorchRL fills a tensor of the data's dtype with it, §11.14).
func lowerTD1(l *Lowerer, st *spec.Stage) {
	b := l.B
	time := l.timeDim(st)
	one := b.Const(1)
	g := b.Const(l.Hyper("gamma", st.Float("gamma"), false, "γ (a tensor of the data's dtype in TorchRL)"))
	r := l.averageRewards(st, l.Read("reward"), 1e-5)
	term := l.ReadOr("terminated", "done")
	done := b.Max(l.Read("done"), l.lastStep(time))
	v, vNext := l.estimatorValue(), l.Read("next_value")
	gNotTerm := b.Mul(g, b.Sub(one, term))
	u := b.Mul(done, b.Sub(one, term)) // done but not terminated (and the last step)
	bt := b.Note(b.Add(r, b.Mul(b.Mul(gNotTerm, u), vNext)), "td1_b")
	at := b.Note(b.Mul(gNotTerm, b.Sub(one, u)), "td1_a")
	ret := b.Note(b.Scan(bt, at, time, true, l.cutAtDone()), "td1_return")
	l.writeEstimate(ret, v, "value target: the TD(1) return (TorchRL key value_target)")
}
