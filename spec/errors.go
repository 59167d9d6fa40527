package spec

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a spec file: 1-based line and column, as an editor shows them.
type Pos struct {
	File string
	Line int
	Col  int
}

// String formats the position as FILE:LINE:COL, the form editors and `go vet` use.
func (p Pos) String() string {
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one diagnostic about a spec file. Its text is "FILE:LINE:COL: message".
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// ErrorList is every diagnostic found in one spec, sorted by position.
// Parse returns it (as an error) when the spec is unusable; nothing is generated then.
type ErrorList []*Error

// maxErrors caps the list so that a badly broken file does not drown the first, most useful, errors.
const maxErrors = 20

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i == maxErrors {
			fmt.Fprintf(&b, "\n(%d more errors)", len(l)-maxErrors)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// sortDedup orders the list by position then text and drops exact repeats.
func (l ErrorList) sortDedup() ErrorList {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		return a.Msg < b.Msg
	})
	out := l[:0]
	for i, e := range l {
		if i > 0 && e.Pos == l[i-1].Pos && e.Msg == l[i-1].Msg {
			continue
		}
		out = append(out, e)
	}
	return out
}

// allowed formats a set of allowed values for a message: "(allowed: a, b, c)".
func allowed(vals []string) string {
	v := append([]string(nil), vals...)
	sort.Strings(v)
	return "(allowed: " + strings.Join(v, ", ") + ")"
}

// allowedFor is allowed for a value got that is not among vals, led by the one allowed
// value a likely typo of it would be: `(did you mean "clip_epsilon"? allowed: …)`.
func allowedFor(got string, vals []string) string {
	if m := closest(got, vals); m != "" {
		return "(did you mean " + quote(m) + "? " + strings.TrimPrefix(allowed(vals), "(")
	}
	return allowed(vals)
}

// closest is the one value of vals within edit distance 2 of got (1 for a name of at most 4
// characters, 0 for at most 2: "T" is no typo of "N"), ignoring case, or "" when there is
// none or more than one at the least distance.
func closest(got string, vals []string) string {
	limit := 2
	switch {
	case len(got) <= 2:
		limit = 0
	case len(got) <= 4:
		limit = 1
	}
	got = strings.ToLower(got)
	best, bestD, n := "", limit+1, 0
	for _, v := range vals {
		switch d := editDistance(got, strings.ToLower(v)); {
		case d < bestD:
			best, bestD, n = v, d, 1
		case d == bestD:
			n++
		}
	}
	if n != 1 {
		return ""
	}
	return best
}

// foldMatch is the one value of vals that s names but for case, underscores and a "Loss"
// suffix (gspoloss, GSPOLoss, ClipPPO: gspo, gspo, clip_ppo), directly or through an alias
// (a class name); "" when none or several do. A user who wrote a TorchRL class lossgen
// lacks means its type, which an edit distance can miss for a nearer class (GRPOLoss).
func foldMatch(s string, vals []string, aliases []Alias) string {
	norm := func(x string) string {
		return strings.TrimSuffix(strings.ReplaceAll(strings.ToLower(x), "_", ""), "loss")
	}
	want, found := norm(s), map[string]bool{}
	for _, v := range vals {
		if norm(v) == want {
			found[v] = true
		}
	}
	for _, a := range aliases {
		if norm(a.Name) == want {
			found[a.For] = true
		}
	}
	if len(found) != 1 {
		return ""
	}
	for v := range found {
		return v
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
