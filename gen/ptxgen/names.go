package ptxgen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
)

// paramIdents names a kernel's parameters after the launch-table buffers they point at:
// in/next.reward → nextReward, out/advantage → advantage, grad/log_prob → gradLogProb,
// scratch/s0 → s0, and a pass's partial sums scratch/pass0.v47.s → lossObjectiveS, with the
// node named as names name it. A name an earlier parameter has gets the buffer's group in
// front (outEntropy after entropy), then a number. Launches pass arguments by position:
// the names are for the reader.
func paramIdents(bufs []string, names map[int]string) []string {
	out := make([]string, len(bufs))
	used := map[string]bool{}
	for i, buf := range bufs {
		group, rest, _ := strings.Cut(buf, "/")
		var words []string
		for j, part := range strings.Split(rest, ".") {
			if j == 0 && group == "scratch" && strings.HasPrefix(part, "pass") && strings.Contains(rest, ".") {
				continue // the pass is the kernel's
			}
			if id, err := strconv.Atoi(strings.TrimPrefix(part, "v")); err == nil && strings.HasPrefix(part, "v") && names[id] != "" {
				part = names[id]
			}
			words = append(words, part)
		}
		if group == "grad" {
			words = append([]string{"grad"}, words...)
		}
		name := ir.CamelCase(strings.Join(words, "."), false)
		if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r > 0x7f }) {
			name = fmt.Sprintf("param%d", i) // PTX identifiers are ASCII
		}
		if used[name] {
			name = ir.CamelCase(group+"."+name, false)
		}
		for base, n := name, 2; used[name]; n++ {
			name = fmt.Sprintf("%s%d", base, n)
		}
		used[name] = true
		out[i] = name
	}
	return out
}
