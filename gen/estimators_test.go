package gen_test

import (
	"fmt"
	"testing"
)

// TestEstimatorShapes runs every value estimator on every backend (the pure-Go kernel, the
// default build's AVX2 kernel, the PTX in the simulator) against the interpreter on shapes the
// example packages do not have: one step (T = 1), rows shorter than a vector, and time-major
// batches whose scan runs along the outer dim, with the golden cases' random and done/
// terminated patterns (a terminal and a truncation in the middle, terminated without done,
// done on the last step, done everywhere).
//
// The default run checks one configuration of each estimator, together float32 and float64,
// one step, rows shorter than a vector, time-major batches, V-trace's thresholds and the
// averaging options; LOSSGEN_FULL=1 checks every configuration.
func TestEstimatorShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	for _, c := range []struct {
		est, dtype, dims, batch, extra string
		def                            bool // in the default run
	}{
		{"gae", "float32", "{N: 3, T: 1}", "[N, T]", "lmbda: 0.9", false},
		{"td0", "float64", "{N: 5, T: 1}", "[N, T]", "average_rewards: true", true},
		{"td1", "float32", "{N: 4, T: 9}", "[N, T]", "", true},
		{"td1", "float64", "{N: 6, T: 1}", "[N, T]", "", false},
		{"td_lambda", "float32", "{T: 9, N: 11}", "[T, N]", "lmbda: 0.8, time_dim: T", true},
		{"td_lambda", "float64", "{N: 3, T: 5}", "[N, T]", "lmbda: 0.5, average_rewards: true", false},
		{"vtrace", "float32", "{N: 7, T: 3}", "[N, T]", "rho_thresh: 1.5, c_thresh: 0.9", true},
		{"vtrace", "float64", "{T: 6, N: 5}", "[T, N]", "time_dim: T, average_adv: true", false},
		{"gae", "float64", "{T: 13, N: 3}", "[T, N]", "lmbda: 0.95, time_dim: T, average_gae: true", true},
	} {
		name := fmt.Sprintf("%s_%s_%s", c.est, c.dtype, c.dims)
		t.Run(name, func(t *testing.T) {
			if !c.def {
				sweepOnly(t)
			}
			t.Parallel()
			src := fmt.Sprintf("package: p\ndtype: %s\ndims: %s\nbatch: %s\nestimator: {type: %s, gamma: 0.9", c.dtype, c.dims, c.batch, c.est)
			if c.extra != "" {
				src += ", " + c.extra
			}
			checkAllBackends(t, src+"}\n")
		})
	}
}
