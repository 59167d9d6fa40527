package lower

import (
	"slices"
	"strings"

	"github.com/lossgen/lossgen/spec"
)

// TorchRL constructor arguments that a kind of stage's classes share, declared once for the
// kind (docs/SEMANTICS.md §11.21): those that change nothing the kernel computes are
// accepted with a note saying why (StageDef.Ignored); those that would, and that lossgen
// does not take, are errors that say what to write (StageDef.Rejected). register adds them
// to every stage of the kind whose class has them, unless the stage declares the name itself.

// kindArgs are one kind's shared arguments, for the stages whose TorchRL Source has.
type kindArgs struct {
	has      func(d *spec.StageDef) bool // whether the stage's class takes these arguments
	ignored  []spec.ParamDef
	rejected []spec.Rejected
}

// byKind are the shared arguments of TorchRL's losses (LossModule subclasses,
// torchrl/objectives), value estimators (ValueEstimatorBase, advantages.py) and transforms.
var byKind = map[spec.Kind]kindArgs{
	spec.Loss: {
		has: func(d *spec.StageDef) bool { return strings.HasPrefix(d.Source, "torchrl/objectives/") },
		ignored: []spec.ParamDef{
			{Name: "functional", Type: spec.Bool, Doc: "TorchRL's functionalisation of the networks, which run outside the kernel: their outputs are its inputs, functional or not"},
			{Name: "separate_losses", Type: spec.Bool, Doc: "in TorchRL it keeps one loss term's gradient out of the parameters the networks share, a path between parameters outside the kernel: " +
				"each loss term is its own output here and the gradients with respect to the networks' outputs are the same either way; stop the critic's gradient at the shared parameters when you backpropagate"},
			ignoredDevice,
		},
		rejected: []spec.Rejected{
			rejectGamma,
			{Name: "actor_network", Why: "not taken: the kernel takes the actor's outputs as inputs, not the network: keys log_prob, or with distribution: categorical, normal, … the logits or loc and scale; remove actor_network"},
			{Name: "critic_network", Why: "not taken: the kernel takes the critic's outputs as inputs, not the network: keys value (state_value) and, with an estimator, next_value (next.state_value); remove critic_network"},
			{Name: "value_network", Why: "not taken: the kernel takes the value network's outputs as inputs, not the network: keys value (state_value) and next_value (next.state_value); remove value_network"},
			{Name: "qvalue_network", Why: "not taken: the kernel takes the Q-networks' outputs as inputs, not the networks: keys state_action_value, next_state_action_value (or action_value for discrete actions); remove qvalue_network"},
		},
	},
	spec.Estimator: {
		has: func(d *spec.StageDef) bool { return d.Source == valueSource },
		ignored: []spec.ParamDef{
			{Name: "differentiable", Type: spec.Bool, Doc: "whether TorchRL's estimate carries a gradient to the value network; the kernel's estimate carries none, " +
				"and TorchRL's losses run their estimator with detached or target parameters, so no loss or gradient changes"},
			{Name: "skip_existing", Type: spec.Bool, Null: false, Doc: "whether TorchRL's value network skips state values already in the data; the value network runs outside the kernel, which takes the state values as inputs"},
			{Name: "shifted", Type: spec.Bool, Doc: "how TorchRL calls the value network for V(s) and V(s') (one call on interleaved observations, or two); the kernel takes both as inputs (value, next_value)"},
			{Name: "deactivate_vmap", Type: spec.Bool, Doc: "how TorchRL batches its value network's calls (vmap or a loop); the value network runs outside the kernel"},
			ignoredDevice,
		},
		rejected: []spec.Rejected{
			{Name: "value_network", Why: "not taken: the kernel takes the value network's outputs as inputs, not the network: keys value (state_value) and next_value (next.state_value); remove value_network"},
		},
	},
	spec.Transform: {
		has: func(*spec.StageDef) bool { return true },
		rejected: []spec.Rejected{
			{Name: "in_keys", Why: "not taken: TorchRL's in_keys are lossgen's keys: mapping, for every stage at once; map the keys this transform reads under keys: at the top level"},
			{Name: "out_keys", Why: "not taken: TorchRL's out_keys are lossgen's keys: mapping, for every stage at once; map the keys this transform writes under keys: at the top level"},
		},
	},
}

// valueSource is the file of TorchRL's value estimators (ValueEstimatorBase and its classes).
const valueSource = "torchrl/objectives/value/advantages.py"

// ignoredDevice is the device argument of TorchRL's losses, estimators and KLRewardTransform.
var ignoredDevice = spec.ParamDef{Name: "device", Type: spec.Text, Null: "",
	Doc: "where TorchRL keeps the module's buffers; the generated package computes the same values on the CPU (Go, AVX2) and, with its PTX kernels, on a GPU"}

// rejectGamma is gamma on a loss: TorchRL's losses raise TypeError for it (γ is the value
// estimator's, utils.py _GAMMA_LMBDA_DEPREC_ERROR). Every TorchRL loss rejects it through
// byKind; GRPOLoss, which accepts and never reads it, declares its own.
var rejectGamma = spec.Rejected{Name: "gamma", Why: "not taken: TorchRL's losses raise TypeError for gamma, which is the value estimator's (loss.make_value_estimator(..., gamma=...)); " +
	"write it in the estimator section, e.g. estimator: {type: td0, gamma: 0.99}"}

// addKindArgs adds the byKind arguments of d's kind that d's class takes and d does not
// declare itself; and, for a TorchRL loss, TorchRL's None as reduction's "mean" (every
// LossModule reads reduction=None as "mean").
func addKindArgs(d *spec.StageDef) {
	k := byKind[d.Kind]
	if k.has == nil || !k.has(d) {
		return
	}
	declared := func(name string) bool {
		return slices.ContainsFunc(d.Params, func(p spec.ParamDef) bool {
			return p.Name == name || slices.ContainsFunc(p.Aliases, func(a spec.Alias) bool { return a.Name == name })
		}) || slices.ContainsFunc(d.Rejected, func(o spec.Rejected) bool { return o.Name == name }) ||
			slices.ContainsFunc(d.Ignored, func(p spec.ParamDef) bool { return p.Name == name })
	}
	for _, p := range k.ignored {
		if !declared(p.Name) {
			d.Ignored = append(d.Ignored, p)
		}
	}
	for _, r := range k.rejected {
		if !declared(r.Name) {
			d.Rejected = append(d.Rejected, r)
		}
	}
	if p := d.Param("reduction"); d.Kind == spec.Loss && p != nil && p.Null == nil {
		p.Null = p.Default
	}
}
