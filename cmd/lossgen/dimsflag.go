package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lossgen/lossgen/spec"
)

// parseDimSizes reads one dim setting, NAME=SIZE pairs separated by commas (N=16,T=256), in
// order: init's -dims and each of bench's -sizes settings. A size must be positive and a
// dim may be given once.
func parseDimSizes(s string) ([]spec.Dim, error) {
	var out []spec.Dim
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name, size, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(size)
		if !ok || name == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not NAME=SIZE with SIZE > 0 (e.g. N=16,T=256)", part)
		}
		if seen[name] {
			return nil, fmt.Errorf("dim %s given twice in %q", name, s)
		}
		seen[name] = true
		out = append(out, spec.Dim{Name: name, Size: n})
	}
	return out, nil
}
