package cases

import (
	"fmt"
	"slices"
	"strings"
)

// Difference is one way a golden case directory differs from the interpreter (Check).
type Difference struct {
	Case   string
	Output string  // the output (or gradient) that differs; "" for a difference of the case as a whole
	Values int     // values out of tolerance: elements of a whole output, or samples and statistics of a summary
	MaxRel float64 // their largest relative difference
	Text   string  // the line that names it in full: "DIR: case C: output O: ..."
}

func (d Difference) String() string { return d.Text }

// texts makes lines that are differences of no one output into Differences.
func texts(lines []string) []Difference {
	out := make([]Difference, len(lines))
	for i, l := range lines {
		out[i] = Difference{Text: l}
	}
	return out
}

// Headlines condenses diffs, Check's differences for golden directory dir, into one line per
// output (in the order the outputs first appear in diffs): the cases it differs in, its
// worst relative difference and its values out of tolerance in all; then one line per
// difference of no one output (a missing case, a changed recipe, an old format).
func Headlines(dir string, diffs []Difference) []string {
	type agg struct {
		cases  []string
		values int
		maxRel float64
	}
	var order []string
	by := map[string]*agg{}
	var other []string
	for _, d := range diffs {
		if d.Output == "" {
			other = append(other, d.Text)
			continue
		}
		a := by[d.Output]
		if a == nil {
			a = &agg{}
			by[d.Output] = a
			order = append(order, d.Output)
		}
		if !slices.Contains(a.cases, d.Case) {
			a.cases = append(a.cases, d.Case)
		}
		a.values += d.Values
		a.maxRel = max(a.maxRel, d.MaxRel)
	}
	var out []string
	for _, name := range order {
		a := by[name]
		out = append(out, fmt.Sprintf("%s: output %s: differs in %d %s (%s): worst relative difference %.3g, %d %s out of tolerance",
			dir, name, len(a.cases), plural(len(a.cases), "case"), strings.Join(a.cases, ", "), a.maxRel, a.values, plural(a.values, "value")))
	}
	return append(out, other...)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
