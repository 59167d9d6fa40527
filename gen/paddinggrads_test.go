package gen_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/runtime/golden"
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

// The flags at padding reach no output either: with keys.mask a value-based loss selects
// its estimator's inputs, done included (true at padding, so a TD(1) or TD(λ) recursion
// restarts there and padding enters it as 0). Flipping done and terminated only where the
// mask is false leaves every output and gradient of the interpreter the same, bit for bit,
// also where padding sits between valid steps of a row (it changed a valid step's return
// through the recursion before).
func TestPaddingFlagsIgnored(t *testing.T) {
	for name, src := range map[string]string{
		"double_dqn td_lambda": "dims: {N: 3, T: 9, A: 3}\nbatch: [N, T]\nestimator: {type: td_lambda, lmbda: 0.8}\nloss: {type: dqn, double_dqn: true, action_space: one_hot, action_dim: A}\n",
		"td3 td1":              "dims: {N: 2, T: 11}\nbatch: [N, T]\nestimator: {type: td1}\nloss: {type: td3}\n",
		"discrete_cql td1":     "dims: {N: 2, T: 8, A: 4}\nbatch: [N, T]\nestimator: {type: td1}\nloss: {type: discrete_cql, action_space: one_hot, action_dim: A}\n",
		"sac td_lambda none":   "dims: {Q: 2, N: 2, T: 10}\nbatch: [N, T]\nestimator: {type: td_lambda}\nloss: {type: sac, action_dim: 2, reduction: none}\n",
	} {
		t.Run(name, func(t *testing.T) {
			c := compileSrc(t, "package: p\ndtype: float64\n"+src+"keys: {mask: mask}\n")
			cs, err := cases.Build(c.Reference(), "p", "")
			require.NoError(t, err)
			for _, cl := range cs {
				mask := cl.Inputs["mask"].Data.([]bool)
				dirty := golden.Case{Name: cl.Name, Inputs: map[string]golden.Array{}}
				flipped := 0
				for k, a := range cl.Inputs {
					if d, ok := a.Data.([]bool); ok && k != "mask" && len(d) == len(mask) {
						d = append([]bool(nil), d...)
						for i := range d {
							if !mask[i] {
								d[i] = !d[i]
								flipped++
							}
						}
						a = golden.Array{Shape: a.Shape, Data: d}
					}
					dirty.Inputs[k] = a
				}
				require.NotZero(t, flipped, "%s: no padding flag to flip", cl.Name)
				require.NoError(t, cases.Want(c.Reference(), &cl))
				require.NoError(t, cases.Want(c.Reference(), &dirty))
				for o, w := range cl.Want {
					wf, gf := w.Float64s(), dirty.Want[o].Float64s()
					for i := range wf {
						require.Equal(t, math.Float64bits(wf[i]), math.Float64bits(gf[i]), "%s %s[%d]: %v with clean flags, %v with flipped", cl.Name, o, i, wf[i], gf[i])
					}
				}
			}
		})
	}
}
