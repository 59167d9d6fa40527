// Command mkdata derives the kernel-ready real-data files in golden/data from the recorded
// CartPole rollout imitation_cartpole.npz (see golden/data/README.md for provenance):
//
//	cartpole_rollout.npz    a collector batch [N=64, T=421]: the first 64·421 = 26,944 of the
//	                        26,964 recorded steps, row n holding steps n·421 .. n·421+420
//	cartpole_minibatch.npz  a PPO minibatch [B=4096]: advantage and value_target from GAE
//	                        (γ 0.99, λ 0.95, lossgen's reference interpreter) over the rollout,
//	                        then 4096 steps drawn by a seeded permutation
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
	"github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/spec"
)

const (
	rows, steps = 64, 421
	batch       = 4096
)

func main() {
	src := flag.String("src", "golden/data/imitation_cartpole.npz", "the recorded rollout")
	dir := flag.String("o", "golden/data", "output directory")
	flag.Parse()
	if err := run(*src, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "mkdata:", err)
		os.Exit(1)
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
	if err := golden.WriteNPZ(dir+"/cartpole_rollout.npz", rollout); err != nil {
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
	return golden.WriteNPZ(dir+"/cartpole_minibatch.npz", minibatch)
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
