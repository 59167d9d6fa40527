package generated_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/lossgen/lossgen/generated/dqn"
)

// Example_dqnStep trains a tabular Q-function with the DQN loss of spec/examples/dqn.yaml
// (TorchRL's DQNLoss with TD(0), γ = 0.99, l2): on a corridor of 5 cells, action 0 moves right,
// action 1 left and the other four stay; reaching the last cell ends the episode with reward 1.
// Each step draws a replay minibatch of B transitions from a random behaviour policy; the
// current table gives action_value on s, a target copy (synced every 10 steps) gives
// next.action_value on s', and one ForwardBackward gives the loss and ∂loss/∂action_value,
// nonzero at each stored action only, which the table's backward applies to its rows.
func Example_dqnStep() {
	const B, A, cells = dqn.B, dqn.A, 5
	rng := rand.New(rand.NewPCG(3, 4))
	var q, target [cells][A]float32
	in, out, g := dqn.NewInputs(), dqn.NewOutputs(), dqn.NewGrads()
	state := make([]int, B)
	for step := 0; step < 300; step++ {
		if step%10 == 0 {
			target = q
		}
		for i := range B {
			s, a := rng.IntN(cells-1), rng.IntN(A) // any non-terminal cell, any action
			next := s
			switch a {
			case 0:
				next = s + 1
			case 1:
				next = max(s-1, 0)
			}
			state[i] = s
			in.Action[i] = int64(a)
			in.NextTerminated[i] = next == cells-1
			in.NextReward[i] = 0
			if next == cells-1 {
				in.NextReward[i] = 1
			}
			copy(in.ActionValue[i*A:(i+1)*A], q[s][:])
			copy(in.NextActionValue[i*A:(i+1)*A], target[next][:])
		}
		if err := dqn.ForwardBackward(in, out, g); err != nil {
			panic(err)
		}
		for i, s := range state { // the table's backward: SGD on the rows the batch read
			for a := range A {
				q[s][a] -= 4 * g.ActionValue[i*A+a]
			}
		}
	}
	greedy := make([]int, cells-1)
	for s := range greedy {
		for a := range A {
			if q[s][a] > q[s][greedy[s]] {
				greedy[s] = a
			}
		}
	}
	fmt.Printf("greedy actions %v, Q(0, right) = %.3f (0.99³ = %.3f), loss below 1e-9: %v\n", greedy, q[0][0], 0.99*0.99*0.99, out.Loss < 1e-9)
	// Output:
	// greedy actions [0 0 0 0], Q(0, right) = 0.970 (0.99³ = 0.970), loss below 1e-9: true
}
