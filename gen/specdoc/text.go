package specdoc

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lossgen/lossgen/spec"
)

// typeText names a parameter type's YAML form.
func typeText(t spec.ParamType) string {
	switch t {
	case spec.Float:
		return "number"
	case spec.FloatOrBool:
		return "number or bool"
	case spec.FloatOrAuto:
		return "number or auto"
	case spec.FloatOrPair:
		return "number or [low, high]"
	case spec.FloatOrMap:
		return "number or {head: number}"
	case spec.FloatList:
		return "list of numbers"
	case spec.Int:
		return "integer"
	case spec.IntList:
		return "list of integers"
	case spec.Bool:
		return "bool"
	case spec.Enum:
		return "string"
	case spec.Names:
		return "list of names"
	case spec.DimName:
		return "dim name"
	case spec.Text:
		return "string"
	}
	panic(fmt.Sprintf("specdoc: unknown parameter type %d", t))
}

// numeric reports whether a parameter's numbers are checked against its range.
func numeric(p *spec.ParamDef) bool {
	switch p.Type {
	case spec.Float, spec.FloatOrBool, spec.FloatOrAuto, spec.FloatOrPair, spec.FloatOrMap, spec.FloatList, spec.Int:
		return true
	}
	return false
}

// rangeText is a numeric parameter's range as the parser states it ("(0, 1)", "[1, inf)"),
// or "" when it has none or is unbounded.
func rangeText(p *spec.ParamDef) string {
	if !numeric(p) || math.IsInf(p.Min, -1) && math.IsInf(p.Max, 1) {
		return ""
	}
	lb, rb := "[", "]"
	if p.MinOpen || math.IsInf(p.Min, -1) {
		lb = "("
	}
	if p.MaxOpen || math.IsInf(p.Max, 1) {
		rb = ")"
	}
	return lb + boundText(p.Min) + ", " + boundText(p.Max) + rb
}

// boundText formats a range bound as the parser's messages do: 0, 1, inf.
func boundText(v float64) string {
	if math.IsInf(v, 0) {
		return spec.NumText(v)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// sentence makes a registry doc (a lower-case phrase) a sentence: capitalised where it
// starts with a plain word (not a name such as tanh_normal or a symbol such as ε), with a
// full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	if w, _, _ := strings.Cut(s, " "); strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
