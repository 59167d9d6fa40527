// Command mkdata derives the kernel-ready real-data files in golden/data from the recorded
// CartPole rollout imitation_cartpole.npz (see golden/data/README.md for provenance):
//
//	cartpole_rollout.npz    a collector batch [N=64, T=421]: the first 64·421 = 26,944 of the
//	                        26,964 recorded steps, row n holding steps n·421 .. n·421+420
//	cartpole_minibatch.npz  a PPO minibatch [B=4096]: advantage and value_target from GAE
//	                        (γ 0.99, λ 0.95, lossgen's reference interpreter) over the rollout,
//	                        then 4096 steps drawn by a seeded permutation
//
// and from the recorded Pendulum rollout imitation_pendulum.npz and the logged RLHF rollout
// rlhf_token_kl_sample.npz:
//
//	pendulum_iql.npz        an IQL minibatch [B=1024] with a Q ensemble of 2 [Q=2, B=1024]:
//	                        recorded rewards and actions, values and Q-values derived from
//	                        them by fixed formulas (README.md), 1024 steps drawn by a seeded
//	                        permutation
//	rlhf_tokens.npz         one generated response [B=1, L=12]: the logged token log-probs,
//	                        reference log-probs, critic values and mask, a reward of 0 but
//	                        the sequence reward on the last token, and the logged rewards
//
// Run from the repository root: go run ./golden/data/mkdata
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"gorgonia.org/tensor"

	"github.com/lossgen/lossgen/gen/interp"
	"github.com/lossgen/lossgen/gen/lower"
	goldenw "github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/spec"
)

const (
	rows, steps = 64, 421
	batch       = 4096
)

func main() {
	src := flag.String("src", "golden/data/imitation_cartpole.npz", "the recorded rollout")
	pendulum := flag.String("pendulum", "golden/data/imitation_pendulum.npz", "the recorded Pendulum rollout")
	rlhf := flag.String("rlhf", "golden/data/rlhf_token_kl_sample.npz", "the logged RLHF rollout")
	dir := flag.String("o", "golden/data", "output directory")
	flag.Parse()
	for _, err := range []error{run(*src, *dir), pendulumIQL(*pendulum, *dir), rlhfTokens(*rlhf, *dir)} {
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkdata:", err)
			os.Exit(1)
		}
	}
}

func run(src, dir string) error {
	raw, err := golden.ReadNPZ(src)
	if err != nil {
		return err
	}
	n := rows * steps
	f32 := func(name string) []float32 { return raw[name].Data.([]float32)[:n] }
	flags := func(name string) []bool { return raw[name].Data.([]bool)[:n] }
	logits := raw["behaviour_logits"].Data.([]float32)
	actions := raw["actions"].Data.([]int64)

	// The current policy at the first PPO epoch is the behaviour policy: its log-prob of the
	// taken action and its entropy, from the recorded logits, in float64, rounded once.
	logProb := make([]float32, n)
	entropy := make([]float32, n)
	var maxDiff float64
	for i := 0; i < n; i++ {
		z := []float64{float64(logits[2*i]), float64(logits[2*i+1])}
		m := math.Max(z[0], z[1])
		lse := m + math.Log(math.Exp(z[0]-m)+math.Exp(z[1]-m))
		logProb[i] = float32(z[actions[i]] - lse)
		var h float64
		for _, zk := range z {
			p := math.Exp(zk - lse)
			h -= p * (zk - lse)
		}
		entropy[i] = float32(h)
		maxDiff = math.Max(maxDiff, math.Abs(float64(logProb[i])-float64(f32("behaviour_logp")[i])))
	}
	fmt.Printf("log_prob vs recorded behaviour_logp: max |diff| %.3g\n", maxDiff)

	shape := []int{rows, steps}
	rollout := map[string]golden.Array{
		"log_prob":         {Shape: shape, Data: logProb},
		"sample_log_prob":  {Shape: shape, Data: f32("behaviour_logp")},
		"entropy":          {Shape: shape, Data: entropy},
		"state_value":      {Shape: shape, Data: f32("values")},
		"next.state_value": {Shape: shape, Data: f32("next_values")},
		"next.reward":      {Shape: shape, Data: f32("rewards")},
		"next.done":        {Shape: shape, Data: flags("dones")},
		"next.terminated":  {Shape: shape, Data: flags("terminated")},
		"logits":           {Shape: []int{rows, steps, 2}, Data: logits[:2*n]},
		"action":           {Shape: shape, Data: actions[:n]},
	}
	if err := goldenw.WriteNPZ(dir+"/cartpole_rollout.npz", rollout); err != nil {
		return err
	}

	adv, vt, err := gae(rollout)
	if err != nil {
		return err
	}
	perm := rand.New(rand.NewPCG(2026, 11)).Perm(n)[:batch]
	pick := func(x []float32) []float32 {
		out := make([]float32, batch)
		for i, j := range perm {
			out[i] = x[j]
		}
		return out
	}
	mb := []int{batch}
	value := pick(f32("values"))
	minibatch := map[string]golden.Array{
		"log_prob":        {Shape: mb, Data: pick(logProb)},
		"sample_log_prob": {Shape: mb, Data: pick(f32("behaviour_logp"))},
		"entropy":         {Shape: mb, Data: pick(entropy)},
		"state_value":     {Shape: mb, Data: value},
		"old_state_value": {Shape: mb, Data: value},
		"advantage":       {Shape: mb, Data: pick(adv)},
		"value_target":    {Shape: mb, Data: pick(vt)},
		"logits":          {Shape: []int{batch, 2}, Data: pickPairs(logits[:2*n], perm)},
		"action":          {Shape: mb, Data: pickInt(actions[:n], perm)},
	}
	return goldenw.WriteNPZ(dir+"/cartpole_minibatch.npz", minibatch)
}

// gae runs TorchRL's GAE (γ 0.99, λ 0.95) on the rollout with the reference interpreter.
func gae(rollout map[string]golden.Array) (adv, vt []float32, err error) {
	// param_dtype float64: the shipped file was made with γ and λ in double.
	s, err := spec.Parse("mkdata.yaml", []byte(`
package: mkdata
dtype: float32
param_dtype: float64
dims: {N: 64, T: 421}
batch: [N, T]
estimator: {type: gae, gamma: 0.99, lmbda: 0.95}
`), lower.Registry())
	if err != nil {
		return nil, nil, err
	}
	g, _, err := lower.Lower(s)
	if err != nil {
		return nil, nil, err
	}
	in := map[string]*tensor.Dense{}
	for _, x := range g.Inputs {
		in[x.Name] = interp.New(x.Shape, rollout[x.Name].Float64s())
	}
	out, err := interp.Run(g, in)
	if err != nil {
		return nil, nil, err
	}
	round := func(x []float64) []float32 {
		o := make([]float32, len(x))
		for i, v := range x {
			o[i] = float32(v)
		}
		return o
	}
	return round(interp.Data(out["advantage"])), round(interp.Data(out["value_target"])), nil
}

// pickPairs gathers the (logit 0, logit 1) pairs of the picked steps.
func pickPairs(x []float32, perm []int) []float32 {
	out := make([]float32, 0, 2*len(perm))
	for _, j := range perm {
		out = append(out, x[2*j], x[2*j+1])
	}
	return out
}

// pickInt gathers the picked steps' actions.
func pickInt(x []int64, perm []int) []int64 {
	out := make([]int64, len(perm))
	for i, j := range perm {
		out[i] = x[j]
	}
	return out
}

// pendulumIQL derives an IQL minibatch from the recorded Pendulum rollout (README.md states
// each formula). V is the behaviour policy's discounted return-to-go at the expert's γ 0.9
// within the recorded episode, each Q member adds an action-dependent term to V, the target
// ensemble lags the online one, and the policy is a Gaussian around a fixed PD controller. All
// in float64, rounded to float32 once.
func pendulumIQL(src, dir string) error {
	raw, err := golden.ReadNPZ(src)
	if err != nil {
		return err
	}
	obs := raw["obs"].Data.([]float32)
	act := raw["actions"].Data.([]float32)
	rew := raw["rewards"].Data.([]float32)
	term := raw["terminated"].Data.([]bool)
	lengths := raw["episode_lengths"].Data.([]int64)
	n := len(rew)
	const gamma = 0.9
	// Return-to-go within each episode; the truncated episode's last next value is 0.
	g := make([]float64, n)
	next := make([]float64, n)
	end := n
	for e := len(lengths) - 1; e >= 0; e-- {
		start := end - int(lengths[e])
		acc := 0.0
		for t := end - 1; t >= start; t-- {
			next[t] = acc
			acc = float64(rew[t]) + gamma*acc
			g[t] = acc
		}
		end = start
	}
	if end != 0 {
		return fmt.Errorf("%s: episode lengths cover %d of %d steps", src, n-end, n)
	}
	const B, Q = 1024, 2
	perm := rand.New(rand.NewPCG(2026, 12)).Perm(n)[:B]
	f := func(x float64) float32 { return float32(x) }
	v, vn, r, lp := make([]float32, B), make([]float32, B), make([]float32, B), make([]float32, B)
	q, qt := make([]float32, Q*B), make([]float32, Q*B)
	done := make([]bool, B)
	for i, t := range perm {
		a := float64(act[t])
		theta := math.Atan2(float64(obs[3*t+1]), float64(obs[3*t]))
		mu := math.Max(-2, math.Min(2, -(2*theta+0.5*float64(obs[3*t+2]))))
		const sigma = 0.5
		lp[i] = f(-(a-mu)*(a-mu)/(2*sigma*sigma) - math.Log(sigma) - 0.5*math.Log(2*math.Pi))
		v[i], vn[i], r[i], done[i] = f(g[t]), f(next[t]), rew[t], term[t]
		for k, c := range []float64{1.0, 0.9} {
			qk := g[t] + c*a + 0.5*float64(k)
			q[k*B+i] = f(qk)
			qt[k*B+i] = f(0.8*qk + 0.2*g[t])
		}
	}
	shape := []int{B}
	return goldenw.WriteNPZ(dir+"/pendulum_iql.npz", map[string]golden.Array{
		"state_value":               {Shape: shape, Data: v},
		"next.state_value":          {Shape: shape, Data: vn},
		"next.reward":               {Shape: shape, Data: r},
		"next.terminated":           {Shape: shape, Data: done},
		"log_prob":                  {Shape: shape, Data: lp},
		"state_action_value":        {Shape: []int{Q, B}, Data: q},
		"target_state_action_value": {Shape: []int{Q, B}, Data: qt},
	})
}

// rlhfTokens lays the logged RLHF response out as a token batch [B=1, L=12] for the KL reward
// and a PPO loss after it: the reward is 0 but the sequence reward on the last token (the
// logged token_rewards are that minus 0.2·(logprobs − ref_logprobs)), the response ends
// (terminated) at its last token, and next.state_value is the next token's value (0 after the
// last).
func rlhfTokens(src, dir string) error {
	raw, err := golden.ReadNPZ(src)
	if err != nil {
		return err
	}
	lp := raw["logprobs"].Data.([]float32)
	L := len(lp)
	reward := make([]float32, L)
	reward[L-1] = raw["sequence_reward"].Data.([]float32)[0]
	values := raw["values"].Data.([]float32)
	next := make([]float32, L)
	copy(next, values[1:])
	end := make([]bool, L)
	end[L-1] = true
	shape := []int{1, L}
	return goldenw.WriteNPZ(dir+"/rlhf_tokens.npz", map[string]golden.Array{
		"log_prob":         {Shape: shape, Data: lp},
		"sample_log_prob":  {Shape: shape, Data: lp},
		"ref_log_prob":     {Shape: shape, Data: raw["ref_logprobs"].Data},
		"mask":             {Shape: shape, Data: raw["mask"].Data},
		"next.reward":      {Shape: shape, Data: reward},
		"state_value":      {Shape: shape, Data: values},
		"next.state_value": {Shape: shape, Data: next},
		"next.done":        {Shape: shape, Data: end},
		"next.terminated":  {Shape: shape, Data: end},
		"token_rewards":    {Shape: shape, Data: raw["token_rewards"].Data},
	})
}
