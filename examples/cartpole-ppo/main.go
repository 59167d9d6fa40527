// Command cartpole-ppo trains a PPO agent on CartPole-v1 until it is solved (a mean return of
// at least 475 over 100 consecutive episodes), with a lossgen-generated kernel computing the
// loss and its gradients.
//
//	go run . [-seed 1] [-plot curve.png]
//
// Each iteration collects loss.T = 128 steps from each of 8 CartPoles (ppo.go), then runs
// 4 epochs over the rollout in minibatches of loss.N = 2 whole trajectory rows. A minibatch is
// one call of the generated package loss (ppo.yaml: TorchRL's ClipPPOLoss with a categorical
// policy over the actor's logits, fed by GAE computed in the same kernel):
// loss.ForwardBackward returns the losses and their gradients with respect to the network's
// outputs, the logits [N, T, 2] and the values V(s) [N, T], and GoMLX backpropagates those
// through the network and takes an Adam step (agent.go).
//
// Minibatches are whole rows because the kernel is fused: it recomputes GAE's advantages and
// value targets on every call from the values it is given, which come from the current critic,
// and GAE's recursion runs along T, so a minibatch must hold whole trajectory segments (rows
// of the [Envs, T] rollout), shuffled as rows rather than as steps. Recomputing GAE with the
// critic as it learns is what TorchRL's ClipPPOLoss does when the batch holds no advantage; with
// normalize_advantage it learned CartPole reliably (see README.md for the measurements), so
// the example keeps the one fused kernel instead of a standalone GAE pass per rollout and a
// loss-only kernel on shuffled steps.
//
// CartPole is a port of Gymnasium's CartPoleEnv (cartpole.go). Everything random — the
// environments' reset states, the sampled actions, the minibatch order and the initial
// weights — is drawn from -seed, so a run is deterministic given its seed.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	cfg := DefaultConfig
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed: environments, actions, minibatch order, initial weights")
	flag.IntVar(&cfg.MaxSteps, "max-steps", cfg.MaxSteps, "environment steps before giving up (the learning rate anneals to 0 over them)")
	plotPath := flag.String("plot", "", "write the learning curve to this PNG file")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: cartpole-ppo [-seed N] [-max-steps N] [-plot curve.png]")
		os.Exit(2)
	}
	if err := run(cfg, *plotPath); err != nil {
		fmt.Fprintln(os.Stderr, "cartpole-ppo:", err)
		os.Exit(1)
	}
}

// run trains until solved or cfg.MaxSteps, printing one line per iteration, and plots the
// learning curve to plotPath unless it is empty.
func run(cfg Config, plotPath string) error {
	t, err := NewTrainer(cfg)
	if err != nil {
		return err
	}
	start := time.Now()
	var curve []Stats
	for t.SolvedAt == 0 && t.steps < cfg.MaxSteps {
		s, err := t.Iterate()
		if err != nil {
			return err
		}
		curve = append(curve, s)
		fmt.Printf("iter %4d  steps %7d  episodes %5d  return(100) %6.1f  objective %+.4f  critic %8.3f  entropy %+.4f  kl %.4f  clipfrac %.3f  %5.1fs\n",
			s.Iteration, s.Steps, s.Episodes, s.MeanReturn, s.LossObjective, s.LossCritic, s.LossEntropy, s.KLApprox, s.ClipFraction, time.Since(start).Seconds())
	}
	if t.SolvedAt > 0 {
		fmt.Printf("solved: mean return %.1f over the last 100 episodes at step %d (seed %d, %.1fs)\n",
			meanLast(t.Returns, 100), t.SolvedAt, cfg.Seed, time.Since(start).Seconds())
	} else {
		fmt.Printf("not solved in %d steps (seed %d, %.1fs)\n", t.steps, cfg.Seed, time.Since(start).Seconds())
	}
	if plotPath != "" {
		if err := plotCurve(plotPath, curve, t.Returns, cfg.Seed); err != nil {
			return err
		}
		fmt.Println("learning curve written to", plotPath)
	}
	if t.SolvedAt == 0 {
		return fmt.Errorf("not solved")
	}
	return nil
}
