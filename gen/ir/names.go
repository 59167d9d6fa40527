package ir

import (
	"fmt"
	"go/token"
	"strings"
	"unicode"
)

// initialisms are written in capitals in Go names, as Go's style asks (kl_approx → KLApprox).
var initialisms = map[string]string{"kl": "KL", "ess": "ESS", "id": "ID", "gae": "GAE", "td": "TD"}

// CamelCase joins the words of a data name, note or output name ("next.reward", "min_q",
// "grad.log_prob") in Go's mixed caps: NextReward, MinQ, GradLogProb when exported, else
// nextReward, minQ, gradLogProb. Initialisms stay in one case (KLApprox, klApprox). It
// returns "" when the result is not a Go identifier.
func CamelCase(name string, exported bool) string {
	var b strings.Builder
	parts := strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == '_' || r == '-' })
	for i, part := range parts {
		lower := i == 0 && !exported
		if up, ok := initialisms[strings.ToLower(part)]; ok {
			if lower {
				up = strings.ToLower(up)
			}
			b.WriteString(up)
			continue
		}
		r := []rune(part)
		if lower {
			// A leading all-caps word (ESS) is lowered whole, a mixed one at its first rune.
			if strings.ToUpper(part) == part {
				r = []rune(strings.ToLower(part))
			} else {
				r[0] = unicode.ToLower(r[0])
			}
		} else {
			r[0] = unicode.ToUpper(r[0])
		}
		b.WriteString(string(r))
	}
	out := b.String()
	if !token.IsIdentifier(out) {
		return ""
	}
	return out
}

// constWords name the scalar constants that read better as a word than as a number.
var constWords = map[float64]string{0: "zero", 1: "one", 2: "two", 0.5: "half", -1: "minusOne"}

// Identifiers names every node of g for generated code: unexported Go-style identifiers,
// unique within the graph, none of them one that taken reports (the code's own names:
// parameters, loop variables, helpers, keywords). A node is named after, in this order, the
// output it is (advantage; grad.log_prob → gradLogProb), its note (ratio, minQ), the input
// it is (nextReward), its value for a scalar constant that has a word (one, half); else it
// is v<ID>, or c<ID> for a constant. A later reduction whose name is already used gets its
// op in front (meanEntropy), other nodes a number (gae2). The result is indexed by node ID.
func Identifiers(g *Graph, taken func(string) bool) map[int]string {
	out := make(map[int]string, len(g.Nodes))
	used := map[string]bool{}
	// The fallback names first, so that a note like "v3" cannot take another node's name.
	for _, n := range g.Nodes {
		used[fallbackName(n)] = true
	}
	outName := map[int]string{}
	for _, o := range g.Outputs {
		if _, dup := outName[o.Node.ID]; !dup {
			outName[o.Node.ID] = o.Name
		}
	}
	for _, n := range g.Nodes {
		base := ""
		for _, cand := range []string{outName[n.ID], n.Note, inputName(n), constWord(n)} {
			if c := CamelCase(cand, false); c != "" && !isKeyword(c) {
				base = c
				break
			}
		}
		if base == "" {
			out[n.ID] = fallbackName(n)
			continue
		}
		name := base
		if (used[name] || taken(name)) && n.Op.Class() == Reduce {
			// A reduction named after what it reduces says so: the mean of input entropy.
			if alt := n.Op.String() + strings.ToUpper(base[:1]) + base[1:]; CamelCase(alt, false) == alt {
				name = alt
			}
		}
		for i := 2; used[name] || taken(name); i++ {
			name = fmt.Sprintf("%s%d", base, i)
		}
		used[name] = true
		out[n.ID] = name
	}
	return out
}

func fallbackName(n *Node) string {
	if n.Op == OpConst {
		return fmt.Sprintf("c%d", n.ID)
	}
	return fmt.Sprintf("v%d", n.ID)
}

func inputName(n *Node) string {
	if n.Op == OpInput {
		return n.Input.Name
	}
	return ""
}

func constWord(n *Node) string {
	if n.Op == OpConst && len(n.Shape) == 0 {
		return constWords[n.Value[0]]
	}
	return ""
}

// isKeyword reports Go's keywords and predeclared identifiers, which generated code never
// shadows (a note "max" or "len").
func isKeyword(s string) bool {
	if token.IsKeyword(s) {
		return true
	}
	switch s {
	case "bool", "byte", "complex64", "complex128", "error", "float32", "float64", "int", "int8",
		"int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64",
		"uintptr", "any", "comparable", "true", "false", "iota", "nil", "append", "cap", "clear",
		"close", "complex", "copy", "delete", "imag", "len", "make", "max", "min", "new", "panic",
		"print", "println", "real", "recover":
		return true
	}
	return false
}
