package gen

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// The SEMANTICS.md that generated doc comments cite is read at the version of lossgen the
// generator was built from as a dependency, and at main from a checkout or a replace.
func TestSemanticsURL(t *testing.T) {
	const base = "https://github.com/lossgen/lossgen/blob/"
	dep := func(v string, r *debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/trainer", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.50.0"}, {Path: modulePath, Version: v, Replace: r}}}
	}
	require.Equal(t, base+"v0.3.1/docs/SEMANTICS.md", semanticsURL(dep("v0.3.1", nil)))
	require.Equal(t, base+"main/docs/SEMANTICS.md", semanticsURL(dep("v0.0.0", &debug.Module{Path: "../lossgen"})))
	// A checkout: the VCS-stamped version changes with every commit; the examples must not.
	require.Equal(t, base+"main/docs/SEMANTICS.md", semanticsURL(&debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.0.0-20261201-abcdef+dirty"}}))
	require.Equal(t, base+"main/docs/SEMANTICS.md", semanticsURL(nil))
}
