package lower

import (
	"math"

	"github.com/lossgen/lossgen/spec"
)

// The off-policy losses' constructor arguments about the networks that produce their inputs
// (docs/SEMANTICS.md §11.21): the kernel takes the networks' values as inputs, so where and
// with which parameters the caller evaluates them changes nothing the kernel computes. They
// are accepted with a note that says what the caller does instead.

// ignoredTargetNets are TorchRL's delay_actor, delay_qvalue and delay_value of a loss whose
// next values are an input (keys.<next>): whether TorchRL evaluates that network with target
// (delayed) parameters.
func ignoredTargetNets(next string, names ...string) []spec.ParamDef {
	in := "the kernel takes them as an input (keys." + next + "): evaluate them with your target parameters or not"
	what := map[string]string{
		"delay_actor":  "whether TorchRL keeps target (delayed) actor parameters for the next action; the actor runs outside the kernel: evaluate the next action with the parameters you choose",
		"delay_qvalue": "whether TorchRL evaluates the next Q-values with target (delayed) Q-network parameters; " + in,
		"delay_value":  "whether TorchRL evaluates the next values with target (delayed) network parameters; " + in,
	}
	out := make([]spec.ParamDef, len(names))
	for i, n := range names {
		if what[n] == "" {
			panic("lower: no target-network argument " + n)
		}
		out[i] = spec.ParamDef{Name: n, Type: spec.Bool, Doc: what[n]}
	}
	return out
}

// ignoredAlphaInit is the SAC family's alpha_init: log α is an input, the caller's parameter.
var ignoredAlphaInit = spec.ParamDef{Name: "alpha_init", Type: spec.Float, Min: 0, MinOpen: true, Max: math.Inf(1),
	Doc: "TorchRL's initial α; log α is an input here (keys.log_alpha), the caller's parameter: initialise it to log(alpha_init)"}

// ignoredTD3Noise are TD3's target policy smoothing arguments: the caller smooths the next
// action where it evaluates the target Q-networks, whose values are the kernel's input.
var ignoredTD3Noise = func() []spec.ParamDef {
	why := "TD3's target policy smoothing happens where you evaluate the target Q-networks, whose values are the kernel's input: " +
		"next.state_action_value is Q'_k(s', clamp(π'(s') + clamp(policy_noise·ε, ±noise_clip), low, high)), ε ~ N(0, 1) (SEMANTICS.md §14.4)"
	return []spec.ParamDef{
		{Name: "policy_noise", Type: spec.Float, Min: 0, Max: math.Inf(1), Doc: why},
		{Name: "noise_clip", Type: spec.Float, Min: 0, Max: math.Inf(1), Doc: why},
		{Name: "bounds", Type: spec.FloatList, Min: math.Inf(-1), Max: math.Inf(1), Doc: why},
	}
}()
