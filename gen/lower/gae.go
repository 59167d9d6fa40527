package lower

import (
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// estimatorKeys are the keys every value estimator reads and writes (SEMANTICS.md §3.1).
var estimatorKeys = []spec.KeyDef{keyReward, keyDone, keyTerminated, keyValue, keyNextValue, keyAdvantage, keyValueTarget}

func init() {
	register(&Stage{
		StageDef: spec.StageDef{
			Kind: spec.Estimator, Type: "gae", Class: "GAE",
			Source: valueSource,
			Params: []spec.ParamDef{
				unitParam("gamma", "the discount γ"),
				unitParam("lmbda", "the GAE λ (TorchRL's spelling)"),
				{Name: "average_gae", Type: spec.Bool, Default: false, Doc: "standardise the advantage: (A − mean A)/max(std A, 1e-4), unbiased std over every element"},
				paramTimeDim,
			},
			Ignored: []spec.ParamDef{paramVectorized(true)}, // vectorized: bool | None = None
			Keys:    estimatorKeys,
			Example: discountExample("gamma", "lmbda"),
			Check: func(c *spec.Check) {
				discountDefaults(c, "gamma", "lmbda")
				checkTimeDim(c)
				checkStandardise(c, "average_gae")
			},
		},
		Lower: lowerGAE,
	})
}

// checkStandardise rejects standardisation over a one-element batch (an unbiased std of NaN,
// SEMANTICS.md §11.11).
func checkStandardise(c *spec.Check, param string) {
	n := 1
	for _, x := range c.Spec.BatchShape() {
		n *= x
	}
	if n == 1 && c.Stage.Bool(param) {
		c.Errorf(param, "standardisation over a batch of one element divides by an unbiased std of NaN; drop it or enlarge the batch")
	}
}

// lowerGAE is TorchRL's loop GAE (functional.py generalized_advantage_estimate, the default
// GAE path since vectorized=None is falsy; SEMANTICS.md §3.5, §11.12):
//
//	δ_t = R_t + (γ·(1−τ_t))·V'_t − V_t
//	A_t = δ_t + A_{t+1}·(λγ·(1−d_t)),  A_T = 0   (reverse scan along the time dim)
//	value_target = A + V                        (from the un-normalised advantage)
//	average_gae: A ← (A − mean A) / clamp_min(std A, 1e-4), unbiased std over every element
//
// γ·(1−τ) and λγ are formed as TorchRL forms them: the GAE class holds γ and λ as float32
// tensors (advantages.py GAE.__init__), and its functional multiplies them in float32,
// lmbda * gamma * not_done (functional.py:172), so λγ is f32(f32(λ)·f32(γ)) (param_dtype
// float32, SEMANTICS.md §11.14); the product of the doubles rounded once differs in about 30%
// of (γ, λ) pairs ((0.9, 0.8): 0.72000003 against 0.71999997).
func lowerGAE(l *Lowerer, st *spec.Stage) {
	b := l.B
	time := l.timeDim(st)
	one := b.Const(1)
	gamma, lmbda := st.Float("gamma"), st.Float("lmbda")
	g := l.Hyper("gamma", gamma, true, "γ as GAE's γ·(1 − terminated) uses it")
	lgv := lmbda * gamma
	if l.S.ParamDType == spec.Float32 {
		lgv = float64(float32(lmbda) * float32(gamma)) // Go rounds a float32 product to float32
	}
	lg := l.Hyper("lmbda*gamma", lgv, false, "λ·γ as GAE's λγ·(1 − done) uses it: the float32 product of the float32 λ and γ")
	r, v, vNext := l.Read("reward"), l.Read("value"), l.Read("next_value")
	notTerm := b.Note(b.Sub(one, l.ReadOr("terminated", "done")), "not_terminated")
	notDone := b.Note(b.Sub(one, l.Read("done")), "not_done")

	delta := b.Note(b.Sub(b.Add(r, b.Mul(b.Mul(b.Const(g), notTerm), vNext)), v), "delta")
	discount := b.Note(b.Mul(b.Const(lg), notDone), "discount")
	adv := b.Note(b.Scan(delta, discount, time, true, l.cutAtDone()), "gae")
	vt := b.Note(b.Add(adv, v), "value_target")
	doc := "advantage (TorchRL key advantage)"
	if st.Bool("average_gae") {
		adv = l.standardize(adv, nil, 1e-4)
		doc += ", standardised by average_gae: (A − mean A)/max(std A, 1e-4)"
	}
	// TorchRL's estimator writes the critic's current value over the stored one, so a loss
	// after it sees V_old = V (SEMANTICS.md §1.4).
	l.Set("old_value", b.Detach(v))
	l.Write("advantage", adv, ir.Estimate, doc)
	l.Write("value_target", vt, ir.Estimate, "value target (TorchRL key value_target): the return the critic regresses on")
}
