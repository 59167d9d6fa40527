package lower

import (
	"math"

	"github.com/lossgen/lossgen/spec"
)

// Stages whose schema lossgen parses and validates but that do not lower to IR yet.
func init() {
	inf := math.Inf(1)
	pending := func(kind spec.Kind, typ, class, source string, params []spec.ParamDef, check ...func(*spec.Check)) {
		var chk func(*spec.Check)
		if len(check) > 0 {
			chk = check[0]
		}
		register(&Stage{
			StageDef: spec.StageDef{Kind: kind, Type: typ, Class: class, Source: source, Params: params, Check: chk},
			Lower: func(l *Lowerer, st *spec.Stage) {
				l.errorf(st.Path, "%s: %s does not lower to IR yet (the spec is valid)", st.Path, st.Type)
			},
		})
	}
	pending(spec.Loss, "ppo", "PPOLoss", ppoSource, ppoParams())
	pending(spec.Loss, "klpen_ppo", "KLPENPPOLoss", ppoSource, append(ppoParams(),
		spec.ParamDef{Name: "dtarg", Type: spec.Float, Default: 0.01, Min: 0, Max: inf, MinOpen: true, MaxOpen: true},
		spec.ParamDef{Name: "beta", Type: spec.Float, Default: 1.0, Min: 0, Max: inf, MaxOpen: true},
		spec.ParamDef{Name: "increment", Type: spec.Float, Default: 2.0, Min: 1, Max: inf, MaxOpen: true},
		spec.ParamDef{Name: "decrement", Type: spec.Float, Default: 0.5, Min: 0, Max: 1, MinOpen: true},
		spec.ParamDef{Name: "distribution", Type: spec.Enum, Enum: []string{"normal", "tanh_normal", "categorical"}},
	))
}
