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
