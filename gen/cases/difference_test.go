package cases

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Headlines: one line per output, over every case and part of it that differs (the cases
// once each, the worst relative difference, the values summed), in the order the outputs
// appear; differences of no one output after them, as they are.
func TestHeadlines(t *testing.T) {
	diffs := []Difference{
		{Case: "extreme", Output: "advantage", Values: 3, MaxRel: 0.5, Text: "d: case extreme: output advantage: samples differ"},
		{Case: "extreme", Output: "advantage", Values: 4, MaxRel: 59.3, Text: "d: case extreme: output advantage: tile sums differ"},
		{Case: "extreme", Output: "loss", Values: 1, MaxRel: 0.01, Text: "d: case extreme: output loss differs"},
		{Case: "flags", Output: "advantage", Values: 10, MaxRel: 2, Text: "d: case flags: output advantage: samples differ"},
		{Case: "random", Text: "d: case random is missing"},
	}
	require.Equal(t, []string{
		"d: output advantage: differs in 2 cases (extreme, flags): worst relative difference 59.3, 17 values out of tolerance",
		"d: output loss: differs in 1 case (extreme): worst relative difference 0.01, 1 value out of tolerance",
		"d: case random is missing",
	}, Headlines("d", diffs))
	require.Empty(t, Headlines("d", nil))
}
