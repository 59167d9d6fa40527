package lower

import (
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

var estimatorSource = map[string]string{
	"gae": "torchrl/objectives/value/functional.py generalized_advantage_estimate; torchrl/objectives/value/advantages.py GAE.forward",
}

func advantageDoc(e *spec.Estimator) string {
	doc := "advantage (TorchRL key advantage)"
	if e.Type == "gae" && e.AverageGAE {
		doc += ", standardised by average_gae: (A − mean A)/max(std A, 1e-4)"
	}
	return doc
}

// lowerGAE is TorchRL's loop GAE (functional.py generalized_advantage_estimate, the default
// GAE path since vectorized=None is falsy; SEMANTICS.md §3.5, §11.12):
//
//	δ_t = R_t + (γ·(1−τ_t))·V'_t − V_t
//	A_t = δ_t + A_{t+1}·(λγ·(1−d_t)),  A_T = 0   (reverse scan along the time dim)
//	value_target = A + V                        (from the un-normalised advantage)
//	average_gae: A ← (A − mean A) / clamp_min(std A, 1e-4), unbiased std over every element
//
// γ·(1−τ) and λγ are formed as TorchRL forms them: the Python floats λ·γ multiply first.
func lowerGAE(l *lowerer, e *spec.Estimator) (adv, vt *ir.Node) {
	b := l.b
	batch := b.Batch()
	time := batch[len(batch)-1].Name
	one := b.Const(1)
	r, v, vNext := l.in("reward"), l.in("value"), l.in("next_value")
	notTerm := b.Sub(one, l.terminated())
	notDone := b.Sub(one, l.in("done"))

	delta := b.Note(b.Sub(b.Add(r, b.Mul(b.Mul(b.Const(e.Gamma), notTerm), vNext)), v), "delta")
	discount := b.Note(b.Mul(b.Const(e.Lmbda*e.Gamma), notDone), "discount")
	adv = b.Note(b.Scan(delta, discount, time, true), "gae")
	vt = b.Note(b.Add(adv, v), "value_target")
	if e.AverageGAE {
		adv = l.standardize(adv, nil, 1e-4)
	}
	return adv, vt
}
