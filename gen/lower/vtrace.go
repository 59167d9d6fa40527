package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

func init() {
	inf := math.Inf(1)
	register(&Stage{
		StageDef: spec.StageDef{
			Kind: spec.Estimator, Type: "vtrace", Class: "VTrace", Source: valueSource,
			Params: []spec.ParamDef{
				unitParam("gamma", "the discount γ"),
				{Name: "rho_thresh", Type: spec.Float, Default: 1.0, Min: 0, Max: inf, MinOpen: true, MaxOpen: true, Doc: "ρ̄, the clip of the importance weights in δ and the advantage"},
				{Name: "c_thresh", Type: spec.Float, Default: 1.0, Min: 0, Max: inf, MinOpen: true, MaxOpen: true, Doc: "c̄, the clip of the traces"},
				{Name: "average_adv", Type: spec.Bool, Default: false, Doc: "standardise the advantage: (A − mean A)/max(std A, 1e-5), unbiased std over every element"},
				paramTimeDim,
			},
			Rejected: []spec.Rejected{{Name: "actor_network", Why: "not taken: the kernel takes the actor's outputs as inputs, not the network: keys log_prob (the current policy's log-probs of the stored actions) and sample_log_prob (the behaviour policy's); remove actor_network"}},
			Keys:     append(append([]spec.KeyDef(nil), estimatorKeys...), keyLogProb, keySampleLogProb),
			Check:    estimatorCheck([]string{"gamma"}, "average_adv"),
			Example:  discountExample("gamma"),
		},
		Lower: lowerVTrace,
	})
}

// lowerVTrace is V-trace (functional.py vtrace_advantage_estimate; SEMANTICS.md §3.6), with
// log_pi the current policy's log-prob of the taken action (log_prob) and log_mu the
// behaviour policy's (sample_log_prob):
//
//	ρ = exp(log_pi − log_mu);  ρ̂ = min(ρ, ρ̄);  c = min(ρ, c̄)
//	δ_t = ρ̂_t (R_t + γ(1−τ_t)V'_t − V_t)
//	D_t = δ_t + (γ(1−d_t))·c_t·D_{t+1},  D_T = 0        (reverse scan)
//	vs = V + D                                          (value_target)
//	vs⁺_t = vs_{t+1} (t < T−1), V'_{T−1} at the end, and V'_t at a truncation inside the row
//	advantage = ρ̂ (R + γ(1−τ)·vs⁺ − V);  average_adv: standardised, floor 1e-5
//
// vs⁺ at a done step is the textbook value V'_t, not TorchRL's vs_{t+1} of the next episode
// (§11.7; at a terminated step both are multiplied by 0). γ·(1−d) and γ·(1−τ) are float32 tensors in TorchRL
// (§11.14); ρ̄ and c̄ stay doubles.
func lowerVTrace(l *Lowerer, st *spec.Stage) {
	b := l.B
	time := l.timeDim(st)
	one := b.Const(1)
	g := b.Const(l.Hyper("gamma", st.Float("gamma"), true, "γ as V-trace's γ·(1 − done) and γ·(1 − terminated) use it"))
	rhoBar := b.Const(l.Hyper("rho_thresh", st.Float("rho_thresh"), false, "ρ̄"))
	cBar := b.Const(l.Hyper("c_thresh", st.Float("c_thresh"), false, "c̄"))
	r, v, vNext := l.Read("reward"), l.Read("value"), l.Read("next_value")
	done := l.Read("done")
	term := l.ReadOr("terminated", "done")
	lp, lpOld := l.Read("log_prob"), l.Read("sample_log_prob")

	rho := b.Note(b.Exp(b.Detach(b.Sub(lp, lpOld))), "rho")
	rhoC := b.Note(b.Min(rho, rhoBar), "rho_clipped")
	c := b.Note(b.Min(rho, cBar), "c_clipped")
	gNotTerm := b.Mul(g, b.Sub(one, term))
	gNotDone := b.Mul(g, b.Sub(one, done))
	delta := b.Note(b.Mul(rhoC, b.Sub(b.Add(r, b.Mul(gNotTerm, vNext)), v)), "delta")
	dsum := b.Note(b.Scan(delta, b.Mul(gNotDone, c), time, true, l.cutAtDone()), "vs_minus_v")
	vs := b.Detach(b.Note(b.Add(dsum, v), "vs")) // an estimate, also where its shift reads it
	// At every done step vs⁺ is V'_t (§3.6): at a terminated one γ(1 − τ) makes it 0 either
	// way, and vs_{t+1}, the next sequence's or the padding's, is never read (0·NaN).
	vsNext := b.Where(done, vNext, b.ShiftNext(vs, vNext, time))
	adv := b.Mul(rhoC, b.Sub(b.Add(r, b.Mul(gNotTerm, vsNext)), v))
	doc := "advantage ρ̂(R + γ(1 − terminated)vs⁺ − V) (TorchRL key advantage)"
	if st.Bool("average_adv") {
		adv = l.standardize(adv, nil, 1e-5)
		doc += ", standardised by average_adv: (A − mean A)/max(std A, 1e-5)"
	}
	l.Set("old_value", b.Detach(v))
	l.Write("advantage", adv, ir.Estimate, doc)
	l.Write("value_target", vs, ir.Estimate, "value target vs = V + D, the V-trace target (TorchRL key value_target)")
}
