// Package lower turns a validated spec into an IR graph. Every loss, estimator and transform
// is one registry entry in one file here (clip_ppo.go, gae.go, ...): its TorchRL class, its
// parameters with TorchRL's defaults and ranges, the keys it reads and writes, its checks
// and its lowering, which states its TorchRL math with ir.Builder ops. The spec parser reads
// each stage's YAML through the registry, and nothing below this package knows a stage by
// name, so adding a loss is adding a file here.
//
// Stages read and write keys as TorchRL's modules read and write a tensordict: lowering runs
// the transforms, then the estimator, then the loss, over an environment of IR nodes keyed
// by logical key (lower.go). A key no earlier stage wrote is a kernel input.
package lower

import (
	"fmt"
	"slices"
	"sort"

	"github.com/lossgen/lossgen/spec"
)

// Stage is one registry entry: the spec schema of a stage and its lowering.
type Stage struct {
	spec.StageDef
	// Lower builds the stage's IR: it reads keys from l, writes keys and declares outputs.
	Lower func(l *Lowerer, st *spec.Stage)
	// Summary, when set, returns sentences for the generated package doc about what this
	// configuration of the stage expects of its data (a PPO loss without an estimator in
	// the kernel reads the estimator's results as inputs).
	Summary func(s *spec.Spec, st *spec.Stage) []string
	// Bootstrap, when set on a loss, runs after the transforms and before the estimator: it
	// sets the keys the estimator bootstraps from (next_value, value) from the loss's own
	// inputs, as TorchRL's value_estimate runs the loss's (target) value network on "next"
	// (DQNLoss: the target net's chosen action value; SAC: min_k Q'_k − α·log π'; TD3 and
	// DDPG: the target Q, asking for the value target only, Lowerer.TargetOnly), or the
	// current policy's log_prob V-trace reads (the PPO family and A2C with a distribution).
	Bootstrap func(l *Lowerer, st *spec.Stage)
}

var (
	stages = map[spec.Kind]map[string]*Stage{}
	keys   = map[string]spec.KeyDef{}
)

// register adds a stage to the registry (each stage's file calls it from init). A key
// declared by several stages must be declared alike.
func register(s *Stage) {
	if stages[s.Kind] == nil {
		stages[s.Kind] = map[string]*Stage{}
	}
	if stages[s.Kind][s.Type] != nil {
		panic("lower: stage registered twice: " + s.Type)
	}
	for _, o := range stages[s.Kind] {
		if s.Class != "" && (o.Class == s.Class || o.Type == s.Class) {
			panic("lower: " + s.Type + "'s class " + s.Class + " names another stage")
		}
	}
	addKindArgs(&s.StageDef)
	checkSpellings(&s.StageDef)
	stages[s.Kind][s.Type] = s
	for _, k := range s.Keys {
		if old, ok := keys[k.Name]; ok && !sameKey(old, k) {
			panic(fmt.Sprintf("lower: %s declares key %s unlike another stage", s.Type, k.Name))
		}
		keys[k.Name] = k
	}
}

// checkSpellings panics unless every spelling of a stage's keys reads as one parameter: no
// name, alias, rejected or ignored argument twice; value aliases of declared values; DimIndex and
// LinspaceDim on the parameter types they apply to.
func checkSpellings(d *spec.StageDef) {
	names := map[string]bool{"type": true}
	add := func(n string) {
		if names[n] {
			panic("lower: " + d.Type + " declares " + n + " twice (parameter, alias, rejected or ignored argument)")
		}
		names[n] = true
	}
	for _, p := range d.Params {
		add(p.Name)
		for _, a := range p.Aliases {
			add(a.Name)
		}
		for _, a := range p.ValueAliases {
			if !slices.Contains(p.Enum, a.For) || slices.Contains(p.Enum, a.Name) {
				panic("lower: " + d.Type + "." + p.Name + ": value alias " + a.Name + " of " + a.For + ", which is no other value")
			}
		}
		for _, r := range p.RejectedValues {
			if slices.Contains(p.Enum, r.Name) || slices.ContainsFunc(p.ValueAliases, func(a spec.Alias) bool { return a.Name == r.Name }) {
				panic("lower: " + d.Type + "." + p.Name + ": rejected value " + r.Name + " is also taken")
			}
		}
		if p.DimSize && p.Type != spec.Int {
			panic("lower: " + d.Type + "." + p.Name + ": DimSize on a parameter that is no Int")
		}
		if p.DimIndex && p.Type != spec.DimName {
			panic("lower: " + d.Type + "." + p.Name + ": DimIndex on a parameter that is no DimName")
		}
		if l := d.Param(p.LinspaceDim); p.LinspaceDim != "" && (p.Type != spec.FloatList || l == nil || l.Type != spec.DimName) {
			panic("lower: " + d.Type + "." + p.Name + ": LinspaceDim on a parameter that is no FloatList, or naming no DimName parameter")
		}
	}
	for _, r := range d.Rejected {
		add(r.Name)
	}
	for _, p := range d.Ignored {
		add(p.Name)
	}
}

func sameKey(a, b spec.KeyDef) bool {
	return slices.Equal(a.Default, b.Default) && a.NextOf == b.NextOf && a.Kind == b.Kind && a.Differentiable == b.Differentiable && a.Shape == b.Shape
}

// registry is the spec.Registry of the registered stages.
type registry struct{}

// Registry returns the registry of every stage lossgen lowers, for spec.Parse.
func Registry() spec.Registry { return registry{} }

func (registry) Stage(kind spec.Kind, typ string) *spec.StageDef {
	if s := stages[kind][typ]; s != nil {
		return &s.StageDef
	}
	return nil
}

func (registry) Types(kind spec.Kind) []string {
	var out []string
	for t := range stages[kind] {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

func (registry) Key(name string) (spec.KeyDef, bool) {
	k, ok := keys[name]
	return k, ok
}

func (registry) Keys() []string {
	var out []string
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Summary collects the stages' Summary sentences for s, in stage order.
func Summary(s *spec.Spec) []string {
	var out []string
	for _, st := range s.Stages() {
		if f := stageOf(st).Summary; f != nil {
			out = append(out, f(s, st)...)
		}
	}
	return out
}

// stageOf returns the registry entry of a configured stage.
func stageOf(st *spec.Stage) *Stage { return stages[st.Def.Kind][st.Type] }
