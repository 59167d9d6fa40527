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

// TestEstimatorPaddingAfterDone runs an estimator in the kernel before a masked ClipPPO (GAE,
// with average_gae, V-trace, TD(λ) with average_rewards), on rows
// padded on the right with done and terminated at each row's last valid step, as
// docs/SEMANTICS.md §11.18 asks: the estimator runs on unmasked data, as TorchRL's does, and
// its recursion is cut at the done step (ir.OpScan: a coefficient of 0 multiplies NaN and
// ±inf to +0), so NaN, ±inf and huge values in the padding of every float input reach no
// valid element of any output and no gradient, bit for bit against zero padding, on the
// interpreter and on every backend (the AVX2 scan lets a non-finite input through its guard:
// a rerun in Go would move other rows by an ulp). Before the cut, 0·NaN made the last valid
// step's advantage NaN.
func TestEstimatorPaddingAfterDone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	const N, T = 4, 21
	for _, tc := range []struct{ dt, est string }{
		{"float32", "{type: gae, lmbda: 0.9}"},
		{"float64", "{type: gae, lmbda: 0.9}"},
		{"float32", "{type: gae, average_gae: true}"},    // statistics over the valid steps
		{"float64", "{type: vtrace, average_adv: true}"}, // vs⁺ = V' at a terminated done step
		{"float32", "{type: vtrace}"},                    // NaN ratios in padding: the AVX2 guard lets them through
		{"float32", "{type: td_lambda, average_rewards: true}"},
	} {
		t.Run(tc.dt+" "+tc.est, func(t *testing.T) {
			c := compileSrc(t, "package: p\ndtype: "+tc.dt+"\ndims: {N: 4, T: 21}\nbatch: [N, T]\n"+
				"estimator: "+tc.est+"\nloss: {type: clip_ppo, entropy_coeff: 0.01}\nkeys: {mask: mask}\n")
			g := c.Reference()
			cs, err := cases.Build(g, "p", "")
			require.NoError(t, err)
			clean := cs[0].Inputs
			valid := []int{T, 13, 1, 0} // a full row, two padded rows, an all-padding row
			mask := make([]bool, N*T)
			for r, n := range valid {
				for i := range n {
					mask[r*T+i] = true
				}
			}
			clean["mask"] = golden.Array{Shape: clean["mask"].Shape, Data: mask}
			for _, k := range []string{"next.done", "next.terminated"} {
				d := append([]bool(nil), clean[k].Data.([]bool)...)
				for r, n := range valid {
					for i := range T {
						if i == n-1 {
							d[r*T+i] = true // done at the last valid step
						} else if i >= n {
							d[r*T+i] = i%2 == 0 // anything in padding
						}
					}
				}
				clean[k] = golden.Array{Shape: clean[k].Shape, Data: d}
			}
			// 1e37 gives a finite δ beyond the AVX2 scan guard's bound (it sent the pass to Go, whose
			// rounding moved every valid value: the newcomer review).
			garbage := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e30, -3e38, 1e37}
			dirty, dirtied := map[string]golden.Array{}, 0
			for k, a := range clean {
				_, f64 := a.Data.([]float64)
				_, f32 := a.Data.([]float32)
				if !f64 && !f32 || a.Len() != N*T { // float data of float32 cases too (it skipped them)
					dirty[k] = a
					continue
				}
				cf, df := a.Float64s(), a.Float64s()
				for i := range cf {
					if !mask[i] {
						cf[i], df[i] = 0, garbage[i%len(garbage)]
					}
				}
				ca, da := arrayOf(tc.dt, cf), arrayOf(tc.dt, df)
				ca.Shape, da.Shape = a.Shape, a.Shape
				clean[k], dirty[k] = ca, da
				dirtied++
			}
			require.GreaterOrEqual(t, dirtied, 4, "garbage in the padding of every float input")
			same := func(what string, want, got map[string]golden.Array) {
				t.Helper()
				for _, o := range g.Outputs {
					w, gt := want[o.Name].Float64s(), got[o.Name].Float64s()
					require.Len(t, gt, len(w), "%s %s", what, o.Name)
					for i := range w {
						if len(w) == N*T && !mask[i] && !strings.HasPrefix(o.Name, "grad.") {
							continue // the estimator's own outputs at padding are padding's
						}
						require.Equal(t, math.Float64bits(w[i]), math.Float64bits(gt[i]), "%s %s[%d]: %v with zero padding, %v with garbage", what, o.Name, i, w[i], gt[i])
					}
				}
			}
			ref := func(in map[string]golden.Array) map[string]golden.Array {
				cl := golden.Case{Name: "c", Inputs: in}
				require.NoError(t, cases.Want(g, &cl))
				return cl.Want
			}
			same("interpreter", ref(clean), ref(dirty))
			outs, _ := runAll(t, c, []map[string]golden.Array{clean, dirty})
			for backend := range outs[0] {
				same(backend, outs[0][backend], outs[1][backend])
			}
		})
	}
}
