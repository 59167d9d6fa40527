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
		return numText(v)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// numText formats a number as YAML reads it back: the shortest exact form, with a '.' or an
// exponent so that it stays a float ("1.0", "0.2", "1e-05"); ±inf as inf.
func numText(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// valueText formats a default or example value in YAML flow style.
func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return numText(x)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = numText(f)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []int:
		parts := make([]string, len(x))
		for i, n := range x {
			parts[i] = strconv.Itoa(n)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	}
	panic(fmt.Sprintf("specdoc: value %v of type %T", v, v))
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
