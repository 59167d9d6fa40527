package gen

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The package doc's configuration line prints a parameter whose TorchRL default is None and
// that the spec set to null as None (not the 0 it reads as); a default spelled out by TorchRL
// (reduction="mean") stays as it is.
func TestSummaryPrintsNone(t *testing.T) {
	c, err := CompileSource("s.yaml", []byte("package: s\ndims: {B: 64}\nbatch: [B]\nloss: {type: clip_ppo, clip_value: null}\n"))
	require.NoError(t, err)
	line := summary(c.Spec, c.Hypers)[0]
	require.Contains(t, line, "clip_value=None")
	require.Contains(t, line, "reduction=mean")
	c, err = CompileSource("s.yaml", []byte("package: s\ndims: {B: 64}\nbatch: [B]\nloss: {type: clip_ppo, clip_value: 0.2}\n"))
	require.NoError(t, err)
	require.Contains(t, summary(c.Spec, c.Hypers)[0], "clip_value=0.2")
}
