package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// NumText formats a number as YAML reads it back: the shortest exact form, with a '.' or an
// exponent so that it stays a float ("1.0", "0.2", "1e-05"); ±inf as inf.
func NumText(v float64) string {
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

// FlowValue formats a parameter's default or example value in YAML flow style (what
// lossgen init writes, the spec reference shows and the spec tests parse).
func FlowValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return NumText(x)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = NumText(f)
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
	panic(fmt.Sprintf("spec: value %v of type %T", v, v))
}
