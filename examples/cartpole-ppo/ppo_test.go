package main

import (
	"math"
	"reflect"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/lossgen/lossgen/examples/cartpole-ppo/loss"
)

// rolledOut is a trainer that has collected one rollout and evaluated the kernel on rows 0
// and 1 of it (t.mb holds the inputs, outputs and gradients).
func rolledOut(t *testing.T) *Trainer {
	t.Helper()
	cfg := DefaultConfig
	cfg.Seed = 3
	tr, err := NewTrainer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.collect(); err != nil {
		t.Fatal(err)
	}
	if err := tr.evaluate([]int{0, 1}); err != nil {
		t.Fatal(err)
	}
	return tr
}

// weightGrad is GoMLX's gradient of the surrogate Agent.Step descends with respect to the
// variable scope/weights: the chain rule through the network from the kernel's gradients.
func weightGrad(t *testing.T, a *Agent, scope string, obs, gLogits, gValues []float32) []float32 {
	t.Helper()
	b := len(obs) / obsDim
	e, err := context.NewExec(a.backend, a.ctx.Checked(false), func(ctx *context.Context, obs, gl, gv *graph.Node) *graph.Node {
		return graph.Gradient(surrogate(ctx, obs, gl, gv), ctx.InspectVariable(scope, "weights").ValueGraph(obs.Graph()))[0]
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Exec1(tensors.FromFlatDataAndDimensions(obs, b, obsDim),
		tensors.FromFlatDataAndDimensions(gLogits, b, numActions), tensors.FromFlatDataAndDimensions(gValues, b))
	if err != nil {
		t.Fatal(err)
	}
	g, err := tensors.CopyFlatData[float32](out)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// nudge adds d to element i of the variable scope/weights.
func nudge(t *testing.T, a *Agent, scope string, i int, d float32) {
	t.Helper()
	v := a.ctx.InspectVariable(scope, "weights")
	w, err := tensors.CopyFlatData[float32](v.MustValue())
	if err != nil {
		t.Fatal(err)
	}
	w[i] += d
	if err := v.SetValue(tensors.FromFlatDataAndDimensions(w, v.Shape().Dimensions...)); err != nil {
		t.Fatal(err)
	}
}

// TestActorGradient checks the actor's weight gradients — the kernel's ∂L/∂logits taken
// through the network by GoMLX — against central differences of the kernel's summed loss
// (Forward) on a real rollout. The critic is untouched, so the advantages (which TorchRL
// detaches) stay what they were.
func TestActorGradient(t *testing.T) {
	tr := rolledOut(t)
	mb, k := &tr.mb, loss.N*loss.T
	obs := append([]float32(nil), mb.obs2[:k*obsDim]...)
	in := mb.in // its value slices stay those of the unperturbed critic
	const scope = "/actor/hidden/dense"
	grad := weightGrad(t, tr.agent, scope, obs, mb.g.Logits, mb.g.StateValue)
	total := func() float64 {
		logits, _, err := tr.agent.Infer(obs)
		if err != nil {
			t.Fatal(err)
		}
		in.Logits = logits
		out := loss.NewOutputs()
		if err := loss.Forward(&in, out); err != nil {
			t.Fatal(err)
		}
		return float64(out.LossObjective) + float64(out.LossEntropy) + float64(out.LossCritic)
	}
	// h is large for float32: the loss's rounding (~1e-8) over 2h is the differences' noise.
	const h = 1e-2
	for _, i := range []int{0, 17, 100, 255} {
		nudge(t, tr.agent, scope, i, h)
		up := total()
		nudge(t, tr.agent, scope, i, -2*h)
		down := total()
		nudge(t, tr.agent, scope, i, h)
		fd := (up - down) / (2 * h)
		if g := float64(grad[i]); math.Abs(fd-g) > 0.01*math.Abs(g)+1e-6 {
			t.Errorf("∂L/∂w[%d]: backprop %.6g, central difference %.6g", i, g, fd)
		}
	}
}

// TestCriticGradient checks the critic's weight gradients from the kernel's ∂L/∂V against
// central differences of the critic loss with the kernel's value targets held fixed (TorchRL
// detaches them): critic_coeff · mean((V(s) − value_target)²).
func TestCriticGradient(t *testing.T) {
	if loss.LossCriticType != "l2" {
		t.Fatalf("the test's critic loss is l2; ppo.yaml has %s", loss.LossCriticType)
	}
	tr := rolledOut(t)
	mb, k := &tr.mb, loss.N*loss.T
	obs := append([]float32(nil), mb.obs2[:k*obsDim]...)
	target := append([]float32(nil), mb.out.ValueTarget...)
	const scope = "/critic/hidden/dense"
	grad := weightGrad(t, tr.agent, scope, obs, mb.g.Logits, mb.g.StateValue)
	critic := func() float64 {
		_, values, err := tr.agent.Infer(obs)
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i, v := range values {
			d := float64(v) - float64(target[i])
			s += d * d
		}
		return loss.CriticCoeff * s / float64(k)
	}
	if got, want := critic(), float64(mb.out.LossCritic); math.Abs(got-want) > 1e-4*want {
		t.Fatalf("critic loss by hand %v, kernel's loss_critic %v", got, want)
	}
	const h = 1e-2
	for _, i := range []int{0, 33, 130, 200} {
		nudge(t, tr.agent, scope, i, h)
		up := critic()
		nudge(t, tr.agent, scope, i, -2*h)
		down := critic()
		nudge(t, tr.agent, scope, i, h)
		fd := (up - down) / (2 * h)
		if g := float64(grad[i]); math.Abs(fd-g) > 0.002*math.Abs(g)+1e-6 {
			t.Errorf("∂L/∂w[%d]: backprop %.6g, central difference %.6g", i, g, fd)
		}
	}
}

// TestDeterministic checks that two trainers of one seed compute the same iteration.
func TestDeterministic(t *testing.T) {
	run := func() (Stats, []float64) {
		tr, err := NewTrainer(DefaultConfig)
		if err != nil {
			t.Fatal(err)
		}
		s, err := tr.Iterate()
		if err != nil {
			t.Fatal(err)
		}
		_, values, err := tr.agent.Infer(tr.cur)
		if err != nil {
			t.Fatal(err)
		}
		return s, append(tr.Returns, float64(values[0]))
	}
	s1, r1 := run()
	s2, r2 := run()
	if s1 != s2 || !reflect.DeepEqual(r1, r2) {
		t.Errorf("same seed, different runs:\n%+v %v\n%+v %v", s1, r1, s2, r2)
	}
	if s1.Episodes == 0 || s1.LossCritic == 0 {
		t.Errorf("an iteration that finished no episode or has no critic loss: %+v", s1)
	}
}
