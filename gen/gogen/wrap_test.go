package gogen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWrapComments(t *testing.T) {
	long := strings.Repeat("word ", 30) // 150 columns
	src := "package p\n\n// " + long + "\ntype T struct {\n\t// - " + long + "\n\tX int // " + long + "\n}\n\n//go:generate " + long + "\nvar s = `\n// " + long + "\n`\n"
	got := string(WrapComments([]byte(src)))
	lines := strings.Split(got, "\n")
	require.Equal(t, "// "+strings.TrimSpace(strings.Repeat("word ", 19)), lines[2], "a paragraph fills the line to 100 columns")
	require.Equal(t, "// "+strings.TrimSpace(strings.Repeat("word ", 11)), lines[3])
	require.Equal(t, "\t// - "+strings.TrimSpace(strings.Repeat("word ", 18)), lines[5], "a tab counts 4 columns")
	require.Equal(t, "\t//   "+strings.TrimSpace(strings.Repeat("word ", 12)), lines[6], "a list item continues under its text")
	for _, keep := range []string{"\tX int // " + long, "//go:generate " + long, "`\n// " + long + "\n`"} {
		require.Contains(t, got, keep, "trailing comments, directives and strings stay")
	}
}
