package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// TorchRL names a module's keys with <key>_key constructor arguments (GAE's advantage_key,
// PPOLoss's value_target_key, DQNLoss's priority_key, QValueModule's action_mask_key), most
// deprecated in favour of set_keys. A stage's mapping takes one for each key the stage reads
// or writes, and it reads as that key's entry of the keys: mapping, which serves every stage
// at once: a note names the keys: form. Two spellings that map one key differently are an
// error.

// keyArg is one <key>_key argument written in a stage.
type keyArg struct {
	path string   // "loss.advantage_key"
	pos  Pos      // its value
	key  []string // the data key
}

// KeyArguments lists the <key>_key arguments the stage's mapping takes, by key: one for
// each of its keys whose <key>_key no parameter, alias, ignored or rejected argument of the
// stage names (kl_reward's log_prob_key is a parameter).
func (d *StageDef) KeyArguments() map[string]string {
	taken := map[string]bool{}
	for _, p := range d.Params {
		taken[p.Name] = true
		for _, a := range p.Aliases {
			taken[a.Name] = true
		}
	}
	for _, p := range d.Ignored {
		taken[p.Name] = true
	}
	for _, r := range d.Rejected {
		taken[r.Name] = true
	}
	out := map[string]string{}
	for _, k := range d.Keys {
		if !taken[k.Name+"_key"] {
			out[k.Name] = k.Name + "_key"
		}
	}
	return out
}

// keyArgFields are the fields of a stage's <key>_key arguments (StageDef.KeyArguments).
func (d *decoder) keyArgFields(def *StageDef) []field {
	var out []field
	for _, name := range slices.Sorted(maps.Keys(def.KeyArguments())) {
		out = append(out, field{name: name + "_key", hidden: true, decode: func(kp string, v *yaml.Node) {
			delete(d.pos, kp) // the Spec is the one written with keys:
			if isNull(v) {    // TorchRL's None: the key keeps its mapping
				d.notes = append(d.notes, &Error{Pos: d.at(v), Msg: "note: " + kp + ": null is TorchRL's default: keys." + name + " keeps its mapping"})
				return
			}
			if key, ok := d.dataKey(kp, v); ok {
				d.keyArgs[name] = append(d.keyArgs[name], keyArg{path: kp, pos: d.at(v), key: key})
			}
		}})
	}
	return out
}

// resolveKeys sets Spec.Keys from the keys: mapping and the stages' <key>_key arguments,
// each of which must agree with the keys: entry and the other arguments for its key.
func (d *decoder) resolveKeys(s *Spec) {
	for _, name := range slices.Sorted(maps.Keys(d.keyArgs)) {
		args := d.keyArgs[name]
		explicit, written := d.keysWritten[name]
		for i, a := range args {
			switch {
			case written && !slices.Equal(a.key, explicit):
				d.errs = append(d.errs, &Error{Pos: a.pos, Msg: fmt.Sprintf("%s: maps %s to %s, but keys.%s (line %d) maps it to %s: one data key serves every stage; write it once, under keys:",
					a.path, name, flowKey(a.key), name, d.pos["keys."+name].Line, flowKey(explicit))})
			case i > 0 && !slices.Equal(a.key, args[0].key):
				d.errs = append(d.errs, &Error{Pos: a.pos, Msg: fmt.Sprintf("%s: maps %s to %s, but %s (line %d) maps it to %s: one data key serves every stage; write it once, as keys: {%s: …}",
					a.path, name, flowKey(a.key), args[0].path, args[0].pos.Line, flowKey(args[0].key), name)})
			default:
				d.notes = append(d.notes, &Error{Pos: a.pos, Msg: fmt.Sprintf("note: %s: TorchRL's argument for the key %s; read as keys: {%s: %s}, the form to write (one mapping for every stage)",
					a.path, name, name, flowKey(a.key))})
			}
		}
		if !written {
			d.keysWritten[name] = args[0].key
			d.pos["keys."+name] = args[0].pos
		}
	}
	s.Keys = resolveKeys(d.reg, d.keysWritten)
}

// flowKey writes a data key as the keys: mapping takes it: a name, a nested key in YAML's
// flow form, or null (absent from the data).
func flowKey(key []string) string {
	if key == nil {
		return "null"
	}
	if len(key) == 1 {
		return key[0]
	}
	return "[" + strings.Join(key, ", ") + "]"
}

// keyArgument reports a TorchRL constructor's <key>_key argument written in a stage that
// neither reads nor writes that key (keyArgFields takes the others), naming the keys:
// mapping that holds it for the stages that do. It reports whether k was one.
func (d *decoder) keyArgument(kp string, k, v *yaml.Node) bool {
	name, ok := strings.CutSuffix(k.Value, "_key")
	if !ok || d.reg == nil {
		return false
	}
	if _, ok := d.reg.Key(name); !ok {
		return false
	}
	val := "<data key>"
	if v.Kind == yaml.ScalarNode && v.Value != "" {
		val = v.Value
	}
	stage, _, _ := strings.Cut(kp, ".")
	d.errf(k, "%s: %s reads and writes no key %s; to map it for the stages that do, write it at the top level as keys: {%s: %s}", kp, stage, name, name, val)
	return true
}
