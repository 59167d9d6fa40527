package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGoldenNotesFollowHeadline checks, on one stream as a terminal shows it, that golden's
// "no case from" notes come after a spec's result line and after the headlines of a failed
// comparison, not ahead of them.
func TestGoldenNotesFollowHeadline(t *testing.T) {
	dir := t.TempDir()
	data, err := filepath.Abs("../../golden/data")
	require.NoError(t, err)
	spec := func(name, loss string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("package: mb\ndims: {B: 512}\nbatch: [B]\nloss: "+loss+"\n"), 0o644))
		return p
	}
	small, changed := spec("small.yaml", "{type: clip_ppo}"), spec("changed.yaml", "{type: clip_ppo, clip_epsilon: 0.3}")
	root := filepath.Join(dir, "g")
	before := func(out, first, then string) {
		t.Helper()
		i, j := strings.Index(out, first), strings.Index(out, then)
		require.True(t, i >= 0 && j > i, "want %q before %q in:\n%s", first, then, out)
	}
	for _, c := range []struct {
		args        []string
		code        int
		first, then string
	}{
		{[]string{"golden", "-update", "-dir", root, "-data", data, small}, 0, "wrote 2 cases", "no case from"},
		{[]string{"golden", "-dir", root, "-data", data, small}, 0, "match the interpreter", "no case from"},
		{[]string{"golden", "-dir", root, "-data", data, changed}, 1, "if the change is intended", "no case from"},
	} {
		var out strings.Builder
		require.Equal(t, c.code, run(c.args, &out, &out), out.String())
		before(out.String(), c.first, c.then)
		if c.code != 0 {
			before(out.String(), "output loss_objective: differs", "no case from")
			before(out.String(), "no case from", "details:")
		}
	}
}
