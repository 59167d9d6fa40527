package lower

import "github.com/lossgen/lossgen/spec"

// The keys several stages read or write, with TorchRL's default data keys (PPOLoss and the
// value estimators' tensor_keys, torchrl/objectives/ppo.py and value/advantages.py; nested
// keys as data paths: TorchRL reads its reward key under "next") and lossgen's names for what
// TorchRL gets by calling networks inside a loss (the current policy's log-prob and entropy,
// the critic's value). Stage files declare these in their registry entries, and their own.
var (
	keyAdvantage = spec.KeyDef{Name: "advantage", Default: []string{"advantage"}, Doc: "advantage estimate (TorchRL key advantage)",
		Sample: spec.Sample{Dist: "normal", Std: 1, ExtremeBig: true}}
	keyValueTarget = spec.KeyDef{Name: "value_target", Default: []string{"value_target"}, Doc: "critic target (TorchRL key value_target)",
		Sample: spec.Sample{Dist: "normal", Std: 2}}
	keyValue = spec.KeyDef{Name: "value", Default: []string{"state_value"}, Differentiable: true,
		Doc:    "current critic prediction V(s_t) (TorchRL key state_value)",
		Sample: spec.Sample{Dist: "normal", Std: 2}}
	keyNextValue = spec.KeyDef{Name: "next_value", NextOf: "value",
		Doc:    "critic value of the observation after step t, V(s_{t+1}) (TorchRL key (next, state_value))",
		Sample: spec.Sample{Dist: "normal", Std: 2}}
	keySampleLogProb = spec.KeyDef{Name: "sample_log_prob", Default: []string{"sample_log_prob"},
		Doc:    "log-probability recorded when the action was taken (TorchRL key sample_log_prob)",
		Sample: spec.Sample{Dist: "uniform", Lo: -3, Hi: -0.05}}
	keyLogProb = spec.KeyDef{Name: "log_prob", Default: []string{"log_prob"}, Differentiable: true,
		Doc:    "log-probability of the taken action under the current policy (network output)",
		Sample: spec.Sample{Dist: "normal", Std: 0.25, Offset: "sample_log_prob", ExtremeLog: true}}
	keyEntropy = spec.KeyDef{Name: "entropy", Default: []string{"entropy"}, Differentiable: true,
		Doc:    "entropy of the current policy's distribution (network output; TorchRL dist.entropy())",
		Sample: spec.Sample{Dist: "uniform", Lo: 0.1, Hi: 1.5, ExtremeNil: true}}
	keyReward = spec.KeyDef{Name: "reward", Default: []string{"next", "reward"}, Doc: "reward of step t (TorchRL key (next, reward))",
		Sample: spec.Sample{Dist: "normal", Std: 1, ExtremeBig: true}}
	// Padding is done (Pad 1): an estimator after a mask (value-based losses, SEMANTICS.md
	// §13) restarts its recursion there, so every padding step's return is 0 whatever the
	// padding holds, and a valid step before one bootstraps from that 0.
	keyDone = spec.KeyDef{Name: "done", Default: []string{"next", "done"}, Kind: spec.BoolKey,
		Doc:    "episode ended at step t, terminated or truncated (TorchRL key (next, done)); cuts the recursion",
		Sample: spec.Sample{Dist: "flag", P: 0.05}, Pad: 1}
	keyTerminated = spec.KeyDef{Name: "terminated", Default: []string{"next", "terminated"}, Kind: spec.BoolKey,
		Doc:    "episode reached a true terminal state at step t (TorchRL key (next, terminated)); zeroes the bootstrap",
		Sample: spec.Sample{Dist: "flag", P: 0.7, Within: "done"}}
	keyOldValue = spec.KeyDef{Name: "old_value", Default: []string{"old_state_value"},
		Doc:    "state value recorded with the data, the centre of value clipping (TorchRL reads it from state_value)",
		Sample: spec.Sample{Dist: "normal", Std: 0.3, Offset: "value"}}
)
