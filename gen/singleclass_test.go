package gen_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/runtime/golden"
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
// the reference's is. Then it gives klpencat's random case the reference lossgen computed
// before (rounding noise, 1.1e−16, where the gradient is 0): the test's tolerance falls back
// to the call's other gradients (golden.Tol.Floor) and passes, where it used to hold the
// backends' exact 0 to 1e−18; an error of 1e−4 still fails it.
func TestSingleClassPackagesPass(t *testing.T) {
	if testing.Short() {
		t.Skip("generates, compiles and runs packages")
	}
	t.Parallel()
	mod := t.TempDir()
	var random []golden.Case // klpencat's cases
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
		if name == "klpencat" {
			random = cs
		}
	}
	scratchModule(t, mod, "singleclass")
	goTest := func(args ...string) (string, error) {
		return goIn(mod, append([]string{"test", "-count=1"}, args...)...)
	}
	out, err := goTest("./...")
	require.NoError(t, err, out)

	// The golden grad.logits with an error at element 1: noise passes, 1e−4 does not.
	withError := func(e float64) {
		for i := range random {
			if random[i].Name == "random" {
				g := random[i].Want["grad.logits"].Float64s()
				g[1] = e
				random[i].Want["grad.logits"] = golden.Array{Shape: random[i].Want["grad.logits"].Shape, Data: g}
			}
		}
		require.NoError(t, cases.Update(filepath.Join(mod, "testdata", "klpencat"), random))
	}
	withError(1.1102230246251565e-16)
	out, err = goTest("-run", "TestGolden", "./klpencat")
	require.NoError(t, err, out)
	withError(1e-4)
	out, err = goTest("-run", "TestGolden", "./klpencat")
	require.Error(t, err, out)
	require.Contains(t, out, "grad.logits: 1 of 7 elements outside", out)
}
