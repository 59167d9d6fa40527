package gogen

import (
	"fmt"
	"go/token"
	"strings"
	"unicode"

	"github.com/lossgen/lossgen/gen/ir"
)

// initialisms are written in capitals in Go names, as Go's style asks (kl_approx → KLApprox).
var initialisms = map[string]string{"kl": "KL", "ess": "ESS", "id": "ID", "gae": "GAE", "td": "TD"}

// FieldName turns a data name ("next.reward", "loss_objective", "ESS") into an exported Go
// identifier (NextReward, LossObjective, ESS).
func FieldName(data string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(data, func(r rune) bool { return r == '.' || r == '_' || r == '-' }) {
		if up, ok := initialisms[strings.ToLower(part)]; ok {
			b.WriteString(up)
			continue
		}
		r := []rune(part)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	name := b.String()
	if name == "" || !token.IsIdentifier(name) {
		return "X" + fmt.Sprintf("%x", data)
	}
	return name
}

// InputField is the Inputs field that holds input in: FieldName of its data name, or for
// kernel state (ir.Input.State) an unexported one-element slice that Forward fills from
// Inputs.State (stateBeta).
func InputField(in *ir.Input) string {
	if in.State {
		return "state" + FieldName(in.Name)
	}
	return FieldName(in.Name)
}

// fieldNames maps each data name to its Go field name and fails when two collide.
func fieldNames(what string, names []string) (map[string]string, error) {
	out := map[string]string{}
	by := map[string]string{}
	for _, n := range names {
		f := FieldName(n)
		if other, dup := by[f]; dup {
			return nil, fmt.Errorf("%s %q and %q both become the Go field %s; rename one under keys", what, other, n, f)
		}
		by[f] = n
		out[n] = f
	}
	return out, nil
}
