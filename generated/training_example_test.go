package generated_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/lossgen/lossgen/generated/clipppo"
	"github.com/lossgen/lossgen/generated/clipppogae"
	"github.com/lossgen/lossgen/generated/gae"
)

// rollout is a synthetic collection of N=64 trajectory rows of T=421 steps, row-major [N, T]
// as the kernels take it: rewards, done/terminated flags and the behaviour policy's
// log-probabilities. What the examples do with it is what a trainer does with a collector's
// batch.
type rollout struct {
	reward, sampleLogProb []float32
	done, terminated      []bool
}

const rows, steps = 64, 421

func newRollout() rollout {
	r := rand.New(rand.NewPCG(1, 2))
	n := rows * steps
	ro := rollout{reward: make([]float32, n), sampleLogProb: make([]float32, n), done: make([]bool, n), terminated: make([]bool, n)}
	for i := range n {
		ro.reward[i] = 1
		ro.sampleLogProb[i] = float32(-0.69 + 0.1*r.NormFloat64())
		ro.terminated[i] = r.IntN(50) == 0 // an episode ends about every 50 steps
		ro.done[i] = ro.terminated[i] || i%steps == steps-1
	}
	return ro
}

// critic is a tabular value function, one value per state (per element of the batch): it is
// all a critic needs to be here, a function of the parameters that the loss's gradient with
// respect to state_value updates.
type critic struct{ v, vNext []float32 }

func newCritic() *critic {
	c := &critic{v: make([]float32, rows*steps), vNext: make([]float32, rows*steps)}
	c.sync()
	return c
}

// sync recomputes next.state_value, the critic at each step's next state (0 past the
// rollout's end, which is a done step).
func (c *critic) sync() {
	for i := range c.v {
		c.vNext[i] = 0
		if (i+1)%steps != 0 {
			c.vNext[i] = c.v[i+1]
		}
	}
}

// step is one SGD step of the critic on ∂loss/∂state_value (a minibatch's elements idx).
func (c *critic) step(idx []int, grad []float32, lr float32) {
	for k, i := range idx {
		c.v[i] -= lr * grad[k]
	}
	c.sync()
}

// The fused GAE+ClipPPO kernel (spec/examples/clip_ppo_gae.yaml) computes the advantage and
// the value target inside every call, from the state values it is given: TorchRL's
// semantics for a loss module that holds a value estimator (ClipPPOLoss with
// make_value_estimator(GAE), called on a batch without an "advantage" key). So each call's
// critic target is recomputed with the current critic, and the critic loss of the same batch
// can rise from one epoch to the next while the critic learns: the target moved. And since
// GAE recurses along T, a call must get whole [N, T] rows (whole trajectories): here every
// call gets all 64 rows; a minibatch of rows needs a kernel generated for that many.
func Example_fusedPerCall() {
	ro, c := newRollout(), newCritic()
	lp := append([]float32(nil), ro.sampleLogProb...) // the current policy: unchanged here, ratio 1
	ent := make([]float32, rows*steps)
	all := make([]int, rows*steps)
	for i := range all {
		all[i] = i
	}
	out, g := clipppogae.NewOutputs(), clipppogae.NewGrads()
	for epoch := 1; epoch <= 4; epoch++ {
		in := &clipppogae.Inputs{
			NextReward: ro.reward, NextDone: ro.done, NextTerminated: ro.terminated,
			StateValue: c.v, NextStateValue: c.vNext, // the current critic: the targets follow it
			LogProb: lp, SampleLogProb: ro.sampleLogProb, Entropy: ent,
		}
		if err := clipppogae.ForwardBackward(in, out, g); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("epoch %d: loss_critic %.2f, mean value_target %.2f\n", epoch, out.LossCritic, mean(out.ValueTarget))
		c.step(all, g.StateValue, 0.5*rows*steps)
	}
	// Output:
	// epoch 1: loss_critic 11.85, mean value_target 12.35
	// epoch 2: loss_critic 11.65, mean value_target 12.65
	// epoch 3: loss_critic 11.46, mean value_target 12.95
	// epoch 4: loss_critic 11.26, mean value_target 13.24
}

// TorchRL's usual recipe: the advantage and value target once per collection, with a
// standalone estimator kernel (spec/examples/gae.yaml; TorchRL: loss_module.value_estimator(data)
// under torch.no_grad()), stored with the batch; then epochs of flat, shuffled minibatches of
// any B elements through a loss-only kernel (spec/examples/clip_ppo.yaml, batch [B], B=4096),
// whose value target stays fixed for the whole collection. A fixed-shape kernel takes B
// elements exactly: 26944 = 6·4096 + 2368 here, and the 2368 left over are dropped each
// epoch (TorchRL's drop_last; a spec with keys.mask could pad them instead).
func Example_perCollection() {
	ro, c := newRollout(), newCritic()
	// Once per collection: GAE on the whole [N, T] batch (a float64 kernel).
	est := gae.NewOutputs()
	in := &gae.Inputs{NextReward: widen(ro.reward), StateValue: widen(c.v), NextStateValue: widen(c.vNext), NextTerminated: ro.terminated, NextDone: ro.done}
	if err := gae.Forward(in, est); err != nil {
		fmt.Println(err)
		return
	}
	adv, target, oldV := narrow(est.Advantage), narrow(est.ValueTarget), append([]float32(nil), c.v...)

	r := rand.New(rand.NewPCG(3, 4))
	perm := r.Perm(rows * steps)
	out, g := clipppo.NewOutputs(), clipppo.NewGrads()
	mb := func(x []float32, idx []int) []float32 {
		y := make([]float32, len(idx))
		for k, i := range idx {
			y[k] = x[i]
		}
		return y
	}
	for epoch := 1; epoch <= 3; epoch++ {
		r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		sum, n := float32(0), 0
		for start := 0; start+clipppo.B <= len(perm); start += clipppo.B {
			idx := perm[start : start+clipppo.B]
			in := &clipppo.Inputs{
				Advantage: mb(adv, idx), ValueTarget: mb(target, idx), // fixed for the collection
				LogProb: mb(ro.sampleLogProb, idx), SampleLogProb: mb(ro.sampleLogProb, idx), Entropy: make([]float32, clipppo.B),
				StateValue: mb(c.v, idx), OldStateValue: mb(oldV, idx),
			}
			if err := clipppo.ForwardBackward(in, out, g); err != nil {
				fmt.Println(err)
				return
			}
			sum, n = sum+out.LossCritic, n+1
			c.step(idx, g.StateValue, 0.25*clipppo.B)
		}
		fmt.Printf("epoch %d: mean loss_critic %.2f over %d minibatches, mean value_target %.2f\n", epoch, sum/float32(n), n, mean(target))
	}
	// Output:
	// epoch 1: mean loss_critic 174.79 over 6 minibatches, mean value_target 12.35
	// epoch 2: mean loss_critic 169.86 over 6 minibatches, mean value_target 12.35
	// epoch 3: mean loss_critic 170.01 over 6 minibatches, mean value_target 12.35
}

func mean(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		s += float64(v)
	}
	return s / float64(len(x))
}

func widen(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func narrow(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}
