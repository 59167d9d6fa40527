package gen_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/runner"
)

// singleClassSpecs are categorical policies over one class (A = 1): log π is 0 and its
// gradient 1 − p is exactly 0.
var singleClassSpecs = map[string]string{
	"klpencat":    "dtype: float32\ndims: {B: 7, A: 1}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: categorical, action_dim: A}\n",
	"klpenonehot": "dtype: float64\ndims: {B: 7, A: 1}\nbatch: [B]\nloss: {type: klpen_ppo, distribution: one_hot_categorical, action_dim: A, reduction: none}\n",
	"ppomasked":   "dtype: float32\ndims: {B: 3, L: 5, A: 1}\nbatch: [B, L]\nloss: {type: clip_ppo, distribution: categorical, action_dim: A, entropy_coeff: 0.01}\nkeys: {mask: mask}\n",
}

// TestSingleClassGradientExact checks the interpreter's reference on every golden case of
// the one-class specs: the gradient to the logits is exactly 0, not the rounding noise
// (1e−16, 1e−13 on the extreme case) the chain rule leaves when it adds the loss's paths
// through log_softmax and subtracts their sum again.
func TestSingleClassGradientExact(t *testing.T) {
	for name, body := range singleClassSpecs {
		t.Run(name, func(t *testing.T) {
			comp, err := gen.CompileSource(name+".yaml", []byte("package: "+name+"\n"+body))
			require.NoError(t, err)
			ref := comp.Reference()
			cs, err := cases.Build(ref, name, "")
			require.NoError(t, err)
			for i := range cs {
				require.NoError(t, cases.Want(ref, &cs[i]))
				for k, v := range cs[i].Want["grad.logits"].Float64s() {
					if v != 0 {
						t.Errorf("case %s: grad.logits[%d] = %g, want exactly 0", cs[i].Name, k, v)
					}
				}
			}
		})
	}
}

// TestSingleClassPackagesPass generates the one-class packages with their golden cases and
// runs their own go test, which must pass: every backend's gradient to the logits is 0, as
// the reference's is.
func TestSingleClassPackagesPass(t *testing.T) {
	if testing.Short() {
		t.Skip("generates, compiles and runs packages")
	}
	mod := t.TempDir()
	for name, body := range singleClassSpecs {
		spec := filepath.Join(mod, name+".yaml")
		require.NoError(t, os.WriteFile(spec, []byte("package: "+name+"\n"+body), 0o644))
		dir, goldenDir := filepath.Join(mod, name), filepath.Join(mod, "testdata", name)
		c, files, err := gen.Generate(spec, gen.Options{OutDir: dir, GoldenDir: goldenDir})
		require.NoError(t, err)
		require.NoError(t, gen.Write(dir, files))
		cs, err := cases.Build(c.Graph, c.Spec.Package, "")
		require.NoError(t, err)
		for i := range cs {
			require.NoError(t, cases.Want(c.Reference(), &cs[i]))
			cs[i].Compact()
		}
		require.NoError(t, cases.Update(goldenDir, cs))
	}
	root, err := runner.Root()
	require.NoError(t, err)
	gomod := fmt.Sprintf("module singleclass\n\ngo 1.26\n\nrequire github.com/lossgen/lossgen v0.0.0-00010101000000-000000000000\n\nreplace github.com/lossgen/lossgen => %s\n", root)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644))
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = mod
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "LOSSGEN_FULL=") }),
		"GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}
