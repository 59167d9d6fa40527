package gen_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ptxgen"
	"github.com/lossgen/lossgen/gen/ptxgen/ptxsim"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/runtime"
)

// ClipPPO in float32 with log-ratios [100, 100, 0.1] and advantages [0, 1, −1]: exp(100)
// overflows, but the clipped branch is taken at the first two elements, so their gradient is
// float64's 0, not 0·inf = NaN, on every backend (issue 17 item 2; SEMANTICS.md §11.19).
func TestGradientAtOverflowEveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte("package: p\ndtype: float32\ndims: {B: 3}\nbatch: [B]\nloss: {type: clip_ppo, critic_coeff: 0, entropy_bonus: false}\n"), 0o644))
	c, err := gen.Compile(path)
	require.NoError(t, err)
	m, err := runner.NewModule(c)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	f := func(v ...float32) golden.Array { return golden.Array{Shape: []int{3}, Data: v} }
	in := map[string]golden.Array{"log_prob": f(100, 100, 0.1), "sample_log_prob": f(0, 0, 0), "advantage": f(0, 1, -1)}
	outs := map[string]map[string]golden.Array{}
	for name, tags := range map[string]string{"go": "purego", "default": ""} {
		bin, err := m.Build(tags)
		require.NoError(t, err)
		outs[name], err = m.RunBackward(bin, in)
		require.NoError(t, err)
	}
	mod, err := ptxgen.Emit(c.Plan, c.Backward, gogen.Meta{Package: "p", GenVersion: runtime.GenVersion})
	require.NoError(t, err)
	outs["ptx"], _, err = ptxsim.RunTable(string(mod.PTX), *mod.Backward, in)
	require.NoError(t, err)
	for backend, out := range outs {
		require.InDelta(t, -0.0316096954, out["loss_objective"].Float64s()[0], 1e-8, backend)
		g := out["grad.log_prob"].Float64s()
		require.Equal(t, []float64{0, 0}, []float64{math.Abs(g[0]), math.Abs(g[1])}, "%s: the clipped branch's gradient", backend)
		require.InDelta(t, 0.368390306, g[2], 1e-7, backend)
	}
}
