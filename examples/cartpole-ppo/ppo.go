package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lossgen/lossgen/examples/cartpole-ppo/loss"
)

// Config holds the trainer's hyperparameters. The loss's own (γ, λ, ε, the coefficients, the
// minibatch shape loss.N × loss.T) are baked into the generated kernel: see ppo.yaml.
type Config struct {
	Seed     uint64
	Envs     int     // parallel environments, one trajectory row each; a multiple of loss.N
	Epochs   int     // passes over each rollout
	LR       float64 // Adam's learning rate, annealed linearly to 0 over MaxSteps
	MaxSteps int     // environment steps before giving up unsolved
}

// DefaultConfig is the configuration `go run .` uses.
var DefaultConfig = Config{Seed: 1, Envs: 8, Epochs: 4, LR: 2.5e-3, MaxSteps: 500_000}

// Stats summarise one iteration (a rollout and its update), averaged over its minibatches.
type Stats struct {
	Iteration, Steps, Episodes int
	MeanReturn                 float64 // of the last 100 finished episodes (fewer at first)
	LossObjective, LossCritic  float64
	LossEntropy, KLApprox      float64
	ClipFraction               float64
}

// Trainer runs PPO: it collects loss.T steps from each of Envs CartPoles with the current
// policy, then runs Epochs passes over the rollout in minibatches of loss.N whole rows, each a
// call of the generated kernel's ForwardBackward and one Adam step of the network.
type Trainer struct {
	cfg   Config
	agent *Agent
	rng   *rand.Rand
	envs  []*CartPole
	cur   []float32 // the envs' current observations [Envs, 4]

	// The rollout, row-major [Envs, loss.T] (obs and nextObs with a trailing 4): row e is
	// environment e's trajectory, so a kernel row is a contiguous slice.
	obs, nextObs []float32
	action       []int64
	logProb      []float32 // log π_old(action), the kernel's sample_log_prob
	reward       []float32
	terminated   []bool
	done         []bool

	mb      minibatch
	epRet   []float64 // running returns of the envs' episodes
	Returns []float64 // every finished episode's return, in order
	steps   int
	iter    int
	// SolvedAt is the environment step at which the last 100 episodes first averaged ≥ 475;
	// 0 while unsolved.
	SolvedAt int
}

// minibatch holds one kernel call's rows, gathered from the rollout.
type minibatch struct {
	obs2 []float32 // obs then nextObs, [2·N·T, 4]: one network call for V(s) and V(s')
	in   loss.Inputs
	out  *loss.Outputs
	g    *loss.Grads
}

// NewTrainer returns a trainer whose environments, action sampling and weights are drawn
// from cfg.Seed: two trainers of one Config compute the same run.
func NewTrainer(cfg Config) (*Trainer, error) {
	if cfg.Envs <= 0 || cfg.Envs%loss.N != 0 {
		return nil, fmt.Errorf("envs = %d: want a positive multiple of the kernel's N = %d", cfg.Envs, loss.N)
	}
	agent, err := NewAgent(int64(cfg.Seed), cfg.LR)
	if err != nil {
		return nil, err
	}
	n := cfg.Envs * loss.T
	t := &Trainer{
		cfg: cfg, agent: agent, rng: rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		cur: make([]float32, cfg.Envs*obsDim), epRet: make([]float64, cfg.Envs),
		obs: make([]float32, n*obsDim), nextObs: make([]float32, n*obsDim),
		action: make([]int64, n), logProb: make([]float32, n), reward: make([]float32, n),
		terminated: make([]bool, n), done: make([]bool, n),
	}
	for e := 0; e < cfg.Envs; e++ {
		env := NewCartPole(t.rng)
		o := env.Reset()
		copy(t.cur[e*obsDim:], o[:])
		t.envs = append(t.envs, env)
	}
	k := loss.N * loss.T
	t.mb = minibatch{obs2: make([]float32, 2*k*obsDim), out: loss.NewOutputs(), g: loss.NewGrads()}
	t.mb.in = loss.Inputs{
		NextReward: make([]float32, k), NextTerminated: make([]bool, k), NextDone: make([]bool, k),
		Action: make([]int64, k), SampleLogProb: make([]float32, k),
	}
	return t, nil
}

// Iterate runs one rollout and the update on it.
func (t *Trainer) Iterate() (Stats, error) {
	if err := t.collect(); err != nil {
		return Stats{}, err
	}
	if t.cfg.MaxSteps > 0 {
		if err := t.agent.SetLearningRate(t.cfg.LR * max(0, 1-float64(t.steps)/float64(t.cfg.MaxSteps))); err != nil {
			return Stats{}, err
		}
	}
	s, err := t.update()
	t.iter++
	s.Iteration, s.Steps, s.Episodes, s.MeanReturn = t.iter, t.steps, len(t.Returns), meanLast(t.Returns, 100)
	return s, err
}

// collect steps every environment loss.T times with actions sampled from the policy.
func (t *Trainer) collect() error {
	for step := 0; step < loss.T; step++ {
		logits, _, err := t.agent.Infer(t.cur)
		if err != nil {
			return err
		}
		for e, env := range t.envs {
			i := e*loss.T + step
			z := logits[e*numActions : (e+1)*numActions]
			a := sample(t.rng, z)
			copy(t.obs[i*obsDim:(i+1)*obsDim], t.cur[e*obsDim:])
			o, r, term, trunc := env.Step(a)
			t.action[i], t.logProb[i] = int64(a), logSoftmax(z, a)
			t.reward[i], t.terminated[i], t.done[i] = r, term, term || trunc
			// next.* is the observation the step led to: the final one when the episode
			// ended (GAE bootstraps from it after a truncation), not the reset's.
			copy(t.nextObs[i*obsDim:(i+1)*obsDim], o[:])
			t.epRet[e] += float64(r)
			if term || trunc {
				t.finish(e)
				o = env.Reset()
			}
			copy(t.cur[e*obsDim:], o[:])
		}
		t.steps += len(t.envs)
	}
	return nil
}

// finish records env e's finished episode.
func (t *Trainer) finish(e int) {
	t.Returns = append(t.Returns, t.epRet[e])
	t.epRet[e] = 0
	if t.SolvedAt == 0 && len(t.Returns) >= 100 && meanLast(t.Returns, 100) >= solvedReturn {
		t.SolvedAt = t.steps + e + 1
	}
}

// update runs Epochs passes over the rollout, each over its rows in a fresh random order,
// loss.N rows a kernel call.
func (t *Trainer) update() (Stats, error) {
	var s Stats
	rows := make([]int, t.cfg.Envs)
	for i := range rows {
		rows[i] = i
	}
	calls := 0
	for epoch := 0; epoch < t.cfg.Epochs; epoch++ {
		t.rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		for b := 0; b < len(rows); b += loss.N {
			out, err := t.minibatchStep(rows[b : b+loss.N])
			if err != nil {
				return s, err
			}
			s.LossObjective += float64(out.LossObjective)
			s.LossCritic += float64(out.LossCritic)
			s.LossEntropy += float64(out.LossEntropy)
			s.KLApprox += float64(out.KLApprox)
			s.ClipFraction += float64(out.ClipFraction)
			calls++
		}
	}
	c := float64(calls)
	s.LossObjective, s.LossCritic, s.LossEntropy = s.LossObjective/c, s.LossCritic/c, s.LossEntropy/c
	s.KLApprox, s.ClipFraction = s.KLApprox/c, s.ClipFraction/c
	return s, nil
}

// minibatchStep runs the kernel on the rows (evaluate) and takes an Adam step along its
// gradients.
func (t *Trainer) minibatchStep(rows []int) (*loss.Outputs, error) {
	if err := t.evaluate(rows); err != nil {
		return nil, err
	}
	k := loss.N * loss.T
	return t.mb.out, t.agent.Step(t.mb.obs2[:k*obsDim], t.mb.g.Logits, t.mb.g.StateValue)
}

// evaluate gathers the rollout rows into the kernel's [loss.N, loss.T] batch, evaluates the
// network on it (V(s') with the current critic too: the kernel's GAE uses both) and runs the
// kernel's ForwardBackward into t.mb.
func (t *Trainer) evaluate(rows []int) error {
	mb, T := &t.mb, loss.T
	k := loss.N * T
	for j, r := range rows {
		src, dst := r*T, j*T
		copy(mb.obs2[dst*obsDim:(dst+T)*obsDim], t.obs[src*obsDim:(src+T)*obsDim])
		copy(mb.obs2[(k+dst)*obsDim:(k+dst+T)*obsDim], t.nextObs[src*obsDim:(src+T)*obsDim])
		copy(mb.in.NextReward[dst:dst+T], t.reward[src:src+T])
		copy(mb.in.NextTerminated[dst:dst+T], t.terminated[src:src+T])
		copy(mb.in.NextDone[dst:dst+T], t.done[src:src+T])
		copy(mb.in.Action[dst:dst+T], t.action[src:src+T])
		copy(mb.in.SampleLogProb[dst:dst+T], t.logProb[src:src+T])
	}
	logits, values, err := t.agent.Infer(mb.obs2)
	if err != nil {
		return err
	}
	mb.in.Logits, mb.in.StateValue, mb.in.NextStateValue = logits[:k*numActions], values[:k], values[k:]
	return loss.ForwardBackward(&mb.in, mb.out, mb.g)
}

// sample draws an action from the categorical distribution softmax(z).
func sample(rng *rand.Rand, z []float32) int {
	u := rng.Float64()
	for a := range z {
		u -= math.Exp(float64(logSoftmax(z, a)))
		if u < 0 {
			return a
		}
	}
	return len(z) - 1
}

// logSoftmax is log softmax(z)_a.
func logSoftmax(z []float32, a int) float32 {
	m := math.Inf(-1)
	for _, v := range z {
		m = max(m, float64(v))
	}
	s := 0.0
	for _, v := range z {
		s += math.Exp(float64(v) - m)
	}
	return float32(float64(z[a]) - m - math.Log(s))
}

// meanLast is the mean of the last n values of xs (of all of them when there are fewer; 0
// for none).
func meanLast(xs []float64, n int) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = xs[max(0, len(xs)-n):]
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
