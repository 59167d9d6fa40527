package lower

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/lossgen/lossgen/spec"
)

// Example returns a minimal complete spec that uses the stage of the given kind and type, or
// "" for an unknown stage: dims {N: 4, T: 3} with batch [N, T] and the stage's Example dims,
// and the stage as a flow mapping with its Example parameters, with set (name, value pairs
// in YAML) overriding or adding parameters. Tests parse every stage from it, so a new stage
// brings its own test input: the same StageDef.Example that lossgen init's starter writes.
func Example(kind spec.Kind, typ string, set ...string) string {
	s := stages[kind][typ]
	if s == nil {
		return ""
	}
	ex := s.Example
	if ex == nil {
		ex = &spec.Example{}
	}
	var dims []string
	for _, d := range ex.Before {
		dims = append(dims, fmt.Sprintf("%s: %d", d.Name, d.Size))
	}
	dims = append(dims, "N: 4", "T: 3")
	for _, d := range ex.After {
		dims = append(dims, fmt.Sprintf("%s: %d", d.Name, d.Size))
	}
	params := map[string]string{}
	for name, v := range ex.Params {
		params[name] = spec.FlowValue(v)
	}
	for name, dim := range ex.Sizes {
		for _, d := range append(append([]spec.Dim(nil), ex.Before...), ex.After...) {
			if d.Name == dim {
				params[name] = strconv.Itoa(d.Size)
			}
		}
	}
	for i := 0; i+1 < len(set); i += 2 {
		params[set[i]] = set[i+1]
	}
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	sort.Strings(names)
	stage := "{type: " + typ
	for _, name := range names {
		stage += ", " + name + ": " + params[name]
	}
	stage += "}"
	section := map[spec.Kind]string{spec.Transform: "transforms", spec.Estimator: "estimator", spec.Loss: "loss"}[kind]
	if kind == spec.Transform {
		stage = "[" + stage + "]"
	}
	return "package: p\ndims: {" + strings.Join(dims, ", ") + "}\nbatch: [N, T]\n" + section + ": " + stage + "\n"
}
