package lower

import (
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// A stage that exists only in this package's tests: a transform scaling the reward, with
// its own key and parameter. It shows what adding a stage takes: this one file (and its
// tests), nothing outside gen/lower (see TestStageFromOneFile).
func init() {
	register(&Stage{
		StageDef: spec.StageDef{
			Kind: spec.Transform, Type: "test_reward_scale", Class: "RewardScaling", Source: "torchrl/envs/transforms/transforms.py",
			Params: []spec.ParamDef{{Name: "scale", Type: spec.Float, Default: 2.0, Min: 0, Max: 100, MinOpen: true}},
			Keys: []spec.KeyDef{keyReward, {Name: "test_bonus", Default: []string{"bonus"}, Doc: "a bonus added to the reward",
				Sample: spec.Sample{Dist: "uniform", Lo: 0, Hi: 1}}},
		},
		Lower: func(l *Lowerer, st *spec.Stage) {
			b := l.B
			r := b.Add(b.Mul(l.Read("reward"), b.Const(st.Float("scale"))), l.Read("test_bonus"))
			l.Write("reward", r, ir.Transformed, "the scaled reward")
		},
		Example: example("", "transforms", "{type: test_reward_scale}"),
	})
}
