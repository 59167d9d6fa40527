package gen_test

import (
	"maps"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/runtime/golden"
)

// V-trace before a ClipPPO that evaluates a Normal policy in the kernel takes log_pi from
// that distribution (the log-prob of the stored action, summed over the action dims), not
// from a log_prob input the user would have to compute to agree with loc and scale. The
// advantage and value target are checked on every backend against V-trace (SEMANTICS.md
// §3.6) computed here in float64 from the hand-computed Normal log-probs, on a row with a
// truncation and a row with a termination.
func TestVTraceReadsInKernelPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	const N, T, D, gamma = 2, 5, 2, 0.9
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte("package: p\ndtype: float64\nparam_dtype: float64\ndims: {N: 2, T: 5, D: 2}\nbatch: [N, T]\n"+
		"estimator: {type: vtrace, gamma: 0.9, rho_thresh: 1.0, c_thresh: 0.8}\n"+
		"loss: {type: clip_ppo, distribution: normal, action_dim: D}\n"), 0o644))
	c, err := gen.Compile(path)
	require.NoError(t, err)
	for _, in := range c.Graph.Inputs {
		require.NotEqual(t, "log_prob", in.Name, "log_pi comes from the distribution")
	}
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	mapped := filepath.Join(t.TempDir(), "mapped.yaml")
	require.NoError(t, os.WriteFile(mapped, append(src, "keys: {log_prob: lp}\n"...), 0o644))
	cm, err := gen.Compile(mapped)
	require.NoError(t, err)
	require.Len(t, cm.Spec.Warnings, 1)
	require.Contains(t, cm.Spec.Warnings[0].Error(), "keys.log_prob is ignored: vtrace takes log_pi from the loss's normal distribution")
	// A KL-reward transform before the estimator reads the mapped log_prob: no warning.
	kl := filepath.Join(t.TempDir(), "kl.yaml")
	require.NoError(t, os.WriteFile(kl, append(src, "transforms: [{type: kl_reward, coef: 0.1}]\nkeys: {log_prob: lp}\n"...), 0o644))
	ck, err := gen.Compile(kl)
	require.NoError(t, err)
	require.Empty(t, ck.Spec.Warnings)

	n := N * T
	loc, scale, act := make([]float64, n*D), make([]float64, n*D), make([]float64, n*D)
	for i := range loc {
		loc[i], scale[i], act[i] = 0.3*math.Sin(float64(i)), 0.5+0.1*float64(i%7), 0.2*math.Cos(float64(3*i))
	}
	r, v, vn, lpOld := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	done, term := make([]bool, n), make([]bool, n)
	for i := range r {
		r[i], v[i], vn[i], lpOld[i] = math.Cos(float64(i)), 0.1*float64(i), 0.1*float64(i+1)+0.05, -1.2+0.15*float64(i%4)
	}
	done[2], done[7], term[7] = true, true, true // a truncation inside row 0, a termination in row 1
	in := map[string]golden.Array{
		"loc": {Shape: []int{N, T, D}, Data: loc}, "scale": {Shape: []int{N, T, D}, Data: scale}, "action": {Shape: []int{N, T, D}, Data: act},
		"next.reward": {Shape: []int{N, T}, Data: r}, "state_value": {Shape: []int{N, T}, Data: v}, "next.state_value": {Shape: []int{N, T}, Data: vn},
		"next.done": {Shape: []int{N, T}, Data: done}, "next.terminated": {Shape: []int{N, T}, Data: term}, "sample_log_prob": {Shape: []int{N, T}, Data: lpOld},
	}

	// V-trace by hand, log_pi = Σ_d log N(a_d; μ_d, σ_d).
	wantAdv, wantVs := make([]float64, n), make([]float64, n)
	for row := range N {
		acc := 0.0
		rho := make([]float64, T)
		for t := T - 1; t >= 0; t-- {
			i := row*T + t
			lp := 0.0
			for d := range D {
				z := (act[i*D+d] - loc[i*D+d]) / scale[i*D+d]
				lp += -z*z/2 - math.Log(scale[i*D+d]) - math.Log(2*math.Pi)/2
			}
			rho[t] = math.Exp(lp - lpOld[i])
			notTerm, notDone := 1.0, 1.0
			if term[i] {
				notTerm = 0
			}
			if done[i] {
				notDone = 0
			}
			delta := math.Min(rho[t], 1) * (r[i] + gamma*notTerm*vn[i] - v[i])
			acc = delta + gamma*notDone*math.Min(rho[t], 0.8)*acc
			wantVs[i] = v[i] + acc
		}
		for t := range T {
			i := row*T + t
			next := vn[i] // the row's end, and every done step (§11.7)
			if t < T-1 && !done[i] {
				next = wantVs[i+1]
			}
			notTerm := 1.0
			if term[i] {
				notTerm = 0
			}
			wantAdv[i] = math.Min(rho[t], 1) * (r[i] + gamma*notTerm*next - v[i])
		}
	}
	for backend, out := range everyBackend(t, c)(in) {
		require.InDeltaSlice(t, wantAdv, out["advantage"].Float64s(), 1e-12, backend)
		require.InDeltaSlice(t, wantVs, out["value_target"].Float64s(), 1e-12, backend)
	}

	// With keys.mask, the estimator still reads its data unmasked (§11.18), log_pi included:
	// the same advantages at every element, padding too (padding without a done before it
	// here). A first version evaluated the policy after reading the mask, which zeroed the
	// estimator's padding and moved valid advantages (the adversarial review).
	masked := filepath.Join(t.TempDir(), "masked.yaml")
	require.NoError(t, os.WriteFile(masked, append(src, "keys: {mask: mask}\n"...), 0o644))
	cmask, err := gen.Compile(masked)
	require.NoError(t, err)
	mask := make([]bool, n)
	for i := range mask {
		mask[i] = i%T < 3 || i >= T // row 0 padded from t = 3, no done there
	}
	in["mask"] = golden.Array{Shape: []int{N, T}, Data: mask}
	for backend, out := range everyBackend(t, cmask)(in) {
		require.InDeltaSlice(t, wantAdv, out["advantage"].Float64s(), 1e-12, backend)
		require.InDeltaSlice(t, wantVs, out["value_target"].Float64s(), 1e-12, backend)
	}
}

// A categorical action at padding may hold any index (−100, as LLM labels do; §11.18), also
// where V-trace takes log_pi from the in-kernel policy: the bootstrap reads the index as 0
// there (the rest of the estimator's data unmasked). It read −100 and the gather failed (the
// review of the fixes). With done at each row's last valid step, the valid advantages are
// those with any in-range index at padding.
func TestVTracePolicyPaddingAction(t *testing.T) {
	const N, T, A = 2, 5, 3
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte("package: p\ndtype: float64\ndims: {N: 2, T: 5, A: 3}\nbatch: [N, T]\n"+
		"estimator: {type: vtrace, gamma: 0.9, c_thresh: 0.8}\nloss: {type: clip_ppo, distribution: categorical, action_dim: A}\nkeys: {mask: mask}\n"), 0o644))
	c, err := gen.Compile(path)
	require.NoError(t, err)
	n := N * T
	logits, action, mask, done := make([]float64, n*A), make([]int64, n), make([]bool, n), make([]bool, n)
	f := func(k float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = math.Sin(k * float64(i+1))
		}
		return x
	}
	for i := range logits {
		logits[i] = math.Cos(0.7 * float64(i))
	}
	for i := range n {
		mask[i] = i%T < 3
		done[i] = i%T == 2 || i%T == T-1
		action[i] = int64(i % A)
	}
	in := map[string]golden.Array{
		"logits": {Shape: []int{N, T, A}, Data: logits}, "action": {Shape: []int{N, T}, Data: action}, "mask": {Shape: []int{N, T}, Data: mask},
		"next.reward": {Shape: []int{N, T}, Data: f(1)}, "state_value": {Shape: []int{N, T}, Data: f(2)}, "next.state_value": {Shape: []int{N, T}, Data: f(3)},
		"next.done": {Shape: []int{N, T}, Data: done}, "next.terminated": {Shape: []int{N, T}, Data: make([]bool, n)}, "sample_log_prob": {Shape: []int{N, T}, Data: f(4)},
	}
	want := golden.Case{Name: "in range", Inputs: in}
	require.NoError(t, cases.Want(c.Graph, &want))
	bad := append([]int64(nil), action...)
	for i := range bad {
		if !mask[i] {
			bad[i] = -100
		}
	}
	in2 := maps.Clone(in)
	in2["action"] = golden.Array{Shape: []int{N, T}, Data: bad}
	got := golden.Case{Name: "-100", Inputs: in2}
	require.NoError(t, cases.Want(c.Graph, &got), "padding may hold any index")
	w, g := want.Want["advantage"].Float64s(), got.Want["advantage"].Float64s()
	for i := range w {
		if mask[i] {
			require.Equal(t, w[i], g[i], "advantage[%d]", i)
		}
	}
	require.Equal(t, want.Want["loss_objective"].Float64s(), got.Want["loss_objective"].Float64s())
}
