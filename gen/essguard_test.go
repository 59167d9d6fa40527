package gen_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/runtime/golden"
)

// The AVX2 kernels add a float32 logsumexp's e^x, and its twin's e^2x, in float32 partials
// (asmgen partialExp), guarded: a term outside the range where e^2x is a normal float32
// (x < −43), or a partial that overflowed (eight blocks of e^87), sends the pass to the Go
// kernel. ClipPPO's ESS = exp(2·lse(lw) − lse(2·lw)) is then what the interpreter says on
// every backend, as it is on ordinary log-weights.
func TestESSGuardFallback(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	c, err := gen.Compile("../spec/examples/clip_ppo.yaml")
	require.NoError(t, err)
	run := everyBackend(t, c)
	tol := golden.Tol{Abs: 1e-6, Rel: 5e-5, Norm: 1e-5}
	for name, lw := range map[string]func(i int) float64{
		"ordinary":          func(i int) float64 { return math.Sin(float64(i)) / 2 },
		"overflowing_87":    func(i int) float64 { return 87 - float64(i%3)/4 },
		"twin_subnormal":    func(i int) float64 { return -50 + math.Sin(float64(i)) },
		"one_below_twin_lo": func(i int) float64 { return map[bool]float64{true: -60}[i == 77] + math.Cos(float64(i))/8 },
	} {
		t.Run(name, func(t *testing.T) {
			in, want := perturb(c.Graph, func(key string, v []float64) {
				for i := range v {
					switch key {
					case "log_prob":
						v[i] = lw(i)
					case "sample_log_prob":
						v[i] = 0
					}
				}
			})
			outs := run(in)
			ess := want.Want["ESS"].Float64s()
			require.False(t, math.IsNaN(ess[0]) || math.IsInf(ess[0], 0), "ESS %v", ess[0])
			for _, b := range []string{"go", "default", "ptx"} {
				sameSpecials(t, b+" ESS", ess, outs[b]["ESS"].Float64s(), tol)
			}
		})
	}
}
