package gen_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/ptxgen"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/runtime/ptxsim"
)

// TestPPOFamily runs the PPO losses (and IQL's actor) with every policy distribution, masks,
// per-head entropy and KLPEN's state on every backend (pure Go, the default build's AVX2, the PTX in the
// simulator), Forward and ForwardBackward, against the interpreter on the golden cases'
// random and extreme inputs (−inf and huge logits, actions on the tanh bounds, fully masked
// rows).
//
// The default run checks the configurations marked default: every policy distribution, each
// of ppo, clip_ppo, klpen_ppo and the IQL family, both dtypes, one and two batch dims, per-head
// entropy, and masks (garbage padding) with an index action (out-of-range actions at padding)
// and reductions mean and none, a one-hot action and heads. LOSSGEN_FULL=1 checks every configuration.
func TestPPOFamily(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, c := range []struct {
		name, dtype, dims, batch, loss string
		def                            bool // in the default run
	}{
		{"ppo_categorical", "float32", "{B: 37, A: 6}", "[B]", "{type: ppo, distribution: categorical, action_dim: A}", false},
		{"clip_one_hot", "float64", "{B: 21, A: 3}", "[B]", "{type: clip_ppo, distribution: one_hot_categorical, action_dim: A, clip_epsilon: [0.2, 0.28]}", false},
		{"clip_normal", "float32", "{N: 5, T: 7, D: 3}", "[N, T]", "{type: clip_ppo, distribution: normal, action_dim: D, normalize_advantage: true}", true},
		{"ppo_tanh", "float64", "{B: 19, D: 2}", "[B]", "{type: ppo, distribution: tanh_normal, action_dim: D, low: -2, high: 3}", true},
		{"klpen_categorical", "float32", "{B: 29, A: 5}", "[B]", "{type: klpen_ppo, distribution: categorical, action_dim: A, beta: 0.7}", true},
		{"klpen_normal", "float64", "{N: 3, T: 11, D: 2}", "[N, T]", "{type: klpen_ppo, distribution: normal, action_dim: D, reduction: sum}", false},
		{"klpen_tanh", "float32", "{B: 17, D: 4}", "[B]", "{type: klpen_ppo, distribution: tanh_normal, action_dim: D}", false},
		{"heads", "float32", "{B: 23}", "[B]", "{type: clip_ppo, heads: [move, turn], entropy_coeff: {move: 0.01, turn: 0.05}}", false},
		{"iql_normal_actor", "float32", "{Q: 2, B: 19, D: 2}", "[B]", "{type: iql, distribution: normal, action_dim: D}", false},
		{"discrete_iql_categorical_actor", "float64", "{Q: 3, B: 13, A: 4}", "[B]", "{type: discrete_iql, action_dim: A, action_space: categorical, distribution: categorical}", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.def {
				sweepOnly(t)
			}
			t.Parallel()
			src := fmt.Sprintf("package: p\ndtype: %s\ndims: %s\nbatch: %s\nloss: %s\n", c.dtype, c.dims, c.batch, c.loss)
			checkAllBackends(t, src)
		})
	}
	masked := []struct {
		name, dtype, loss string
		def               bool
	}{
		{"clip_categorical", "float32", "{type: clip_ppo, distribution: categorical, action_dim: A, normalize_advantage: true}", true},
		{"ppo_none_sum", "float64", "{type: ppo, reduction: sum}", false},
		{"klpen_none_reduction", "float32", "{type: klpen_ppo, distribution: categorical, action_dim: A, reduction: none}", true},
		{"klpen_normal", "float32", "{type: klpen_ppo, distribution: normal, action_dim: A, clip_value: 0.3}", false},
		{"clip_tanh_none", "float32", "{type: clip_ppo, distribution: tanh_normal, action_dim: A, reduction: none}", false},
		{"ppo_one_hot", "float64", "{type: ppo, distribution: one_hot_categorical, action_dim: A}", true},
		{"heads", "float32", "{type: clip_ppo, heads: [move, turn], entropy_coeff: {move: 0.01, turn: 0.05}}", true},
	}
	for _, c := range masked {
		t.Run("mask_"+c.name, func(t *testing.T) {
			if !c.def {
				sweepOnly(t)
			}
			t.Parallel()
			src := fmt.Sprintf("package: p\ndtype: %s\ndims: {B: 4, L: 13, A: 5}\nbatch: [B, L]\nloss: %s\nkeys: {mask: mask}\n", c.dtype, c.loss)
			checkAllBackends(t, src)
		})
	}
}

// checkAllBackends compiles the spec src and checks every backend's Forward (and
// ForwardBackward) against the interpreter on the spec's golden cases: the pure-Go kernel,
// the default build's (AVX2 where the CPU has it) and the PTX in the simulator.
func checkAllBackends(t *testing.T, src string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	comp, err := gen.Compile(path)
	require.NoError(t, err)
	ref := comp.Reference()
	cs, err := cases.Build(ref, "p", "")
	require.NoError(t, err)
	m, err := runner.NewModule(comp)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	bins := map[string]string{}
	for name, tags := range map[string]string{"go": "purego", "default": ""} {
		bins[name], err = m.Build(tags)
		require.NoError(t, err)
	}
	mod, err := ptxgen.Emit(comp.Plan, comp.Backward, gogen.Meta{Package: "p", GenVersion: runtime.GenVersion})
	require.NoError(t, err)
	runAll := func(inputs map[string]golden.Array) map[string]map[string]golden.Array {
		outs := map[string]map[string]golden.Array{}
		for name, bin := range bins {
			outs[name+"/forward"], err = m.Run(bin, inputs)
			require.NoError(t, err)
			if comp.Backward != nil {
				outs[name+"/backward"], err = m.RunBackward(bin, inputs)
				require.NoError(t, err)
			}
		}
		outs["ptx/forward"], _, err = ptxsim.RunTable(string(mod.PTX), mod.Launch, inputs)
		require.NoError(t, err)
		if comp.Backward != nil {
			outs["ptx/backward"], _, err = ptxsim.RunTable(string(mod.PTX), *mod.Backward, inputs)
			require.NoError(t, err)
		}
		return outs
	}
	for _, cs := range cs {
		require.NoError(t, cases.Want(ref, &cs))
		outs := runAll(cs.Inputs)
		if dirty := garbagePadding(ref, cs.Inputs); dirty != nil && cs.Name == "random" {
			// Garbage at every masked element of every float input: every backend gives the
			// bits it gives with clean padding (issue 17 item 1).
			for backend, out := range runAll(dirty) {
				for name, a := range out {
					w, g := outs[backend][name].Float64s(), a.Float64s()
					for i := range w {
						if math.Float64bits(w[i]) != math.Float64bits(g[i]) {
							t.Errorf("%s, garbage padding, %s[%d] = %v, %v with clean padding", backend, name, i, g[i], w[i])
							break
						}
					}
				}
			}
		}
		for backend, out := range outs {
			for _, o := range ref.Outputs {
				got, ok := out[o.Name]
				if !ok {
					continue // a gradient, from Forward
				}
				want := cs.Want[o.Name].Float64s()
				tol := gen.OutputTolerance(ref.DType, o).At(gen.GradScale(ref, cs.Want))
				if d := golden.Compare(want, got.Float64s(), tol); d.Bad > 0 {
					t.Errorf("%s, case %s, %s: %d of %d bad, first at %d: got %v, want %v", backend, cs.Name, o.Name, d.Bad, len(want), d.First,
						got.Float64s()[d.First], want[d.First])
				}
			}
		}
	}
}

// garbagePadding is a copy of inputs with NaN, ±inf, ±1e30 and the dtype's largest finite
// value cycling through every masked element (keys.mask false) of every float input whose
// leading dims are the batch's, and indices out of range in index inputs; nil when the graph
// has no mask.
func garbagePadding(g *ir.Graph, inputs map[string]golden.Array) map[string]golden.Array {
	var mask []bool
	for _, in := range g.Inputs {
		if in.Key == "mask" {
			mask = inputs[in.Name].Data.([]bool)
		}
	}
	if mask == nil {
		return nil
	}
	big := math.MaxFloat64
	if g.DType == ir.F32 {
		big = math.MaxFloat32
	}
	garbage := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e30, -1e30, big, -big}
	out := map[string]golden.Array{}
	for _, in := range g.Inputs {
		a := inputs[in.Name]
		if in.Kind == ir.Bool || in.State || len(in.Shape) < len(g.Batch) || !in.Shape[:len(g.Batch)].Equal(g.Batch) {
			out[in.Name] = a
			continue
		}
		v := a.Float64s()
		for i, m := range in.Shape.SubIndex(g.Batch) {
			switch {
			case mask[m]:
			case in.Kind == ir.Index:
				v[i] = []float64{-100, 1 << 40}[i%2] // an action out of range: padding is not checked
			default:
				v[i] = garbage[i%len(garbage)]
			}
		}
		out[in.Name] = cases.Stored(g.DType, in, v)
	}
	return out
}
