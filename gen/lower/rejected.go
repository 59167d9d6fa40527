package lower

import (
	"slices"

	"github.com/lossgen/lossgen/spec"
)

// commonRejected are TorchRL constructor arguments that many stages' classes take and no
// lossgen stage does, by the kinds of stage whose classes take them: a spec that writes one
// gets the reason and what to write, not only "unknown key". register adds them to a stage
// that neither takes nor rejects the name itself.
var commonRejected = map[spec.Kind][]spec.Rejected{
	spec.Loss: {
		{Name: "gamma", Why: "not taken: γ is the value estimator's in TorchRL (make_value_estimator(gamma=...)); write it in the estimator section, e.g. estimator: {type: td0, gamma: 0.99}"},
		{Name: "actor_network", Why: "not taken: the kernel takes the networks' outputs, not the networks: log_prob (or distribution: categorical, normal, ... with logits or loc/scale and action_dim), state_value, Q-values; remove actor_network"},
		{Name: "critic_network", Why: "not taken: the kernel takes the critic's outputs (state_value, next.state_value) as inputs; remove critic_network"},
		{Name: "value_network", Why: "not taken: the kernel takes the value network's outputs as inputs; remove value_network"},
		{Name: "qvalue_network", Why: "not taken: the kernel takes the Q-networks' outputs as inputs; remove qvalue_network"},
		{Name: "functional", Why: "not taken: the networks run outside the kernel (functional or not, their outputs are its inputs); remove functional"},
		{Name: "separate_losses", Why: "not taken: every loss term is its own output and ForwardBackward's gradients are those of their sum, whatever the parameters are shared; remove separate_losses"},
		{Name: "device", Why: "not taken: the generated package runs on the CPU (Go, AVX2) and carries its PTX for a GPU; remove device"},
	},
	spec.Estimator: {
		{Name: "value_network", Why: "not taken: the kernel takes the value network's outputs (state_value, next.state_value) as inputs; remove value_network"},
		{Name: "differentiable", Why: "not taken: the estimator's results carry no gradient, as TorchRL's default differentiable=False; remove differentiable"},
		{Name: "skip_existing", Why: "not taken: the kernel always computes the estimate; for an advantage stored with the data, write a spec with the loss alone (advantage and value_target are then inputs); remove skip_existing"},
		{Name: "device", Why: "not taken: the generated package runs on the CPU (Go, AVX2) and carries its PTX for a GPU; remove device"},
	},
	spec.Transform: {
		{Name: "in_keys", Why: "not taken: TorchRL's in_keys are lossgen's keys: mapping, for every stage at once; map the keys this transform reads under keys: at the top level"},
		{Name: "out_keys", Why: "not taken: TorchRL's out_keys are lossgen's keys: mapping, for every stage at once; map the keys this transform writes under keys: at the top level"},
	},
}

// addCommonRejected adds the commonRejected of d's kind that d neither takes nor rejects.
func addCommonRejected(d *spec.StageDef) {
	for _, r := range commonRejected[d.Kind] {
		taken := slices.ContainsFunc(d.Params, func(p spec.ParamDef) bool {
			return p.Name == r.Name || slices.ContainsFunc(p.Aliases, func(a spec.Alias) bool { return a.Name == r.Name })
		})
		taken = taken || slices.ContainsFunc(d.Rejected, func(o spec.Rejected) bool { return o.Name == r.Name })
		taken = taken || slices.ContainsFunc(d.Ignored, func(p spec.ParamDef) bool { return p.Name == r.Name })
		if !taken {
			d.Rejected = append(d.Rejected, r)
		}
	}
}
