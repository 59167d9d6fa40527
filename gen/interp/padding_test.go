package interp_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/interp"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/passes"
	"github.com/lossgen/lossgen/spec"
)

// maskedSpecs are the losses that take keys.mask, with every policy distribution, per-head
// entropies, advantage standardisation and value clipping, and the value-based off-policy
// losses with either action space: the configurations whose padding
// must reach no output and no gradient (SEMANTICS.md §11.16, §11.18).
func maskedSpecs() map[string]string {
	out := map[string]string{}
	for _, dt := range []string{"float32", "float64"} {
		for _, loss := range []string{"ppo", "clip_ppo", "klpen_ppo"} {
			for _, dist := range []string{"none", "categorical", "one_hot_categorical", "normal", "tanh_normal"} {
				if loss == "klpen_ppo" && dist == "none" {
					continue // KLPEN's KL needs the distributions (§11.9)
				}
				for _, red := range []string{"mean", "none"} {
					ev := ""
					if dist != "none" {
						ev = ", action_dim: A"
					}
					out[fmt.Sprintf("%s/%s/%s/%s", dt, loss, dist, red)] = fmt.Sprintf(`package: p
dtype: %s
dims: {B: 3, L: 5, A: 4}
batch: [B, L]
loss: {type: %s, distribution: %s%s, reduction: %s, normalize_advantage: true, clip_value: 0.5, loss_critic_type: l2}
keys: {mask: mask}
`, dt, loss, dist, ev, red)
				}
			}
		}
		for name, loss := range map[string]string{
			"grpo/kl":                    "{type: grpo, kl_to_ref_coeff: 0.1, kl_to_inference_coeff: 0.2, kl_mask_threshold: 0.05}",
			"grpo/prompt_mean":           "{type: grpo, aggregation: prompt_mean, kl_to_ref_coeff: 0.1}",
			"dapo/none":                  "{type: dapo, aggregation: none, kl_to_inference_coeff: 0}",
			"cispo/sum":                  "{type: cispo, reduction: sum, kl_mask_threshold: 0.05}",
			"cispo/stop_gradient/prompt": "{type: cispo, stop_gradient: true, aggregation: prompt_mean, kl_to_ref_coeff: 0.3}",
			"gspo/dapo":                  "{type: gspo, beta: 0.1}",
			"gspo/grpo/delta":            "{type: gspo, loss_type: grpo, delta: 1.5}",
			"gspo/token":                 "{type: gspo, variant: token, loss_type: grpo, beta: 0.2}",
			"distillation/reverse":       "{type: distillation}",
			"distillation/forward/none":  "{type: distillation, kl_direction: forward, reduction: none, normalize_by_seq_length: false}",
			"a2c/none/clipped":           "{type: a2c, clip_value: 0.5, loss_critic_type: l2, reduction: none}",
			"redq/none":                  "{type: redq, num_qvalue_nets: 3, action_dim: 2, reduction: none}",
			"reinforce/clipped":          "{type: reinforce, clip_value: 0.5}",
			"cql/none":                   "{type: cql, action_dim: 2, num_random: 3, reduction: none, deterministic_backup: false}",
			"cql/lagrange/max":           "{type: cql, action_dim: 2, num_random: 2, with_lagrange: true, max_q_backup: true}",
		} {
			out[dt+"/"+name] = "package: p\ndtype: " + dt + "\ndims: {B: 3, L: 5}\nbatch: [B, L]\nloss: " + loss + "\nkeys: {mask: mask}\n"
		}
		for _, dist := range []string{"categorical", "tanh_normal"} {
			out[dt+"/a2c/"+dist] = "package: p\ndtype: " + dt + "\ndims: {B: 3, L: 5, A: 4}\nbatch: [B, L]\nloss: {type: a2c, distribution: " + dist +
				", action_dim: A, reduction: sum}\nkeys: {mask: mask}\n"
		}
		for _, loss := range []string{"dqn, double_dqn: true", "discrete_cql", "discrete_sac"} {
			for _, space := range []string{"categorical", "one_hot"} {
				out[fmt.Sprintf("%s/%s/%s", dt, loss, space)] = fmt.Sprintf(`package: p
dtype: %s
dims: {B: 3, L: 5, A: 4}
batch: [B, L]
estimator: {type: td_lambda, gamma: 0.9}
loss: {type: %s, action_dim: A, action_space: %s, loss_function: smooth_l1}
keys: {mask: mask}
`, dt, loss, space)
			}
		}
		for _, space := range []string{"categorical", "one_hot"} {
			out[dt+"/distributional_dqn/"+space] = "package: p\ndtype: " + dt + "\ndims: {B: 3, L: 5, K: 4, A: 3}\nbatch: [B, L]\n" +
				"loss: {type: distributional_dqn, gamma: 0.9, action_dim: A, atom_dim: K, action_space: " + space + ", support: {vmin: -1, vmax: 2, n_atoms: 4}}\nkeys: {mask: mask}\n"
		}
		for name, est := range map[string]string{
			"mc_advantage/grpo":      "{type: mc_advantage, group_dim: N}",
			"mc_advantage/mean/grpo": "{type: mc_advantage, group_dim: N, trajectory_return: mean}",
			"mc_advantage/max/grpo":  "{type: mc_advantage, group_dim: N, trajectory_return: max}",
		} {
			out[dt+"/"+name] = "package: p\ndtype: " + dt + "\ndims: {G: 1, N: 3, L: 5}\nbatch: [G, N, L]\nestimator: " + est +
				"\nloss: {type: grpo, kl_to_ref_coeff: 0.1}\nkeys: {mask: mask}\n"
		}
		out[dt+"/clip_ppo/heads"] = `package: p
dtype: ` + dt + `
dims: {B: 3, L: 5}
batch: [B, L]
loss: {type: clip_ppo, heads: [move, turn], entropy_coeff: {move: 0.01, turn: 0.05}}
keys: {mask: mask}
`
	}
	return out
}

// Garbage at every masked element of every float input — NaN, ±inf, ±1e30, the dtype's
// largest finite value — leaves every output and every gradient bit for bit as clean
// padding does, and every gradient is exactly 0 at masked elements (issue 17 item 1: before
// the masked inputs were selected away, 0·f'(garbage) made NaN gradients there).
func TestPaddingReachesNoOutputOrGradient(t *testing.T) {
	for name, src := range maskedSpecs() {
		t.Run(name, func(t *testing.T) {
			s, err := spec.Parse("test.yaml", []byte(src), lower.Registry())
			require.NoError(t, err)
			g, _, err := lower.Lower(s)
			require.NoError(t, err)
			g, err = passes.Autodiff(g)
			require.NoError(t, err)
			drawn, _, err := cases.Recipe(g, "p", "random", func(*ir.Input) string { return "" }).Draw()
			require.NoError(t, err)
			clean := map[string][]float64{}
			for name, v := range drawn {
				clean[name] = float64s(v)
			}
			mask := clean["mask"]
			// Half the elements valid, in a pattern that leaves a row with none (B=3, L=5).
			for i := range mask {
				mask[i] = float64(b2i(i%5 < 3 && i/5 != 1))
			}
			big := math.MaxFloat64
			if g.DType == ir.F32 {
				big = math.MaxFloat32
			}
			garbage := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e30, -1e30, big, -big}
			dirty := map[string][]float64{}
			for _, in := range g.Inputs {
				v := append([]float64(nil), clean[in.Name]...)
				switch {
				case in.Kind == ir.Float && in.Key != "mask" && len(in.Shape) > 0:
					k := 0
					forMasked(in.Shape, g.Batch, mask, func(i int) { v[i] = garbage[k%len(garbage)]; k++ })
					if in.Shape.SubIndex(g.Batch) != nil { // a per-sequence input ([B] of [B, L]) has no padding
						require.Positive(t, k, "input %s has masked elements", in.Name)
					}
				case in.Kind == ir.Index:
					// An action out of range at padding: -100 (LLM labels' ignore index), 2^40.
					k := 0
					forMasked(in.Shape, g.Batch, mask, func(i int) { v[i] = []float64{-100, 1 << 40}[k%2]; k++ })
				}
				dirty[in.Name] = v
			}
			want, got := run(t, g, clean), run(t, g, dirty)
			for _, o := range g.Outputs {
				w, gv := want[o.Name], got[o.Name]
				for i := range w {
					if math.Float64bits(w[i]) != math.Float64bits(gv[i]) {
						t.Errorf("%s[%d] = %v with garbage padding, %v with clean", o.Name, i, gv[i], w[i])
					}
				}
				if o.Role != ir.Gradient {
					continue
				}
				forMasked(o.Node.Shape, g.Batch, mask, func(i int) {
					if gv[i] != 0 {
						t.Errorf("%s[%d] = %v at a masked element, want 0", o.Name, i, gv[i])
					}
				})
			}
		})
	}
}

// forMasked calls f with the flat index of every element of shape whose batch coordinates
// fall on a false mask element (mask is [*batch], row-major).
func forMasked(shape, batch ir.Shape, mask []float64, f func(int)) {
	for i, m := range shape.SubIndex(batch) { // none: not a per-element tensor
		if mask[m] == 0 {
			f(i)
		}
	}
}

func run(t *testing.T, g *ir.Graph, in map[string][]float64) map[string][]float64 {
	t.Helper()
	inputs := map[string]*tensor.Dense{}
	for _, x := range g.Inputs {
		inputs[x.Name] = interp.New(x.Shape, in[x.Name])
	}
	outs, err := interp.Run(g, inputs)
	require.NoError(t, err)
	res := map[string][]float64{}
	for k, v := range outs {
		res[k] = interp.Data(v)
	}
	return res
}

func float64s(x any) []float64 {
	switch v := x.(type) {
	case []float64:
		return append([]float64(nil), v...)
	case []float32:
		out := make([]float64, len(v))
		for i, e := range v {
			out[i] = float64(e)
		}
		return out
	case []bool:
		out := make([]float64, len(v))
		for i, e := range v {
			out[i] = float64(b2i(e))
		}
		return out
	case []int64:
		out := make([]float64, len(v))
		for i, e := range v {
			out[i] = float64(e)
		}
		return out
	}
	panic(fmt.Sprintf("unexpected %T", x))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
