package gen_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime/golden"
)

// ClipPPO in float32 with log-ratios [100, 100, 0.1] and advantages [0, 1, −1]: exp(100)
// overflows, but the clipped branch is taken at the first two elements, so their gradient is
// float64's 0, not 0·inf = NaN, on every backend (issue 17 item 2; SEMANTICS.md §11.19).
func TestGradientAtOverflowEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	c := compileSrc(t, "package: p\ndtype: float32\ndims: {B: 3}\nbatch: [B]\nloss: {type: clip_ppo, critic_coeff: 0, entropy_bonus: false}\n")
	f := func(v ...float32) golden.Array { return golden.Array{Shape: []int{3}, Data: v} }
	in := map[string]golden.Array{"log_prob": f(100, 100, 0.1), "sample_log_prob": f(0, 0, 0), "advantage": f(0, 1, -1)}
	for backend, out := range everyBackendOf(t, c, true)(in) {
		require.InDelta(t, -0.0316096954, out["loss_objective"].Float64s()[0], 1e-8, backend)
		g := out["grad.log_prob"].Float64s()
		require.Equal(t, []float64{0, 0}, []float64{math.Abs(g[0]), math.Abs(g[1])}, "%s: the clipped branch's gradient", backend)
		require.InDelta(t, 0.368390306, g[2], 1e-7, backend)
	}
}

// Every backend's gradients at float32's edges, in the PPO family's distributions: logits
// ±1e30, ±3e38 and −inf (log-softmax and the entropy's p·log p), a Normal scale of 1e-30
// (σ² underflows; 1/σ overflows), log-ratios whose exp overflows or underflows. No gradient
// is NaN where the interpreter (float64, then rounded) has a number, and each agrees with it
// within the package test's tolerance.
func TestGradientsAtEdgesEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	inf := math.Inf(-1)
	for _, c := range []struct {
		name, spec string
		in         map[string][]float64
	}{
		{"categorical", "dims: {B: 4, A: 3}\nloss: {type: clip_ppo, distribution: categorical, action_dim: A, critic_coeff: 0, entropy_coeff: 0.5, reduction: sum}\n",
			map[string][]float64{
				"logits":          {1e30, 0, -1e30, 0, inf, inf, 80, -80, 0, 3e38, 3e38, -3e38},
				"action":          {0, 0, 1, 2},
				"sample_log_prob": {0, 0, -160, 0},
				"advantage":       {1, -1, 1, -1},
			}},
		{"normal", "dims: {B: 4, D: 1}\nloss: {type: klpen_ppo, distribution: normal, action_dim: D, critic_coeff: 0, entropy_coeff: 0.1}\n",
			map[string][]float64{
				"loc": {0, 0, 1e20, 0}, "scale": {1e-30, 1, 1, 2}, "action": {1, 0.5, 0, 1},
				"old_loc": {0, 0, 0, 0}, "old_scale": {1, 1, 1, 1}, "beta": {1},
				"sample_log_prob": {0, 0, 0, 0}, "advantage": {1, -1, 1, -1},
			}},
		{"ratio", "dims: {B: 6}\nloss: {type: ppo, critic_coeff: 0, entropy_bonus: false}\n",
			map[string][]float64{
				"log_prob": {100, -200, 88, -104, 0, 100}, "sample_log_prob": {0, 0, 0, 0, 0, -100},
				"advantage": {0, 1, 1e-30, 1e30, 0, 1},
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			comp := compileSrc(t, "package: p\ndtype: float32\nbatch: [B]\n"+c.spec)
			ref := comp.Reference()
			cs := golden.Case{Name: "edges", Inputs: map[string]golden.Array{}}
			for _, in := range ref.Inputs {
				v, ok := c.in[in.Name]
				require.True(t, ok, "no input %q", in.Name)
				cs.Inputs[in.Name] = cases.Stored(ref.DType, in, v)
			}
			require.NoError(t, cases.Want(ref, &cs))
			outs := everyBackendOf(t, comp, true)(cs.Inputs)
			scale := gen.GradScale(ref, cs.Want)
			for backend, out := range outs {
				for _, o := range ref.Outputs {
					got, ok := out[o.Name]
					if !ok {
						continue
					}
					want, gv := cs.Want[o.Name].Float64s(), got.Float64s()
					for i := range want {
						if !math.IsNaN(want[i]) && math.IsNaN(gv[i]) {
							t.Errorf("%s %s[%d] = NaN, the interpreter %v", backend, o.Name, i, want[i])
						}
					}
					if d := golden.Compare(want, gv, gen.OutputTolerance(ref.DType, o).At(scale)); d.Bad > 0 && o.Role == ir.Gradient {
						t.Errorf("%s %s: %d bad, first at %d: %v, want %v", backend, o.Name, d.Bad, d.First, gv[d.First], want[d.First])
					}
				}
			}
		})
	}
}

// ClipPPO with ε = 0.05 on log-weights on and one ulp inside each clip bound (TorchRL's
// float32 bounds log1p(±0.05)), and 1e-3 beyond them: the first four are unclipped in TorchRL
// (its stack-min compares exp(lw) with exp(clamp(lw)), equal or smaller), so their gradient
// is −A·e^lw; the last two are clipped (0). AVX2's and the PTX's float64 exp round e^hi one
// ulp above the correctly rounded bound, which min(exp(lw), e^hi) took for a clip: the
// gradient was 0 on the bound (the TorchRL-numerics review). Both dtypes, every backend.
func TestClipBoundEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, dt := range []string{"float32", "float64"} {
		t.Run(dt, func(t *testing.T) {
			t.Parallel()
			c := compileSrc(t, "package: p\ndtype: "+dt+"\ndims: {B: 6}\nbatch: [B]\nloss: {type: clip_ppo, clip_epsilon: 0.05, reduction: sum, critic_coeff: 0, entropy_bonus: false}\n")
			hi := float64(float32(math.Log1p(float64(float32(0.05)))))
			lo := float64(float32(math.Log1p(-float64(float32(0.05)))))
			lw := []float64{math.Nextafter(hi, -1), hi, math.Nextafter(lo, 1), lo, hi + 1e-3, lo - 1e-3}
			if dt == "float32" {
				lw[0] = float64(math.Nextafter32(float32(hi), -1))
				lw[2] = float64(math.Nextafter32(float32(lo), 1))
			}
			adv := []float64{1, 1, -1, -1, 1, -1}
			in := map[string]golden.Array{"log_prob": arrayOf(dt, lw), "sample_log_prob": arrayOf(dt, make([]float64, 6)), "advantage": arrayOf(dt, adv)}
			for backend, out := range everyBackendOf(t, c, true)(in) {
				g := out["grad.log_prob"].Float64s()
				for i := range 4 {
					require.InEpsilon(t, -adv[i]*math.Exp(lw[i]), g[i], 1e-6, "%s: element %d, on or inside its bound", backend, i)
				}
				require.Equal(t, []float64{0, 0}, []float64{math.Abs(g[4]), math.Abs(g[5])}, "%s: beyond the bounds", backend)
			}
		})
	}
}

// arrayOf is vals as a golden array of dtype dt ("float32" or "float64"), one dim.
func arrayOf(dt string, vals []float64) golden.Array {
	if dt == "float64" {
		return golden.Array{Shape: []int{len(vals)}, Data: vals}
	}
	f := make([]float32, len(vals))
	for i, v := range vals {
		f[i] = float32(v)
	}
	return golden.Array{Shape: []int{len(vals)}, Data: f}
}

// Advantages spread over 1.1e20 in float32: their variance (1e39) overflows float32, but
// torch.std takes the root of its float64 variance and TorchRL's normalize_advantage still
// standardises them (the float32 review: every backend returned loss 0, the standardised
// advantages all 0). Unmasked and masked (two padded elements holding NaN), every backend,
// against the scale-free value −mean(e^lw·(i − ī)/s) computed here in float64.
func TestStandardiseBeyondFloat32Variance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, masked := range []bool{false, true} {
		t.Run(fmt.Sprint("masked=", masked), func(t *testing.T) {
			t.Parallel()
			src := "package: p\ndtype: float32\ndims: {B: 12}\nbatch: [B]\nloss: {type: clip_ppo, normalize_advantage: true, critic_coeff: 0, entropy_bonus: false}\n"
			valid := 12
			if masked {
				src += "keys: {mask: mask}\n"
				valid = 10
			}
			c := compileSrc(t, src)
			adv, lw, mask := make([]float64, 12), make([]float64, 12), make([]bool, 12)
			for i := range adv {
				adv[i], lw[i], mask[i] = float64(i)*1e19, 0.01*float64(i), i < valid
			}
			if masked {
				adv[10], adv[11] = math.NaN(), math.NaN()
			}
			in := map[string]golden.Array{"advantage": arrayOf("float32", adv), "log_prob": arrayOf("float32", lw), "sample_log_prob": arrayOf("float32", make([]float64, 12))}
			if masked {
				in["mask"] = golden.Array{Shape: []int{12}, Data: mask}
			}
			mean, ss, want := float64(valid-1)/2, 0.0, 0.0
			for i := range valid {
				ss += (float64(i) - mean) * (float64(i) - mean)
			}
			s := math.Sqrt(ss / float64(valid-1))
			for i := range valid {
				want -= math.Exp(lw[i]) * (float64(i) - mean) / s / float64(valid)
			}
			for backend, out := range everyBackend(t, c)(in) {
				require.InEpsilon(t, want, out["loss_objective"].Float64s()[0], 1e-5, backend)
			}
		})
	}
}

// The k3 KL term's gradient at d = ref − log π = ±∞ (a log-probability of −∞ on a valid
// token, a reference of −∞): torch's d/dlog π of e^d − 1 − d is −(e^d − 1), −∞ at d = +∞
// (the loss itself is NaN there, ∞ − ∞) and +1 at d = −∞, on every backend; a finite token
// beside them keeps its own −(e^d − 1)·coeff/n.
func TestK3GradientAtInfinityEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	c := compileSrc(t, "package: p\ndtype: float32\ndims: {B: 1, L: 3}\nbatch: [B, L]\nloss: {type: grpo, kl_to_ref_coeff: 1}\n")
	f := func(v ...float32) golden.Array { return golden.Array{Shape: []int{1, 3}, Data: v} }
	inf := float32(math.Inf(1))
	in := map[string]golden.Array{
		"log_prob": f(-inf, 0, -1), "sample_log_prob": f(-1, 0, -1), "ref_log_prob": f(-1, -inf, 0),
		"advantage": f(0, 0, 0), "entropy": f(0, 0, 0),
	}
	for backend, out := range everyBackendOf(t, c, true)(in) {
		require.True(t, math.IsNaN(out["loss_kl_to_ref"].Float64s()[0]), backend)
		g := out["grad.log_prob"].Float64s()
		require.True(t, math.IsInf(g[0], -1), "%s: d = +∞ gives −∞, got %v", backend, g[0])
		require.InDelta(t, 1.0/3, g[1], 1e-7, "%s: d = −∞ gives +1·coeff/3", backend)
		require.InDelta(t, -(math.E-1)/3, g[2], 1e-6, "%s: d = 1 gives −(e − 1)·coeff/3", backend)
	}
}
