package generated_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lossgen/lossgen/generated/grpostep"
)

// Example_grpoStep trains a toy policy with the GRPO step of
// spec/examples/mc_advantage_grpo.yaml: each of the G prompts gets N sampled responses of up
// to L tokens, each token 1 with probability σ(θ); a response's reward is its share of 1s.
// One ForwardBackward per step computes the group advantages, the clipped token loss and the
// KL to the reference policy (θ₀) over the valid tokens, and the gradient with respect to
// every token's log-prob, which the policy's backward turns into ∂loss/∂θ.
func Example_grpoStep() {
	const G, N, L = grpostep.G, grpostep.N, grpostep.L
	rng := rand.New(rand.NewPCG(1, 2))
	sigmoid := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	theta0 := -1.0
	theta, lr := theta0, 2.0
	in, out, g := grpostep.NewInputs(), grpostep.NewOutputs(), grpostep.NewGrads()
	token := make([]bool, G*N*L)
	for step := 0; step < 30; step++ {
		// Roll out: response s has n tokens (padding after them) and reward = its share of 1s.
		p, p0 := sigmoid(theta), sigmoid(theta0)
		for s := range G * N {
			n, ones := L/2+rng.IntN(L/2+1), 0
			for t := range L {
				i := s*L + t
				in.Mask[i], token[i] = t < n, rng.Float64() < p
				lp, ref := math.Log(1-p), math.Log(1-p0)
				if token[i] {
					lp, ref = math.Log(p), math.Log(p0)
					if t < n {
						ones++
					}
				}
				// On-policy: the behaviour log-probs are the current ones (ratio 1).
				in.LogProb[i], in.SampleLogProb[i], in.RefLogProb[i] = float32(lp), float32(lp), float32(ref)
			}
			in.NextReward[s] = float32(ones) / float32(n)
		}
		if err := grpostep.ForwardBackward(in, out, g); err != nil {
			panic(err)
		}
		// The policy's backward: ∂log σ(θ)/∂θ = 1 − p for a 1, ∂log(1 − σ(θ))/∂θ = −p for a 0.
		grad := 0.0
		for i, gl := range g.LogProb {
			d := -p
			if token[i] {
				d = 1 - p
			}
			grad += float64(gl) * d
		}
		theta -= lr * grad
	}
	fmt.Printf("P(1) = %.2f → %.2f, KL to the reference %.2f\n", sigmoid(theta0), sigmoid(theta), out.KLToRef)
	// Output:
	// P(1) = 0.27 → 0.82, KL to the reference 0.66
}
