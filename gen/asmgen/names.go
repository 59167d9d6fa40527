package asmgen

import (
	"fmt"
	"go/token"
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
)

// paramName names an assembly function's argument after the Go expression its wrapper
// passes: &in.NextReward[0] → nextReward, &out.Advantage[0] → advantage, &g.LogProb[0] →
// gradLogProb, &s.s0[0] → s0, &st.buf[0] → state, lo → lo. A name an earlier argument
// has gets the buffer's group in front (outEntropy after entropy), then a number. The
// names appear in the stub's signature and as the symbols of the assembly's FP operands.
func paramName(goExpr string, taken map[string]bool) string {
	x := strings.TrimSuffix(strings.TrimPrefix(goExpr, "&"), "[0]")
	group, field, _ := strings.Cut(x, ".")
	name := ""
	switch group {
	case "in", "out", "s":
		name = ir.CamelCase(field, false)
	case "g":
		name = "grad" + field
	case "st":
		name = "state"
	default:
		name = ir.CamelCase(x, false)
	}
	if name == "" || token.IsKeyword(name) {
		name = "arg"
	}
	if taken[name] && field != "" {
		name = group + field
	}
	for base, i := name, 2; taken[name]; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	taken[name] = true
	return name
}
