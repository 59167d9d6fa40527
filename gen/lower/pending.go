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
	iql := []spec.ParamDef{
		{Name: "num_qvalue_nets", Type: spec.Int, Default: 2, Min: 1, Max: inf},
		{Name: "loss_function", Type: spec.Enum, Default: "smooth_l1", Enum: distances},
		{Name: "temperature", Type: spec.Float, Default: 1.0, Min: 0, Max: inf, MinOpen: true, MaxOpen: true},
		{Name: "expectile", Type: spec.Float, Default: 0.5, Min: 0, Max: 1, MinOpen: true, MaxOpen: true},
		{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions},
	}
	// IQL builds its own TD(0) target (γ 0.99) unless the spec gives a TD estimator.
	iqlCheck := func(c *spec.Check) {
		e := c.Spec.Estimator
		if e == nil {
			c.Spec.Estimator = c.NewStage(spec.Estimator, "td0", map[string]any{"gamma": 0.99})
		} else if e.Type == "gae" || e.Type == "vtrace" {
			c.ErrorAt("estimator.type", "estimator.type: "+e.Type+" is not supported by "+c.Stage.Type+" (TorchRL raises NotImplementedError) (allowed: td0, td1, td_lambda)")
		}
	}
	pending(spec.Loss, "iql", "IQLLoss", "torchrl/objectives/iql.py", iql, iqlCheck)
	pending(spec.Loss, "discrete_iql", "DiscreteIQLLoss", "torchrl/objectives/iql.py", append(iql,
		spec.ParamDef{Name: "action_space", Type: spec.Enum, Enum: []string{"one_hot", "categorical"}}), iqlCheck)
	pending(spec.Transform, "kl_reward", "KLRewardTransform", "torchrl/envs/llm/transforms/kl.py", []spec.ParamDef{
		{Name: "coef", Type: spec.Float, Default: 1.0, Min: -inf, Max: inf}})
	q := []spec.ParamDef{
		{Name: "action_space", Type: spec.Enum, Default: "one_hot", Enum: []string{"one_hot", "categorical", "mult_one_hot"}},
		{Name: "var_nums", Type: spec.IntList},
	}
	pending(spec.Transform, "qvalue", "QValueModule", "torchrl/modules/tensordict_module/actors.py", q)
	pending(spec.Transform, "distributional_qvalue", "DistributionalQValueModule", "torchrl/modules/tensordict_module/actors.py",
		append(q, spec.ParamDef{Name: "support", Type: spec.FloatList, Min: -inf, Max: inf}))
}
