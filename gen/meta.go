package gen

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// valueString formats a parameter's value as the spec writes it.
func valueString(v any) string {
	switch x := v.(type) {
	case float64:
		return num(x)
	case []float64:
		parts := make([]string, len(x))
		for i, y := range x {
			parts[i] = num(y)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]float64:
		var keys []string
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + num(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// summary describes the configuration in TorchRL's words, for the package doc: every stage
// with every parameter, and the hyper-parameters exactly as the kernel uses them.
func summary(s *spec.Spec, hypers []lower.Hyper) []string {
	var out []string
	for _, st := range s.Stages() {
		var args []string
		for _, p := range st.Def.Params {
			switch v := st.Get(p.Name); {
			case v == nil, p.Applies != nil && !p.Applies(st): // low, high without tanh_normal
			case p.Default == nil && p.Null != nil && reflect.DeepEqual(v, p.Null): // TorchRL's None, as a null reads
				args = append(args, p.Name+"=None")
			default:
				args = append(args, p.Name+"="+valueString(v))
			}
		}
		kind := strings.ToUpper(st.Def.Kind.String()[:1]) + st.Def.Kind.String()[1:]
		out = append(out, fmt.Sprintf("%s: TorchRL v0.11.0 %s (%s) with %s.", kind, st.Def.Class, st.Def.Source, strings.Join(args, ", ")))
	}
	out = append(out, lower.Summary(s)...)
	if len(hypers) > 0 {
		out = append(out, "", fmt.Sprintf("Hyper-parameters as the kernel uses them (param_dtype %s: SEMANTICS.md §11.14), exactly:", s.ParamDType), "")
		for _, h := range hypers {
			v := num(h.Value)
			if s.DType == spec.Float32 {
				v = strconv.FormatFloat(float64(float32(h.Value)), 'g', -1, 32)
			}
			out = append(out, fmt.Sprintf("  - %s = %s: %s", h.Name, v, h.Doc))
		}
	}
	for _, w := range s.Warnings {
		out = append(out, "", "Note: "+w.Msg+".")
	}
	return out
}

// params lists every stage's scalar parameters as documented Go constants, named after
// TorchRL's arguments (clip_epsilon → ClipEpsilon); a name two stages share is qualified by
// the stage's type.
func params(s *spec.Spec) []gogen.Param {
	var ps []gogen.Param
	seen := map[string]bool{}
	for _, st := range s.Stages() {
		for _, p := range st.Def.Params {
			if p.Applies != nil && !p.Applies(st) {
				continue // no constant the package's user could want (Low without tanh_normal)
			}
			var lit string
			switch v := st.Get(p.Name).(type) {
			case float64:
				lit = num(v)
			case int:
				lit = strconv.Itoa(v)
			case bool:
				lit = strconv.FormatBool(v)
			case string:
				if p.Type == spec.Float {
					continue // a number written null: TorchRL's None, no value to name
				}
				lit = strconv.Quote(v)
			default:
				continue
			}
			name := spec.ConstName(p.Name)
			if seen[name] {
				name = spec.ConstName(st.Type) + name
			}
			seen[name] = true
			doc := fmt.Sprintf("%s is %s's %s", name, st.Def.Class, p.Name)
			if p.Doc != "" {
				doc += ": " + p.Doc
			}
			ps = append(ps, gogen.Param{Name: name, Value: lit, Doc: doc + "."})
		}
	}
	return ps
}
