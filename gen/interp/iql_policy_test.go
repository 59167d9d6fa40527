package interp_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Continuous IQLLoss with its actor evaluated in the kernel: the Q ensembles are §9.4's
// [Q, B] values at the stored action, exactly as with log_prob as an input, and the action
// is a float point [B, D] that only log π reads. So loss_value, loss_qvalue, td_error and the
// Q gradient are §9.4's; loss_actor and entropy use the hand-computed log π, and the actor's
// gradient reaches loc and scale through it.
func TestIQLContinuousPolicyHandValues(t *testing.T) {
	loc := []float64{0.1, -0.2, 0.0, 0.3, -0.5, 0.25} // [B=3, D=2]
	scale := []float64{0.5, 1.0, 0.8, 1.2, 0.6, 0.9}
	action := []float64{0.2, 0.4, -0.3, 0.1, 0.0, -0.6}
	w := []float64{math.Exp(0.9), math.Exp(-1.5), 100} // min(exp(3·(min_k Q'_k − V)), 100), §9.4
	for _, dist := range []string{"normal", "tanh_normal"} {
		t.Run(dist, func(t *testing.T) {
			in := map[string][]float64{"loc": loc, "scale": scale, "action": action}
			for k, v := range iql94 {
				if k != "log_prob" {
					in[k] = v
				}
			}
			src := "package: p\ndtype: float64\nparam_dtype: float64\ndims: {Q: 2, B: 3, D: 2}\nbatch: [B]\n" +
				"loss: {type: iql, expectile: 0.7, temperature: 3.0, distribution: " + dist + ", action_dim: D}\n"
			out := evalGrad(t, src, in)

			// log π(a) = Σ_d log N(x_d; μ_d, σ_d) (− log(1 − a_d²) for TanhNormal, x = atanh a),
			// ∂/∂μ = (x − μ)/σ², ∂/∂σ = −1/σ + (x − μ)²/σ³.
			lp := make([]float64, 3)
			var dLoc, dScale []float64
			for i, a := range action {
				x := a
				if dist == "tanh_normal" {
					x = math.Atanh(a)
					lp[i/2] -= math.Log(1 - a*a)
				}
				mu, s := loc[i], scale[i]
				lp[i/2] += -(x-mu)*(x-mu)/(2*s*s) - math.Log(s) - 0.5*math.Log(2*math.Pi)
				// loss_actor = mean(−w·lp): ∂/∂lp_b = −w_b/3.
				g := -w[i/2] / 3
				dLoc = append(dLoc, g*(x-mu)/(s*s))
				dScale = append(dScale, g*(-1/s+(x-mu)*(x-mu)/(s*s*s)))
			}
			near(t, []float64{-(w[0]*lp[0] + w[1]*lp[1] + w[2]*lp[2]) / 3}, out["loss_actor"], hand, "loss_actor")
			near(t, []float64{-(lp[0] + lp[1] + lp[2]) / 3}, out["entropy"], hand, "entropy")
			near(t, dLoc, out["grad.loc"], hand, "grad.loc")
			near(t, dScale, out["grad.scale"], hand, "grad.scale")

			// Q(s, a) at the stored action: §9.4's numbers, untouched by the action.
			near(t, []float64{0.9793333333}, out["loss_value"], 1e-10, "loss_value")
			near(t, []float64{2.0899266667}, out["loss_qvalue"], 1e-10, "loss_qvalue")
			near(t, []float64{0.630436, 0.473344, 12.25}, out["td_error"], hand, "td_error")
			near(t, []float64{-0.14, 0.1, -0.9333333333}, out["grad.state_value"], 1e-10, "grad.state_value")
			near(t, []float64{-0.594 / 3, -0.688 / 3, 1.0 / 3, -0.794 / 3, -0.288 / 3, 1.0 / 3}, out["grad.state_action_value"], hand, "grad.state_action_value")
			_, ok := out["grad.action"]
			require.False(t, ok, "the action gets no gradient")
		})
	}
}
