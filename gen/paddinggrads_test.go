package gen_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
)

// TestPaddingIgnoredGradLayout generates masked losses whose gradients do not lead with the
// batch dims — SAC's and TD3's [Q, *batch] critic gradients, SAC's scalar log_alpha — and
// runs their TestPaddingIgnored, which must find each gradient element's mask element from
// the gradient's own layout (it divided by zero on log_alpha and read the wrong mask element
// on [Q, B] before).
func TestPaddingIgnoredGradLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("generates, compiles and runs packages")
	}
	t.Parallel()
	mod := t.TempDir()
	for name, body := range map[string]string{
		"sacm":  "dims: {Q: 2, B: 5}\nbatch: [B]\nloss: {type: sac, action_dim: 3}\n",
		"td3m":  "dims: {B: 5}\nbatch: [B]\nloss: {type: td3, reduction: none}\n",
		"sacnt": "dims: {Q: 2, N: 3, T: 4}\nbatch: [N, T]\nloss: {type: sac, action_dim: 2}\n",
	} {
		spec := filepath.Join(mod, name+".yaml")
		require.NoError(t, os.WriteFile(spec, []byte("package: "+name+"\n"+body+"keys: {mask: mask}\n"), 0o644))
		dir := filepath.Join(mod, name)
		_, files, err := gen.Generate(spec, gen.Options{OutDir: dir, GoldenDir: filepath.Join(mod, "testdata", name)})
		require.NoError(t, err)
		require.NoError(t, gen.Write(dir, files))
	}
	scratchModule(t, mod, "paddinggrads")
	out, err := goIn(mod, "test", "-count=1", "-v", "-run", "TestPaddingIgnored", "./...")
	require.NoError(t, err, out)
	require.Equal(t, 3, strings.Count(out, "--- PASS: TestPaddingIgnored"), out)
}
