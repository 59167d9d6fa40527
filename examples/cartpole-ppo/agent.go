package main

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
	"github.com/gomlx/gomlx/pkg/ml/layers"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// hidden is the width of the actor's and the critic's one hidden layer. One layer, because
// GoMLX v0.26's gradient of a matrix product materialises a [batch, in, out] tensor, which
// on the pure-Go backend makes a second 64×64 layer cost 4× the whole update (measured:
// 66 ms against 15 ms for a 512-sample gradient); one layer of 64 solves CartPole.
const hidden = 64

// Agent is the policy and value network, in GoMLX on its pure-Go backend (simplego): an actor
// obs → tanh(64) → logits [A] and a critic obs → tanh(64) → V(obs), with no shared weights,
// trained by GoMLX's Adam on gradients that come from outside the graph (the loss kernel's).
type Agent struct {
	backend backends.Backend
	ctx     *context.Context
	lr      *context.Variable
	infer   *context.Exec // obs [B, 4] → logits [B, A], values [B]
	step    *context.Exec // obs [B, 4], ∂L/∂logits [B, A], ∂L/∂values [B] → one Adam step
}

// NewAgent builds the network with weights drawn from seed and Adam at learning rate lr.
func NewAgent(seed int64, lr float64) (*Agent, error) {
	backend, err := simplego.New("")
	if err != nil {
		return nil, err
	}
	ctx := context.New()
	if err := ctx.SetRNGStateFromSeed(seed); err != nil {
		return nil, err
	}
	a := &Agent{backend: backend, ctx: ctx}
	a.lr = optimizers.LearningRateVar(ctx, dtypes.Float32, lr)
	adam := optimizers.Adam().LearningRate(lr).Done()
	if a.infer, err = context.NewExec(backend, ctx.Checked(false), model); err != nil {
		return nil, err
	}
	a.step, err = context.NewExec(backend, ctx.Checked(false), func(ctx *context.Context, obs, gLogits, gValues *graph.Node) *graph.Node {
		s := surrogate(ctx, obs, gLogits, gValues)
		adam.UpdateGraph(ctx, obs.Graph(), s)
		return s
	})
	return a, err
}

// surrogate is Σ logits·gLogits + Σ values·gValues of the network on obs, with the kernel's
// gradients gLogits, gValues as constants: its gradient with respect to the weights is the
// chain rule through the network of the loss's gradient with respect to the network's outputs.
func surrogate(ctx *context.Context, obs, gLogits, gValues *graph.Node) *graph.Node {
	logits, values := model(ctx, obs)
	return graph.Add(graph.ReduceAllSum(graph.Mul(logits, gLogits)), graph.ReduceAllSum(graph.Mul(values, gValues)))
}

// model is the graph of both networks on obs [B, 4]. The actor's output layer starts near
// zero (weights ~ N(0, 0.01²)), so the first policy is close to uniform.
func model(ctx *context.Context, obs *graph.Node) (logits, values *graph.Node) {
	actor := ctx.In("actor")
	h := graph.Tanh(layers.DenseWithBias(actor.In("hidden"), obs, hidden))
	out := actor.In("out")
	logits = layers.DenseWithBias(out.WithInitializer(initializers.RandomNormalFn(out, 0.01)), h, numActions)
	critic := ctx.In("critic")
	h = graph.Tanh(layers.DenseWithBias(critic.In("hidden"), obs, hidden))
	values = layers.DenseWithBias(critic.In("out"), h, 1)
	return logits, graph.Reshape(values, obs.Shape().Dimensions[0])
}

// Infer returns the logits [B·A] and values [B] of the B observations in obs [B·4].
func (a *Agent) Infer(obs []float32) (logits, values []float32, err error) {
	b := len(obs) / obsDim
	outs, err := a.infer.Exec(tensors.FromFlatDataAndDimensions(obs, b, obsDim))
	if err != nil {
		return nil, nil, err
	}
	if logits, err = tensors.CopyFlatData[float32](outs[0]); err != nil {
		return nil, nil, err
	}
	values, err = tensors.CopyFlatData[float32](outs[1])
	return logits, values, err
}

// Step takes one Adam step down the gradient whose chain rule starts at gLogits [B·A] and
// gValues [B], the loss's gradients with respect to the outputs Infer gives on obs [B·4].
func (a *Agent) Step(obs, gLogits, gValues []float32) error {
	b := len(obs) / obsDim
	if len(gLogits) != b*numActions || len(gValues) != b {
		return fmt.Errorf("agent step: %d observations, %d logit gradients, %d value gradients", b, len(gLogits), len(gValues))
	}
	_, err := a.step.Exec(tensors.FromFlatDataAndDimensions(obs, b, obsDim),
		tensors.FromFlatDataAndDimensions(gLogits, b, numActions),
		tensors.FromFlatDataAndDimensions(gValues, b))
	return err
}

// SetLearningRate changes Adam's learning rate for the next steps.
func (a *Agent) SetLearningRate(lr float64) error {
	return a.lr.SetValue(tensors.FromValue(float32(lr)))
}
