// Package lower turns a validated spec into an IR graph. Each loss, estimator and transform
// is a builder function here (clip_ppo.go, gae.go, ...) that states its TorchRL math with
// ir.Builder ops; nothing below this package knows about losses.
package lower

import (
	"fmt"
	"sort"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// lowerer holds the state of one lowering: the builder and the inputs declared so far.
type lowerer struct {
	s      *spec.Spec
	b      *ir.Builder
	inputs map[string]*ir.Node // by logical key
}

// estimatorFunc lowers an estimator: it returns the advantage and value_target [*batch].
type estimatorFunc func(l *lowerer, e *spec.Estimator) (adv, valueTarget *ir.Node)

// lossFunc lowers a loss given the advantage and value target (from the estimator, or inputs).
type lossFunc func(l *lowerer, loss *spec.Loss, adv, valueTarget *ir.Node, inKernel bool)

// The builders. A spec type missing here is valid but does not lower yet.
var (
	estimators = map[string]estimatorFunc{"gae": lowerGAE}
	losses     = map[string]lossFunc{"clip_ppo": lowerClipPPO}
)

// Lower builds the IR graph for s. It fails, with a positioned message, for spec features
// that parse but have no IR builder yet.
func Lower(s *spec.Spec) (*ir.Graph, error) {
	dims := make([]ir.Dim, len(s.Dims))
	for i, d := range s.Dims {
		dims[i] = ir.Dim{Name: d.Name, Size: d.Size}
	}
	dt := ir.F32
	if s.DType == spec.Float64 {
		dt = ir.F64
	}
	l := &lowerer{s: s, b: ir.NewBuilder(dt, dims, s.Batch), inputs: map[string]*ir.Node{}}

	if len(s.Transforms) > 0 {
		t := s.Transforms[0]
		return nil, &spec.Error{Pos: t.Pos, Msg: fmt.Sprintf("transforms: %s does not lower to IR yet (the spec is valid; lossgen lowers estimators %v and losses %v)", t.Type, keys(estimators), keys(losses))}
	}
	var est estimatorFunc
	var loss lossFunc
	if e := s.Estimator; e != nil {
		if est = estimators[e.Type]; est == nil {
			return nil, &spec.Error{Pos: e.Pos, Msg: fmt.Sprintf("estimator: %s does not lower to IR yet (the spec is valid; lossgen lowers %v)", e.Type, keys(estimators))}
		}
	}
	if lo := s.Loss; lo != nil {
		if loss = losses[lo.Type]; loss == nil {
			return nil, &spec.Error{Pos: lo.Pos, Msg: fmt.Sprintf("loss: %s does not lower to IR yet (the spec is valid; lossgen lowers %v)", lo.Type, keys(losses))}
		}
		if len(lo.Heads) > 0 {
			return nil, &spec.Error{Pos: s.PosOf("loss.heads"), Msg: "loss.heads: composite action heads do not lower to IR yet"}
		}
	}

	// Declare every input up front, in the spec's key order, so the kernel's Inputs are
	// stable and documented whether or not a later step reads them.
	for _, k := range s.UsedKeys() {
		l.declare(k)
	}

	var adv, vt *ir.Node
	if est != nil {
		adv, vt = est(l, s.Estimator)
		// The estimator writes its outputs under the spec's keys (TorchRL: tensordict[advantage_key]).
		l.b.Output(spec.DataName(s.Keys["advantage"]), adv, ir.Estimate, advantageDoc(s.Estimator), estimatorSource[s.Estimator.Type])
		l.b.Output(spec.DataName(s.Keys["value_target"]), vt, ir.Estimate, "value target (TorchRL key value_target): the return the critic regresses on", estimatorSource[s.Estimator.Type])
	} else {
		adv = l.in("advantage")
		if s.Loss.HasCritic() {
			vt = l.in("value_target")
		}
	}
	if loss != nil {
		loss(l, s.Loss, adv, vt, est != nil)
	}
	for _, name := range l.b.Duplicates() {
		for _, k := range s.OutputKeys() {
			if spec.DataName(s.Keys[k]) == name {
				return nil, &spec.Error{Pos: s.PosOf("keys." + k), Msg: fmt.Sprintf("keys.%s: the output name %q is also an output of loss %s; choose another", k, name, s.Loss.Type)}
			}
		}
		return nil, fmt.Errorf("lower: output %q declared twice", name)
	}
	return l.b.Graph(), nil
}

// in returns the input node of a logical key; the key must be one UsedKeys lists.
func (l *lowerer) in(key string) *ir.Node {
	n, ok := l.inputs[key]
	if !ok {
		panic("lower: key " + key + " is read but not listed by spec.UsedKeys")
	}
	return n
}

// terminated returns the terminated flags, or done when keys.terminated is null
// (TorchRL's estimators fall back to done, SEMANTICS.md §3.1).
func (l *lowerer) terminated() *ir.Node {
	if n, ok := l.inputs["terminated"]; ok {
		return n
	}
	return l.in("done")
}

func (l *lowerer) declare(key string) {
	kind := ir.Float
	switch key {
	case "done", "terminated":
		kind = ir.Bool
	case "action":
		kind = ir.Index
	}
	name := spec.DataName(l.s.Keys[key])
	diff := key == "log_prob" || key == "entropy" || key == "value"
	l.inputs[key] = l.b.Input(ir.Input{Key: key, Name: name, Kind: kind, Shape: l.b.Batch(), Doc: inputDoc[key], Differentiable: diff})
}

// inputDoc describes each logical key for the generated Inputs struct.
var inputDoc = map[string]string{
	"log_prob":        "log-probability of the taken action under the current policy (network output)",
	"sample_log_prob": "log-probability recorded when the action was taken (TorchRL key sample_log_prob)",
	"entropy":         "entropy of the current policy's distribution (network output; TorchRL dist.entropy())",
	"value":           "current critic prediction V(s_t) (TorchRL key state_value)",
	"old_value":       "state value recorded with the data, the centre of value clipping (TorchRL reads it from state_value)",
	"advantage":       "advantage estimate (TorchRL key advantage)",
	"value_target":    "critic target (TorchRL key value_target)",
	"reward":          "reward of step t (TorchRL key (next, reward))",
	"done":            "episode ended at step t, terminated or truncated (TorchRL key (next, done)); cuts the recursion",
	"terminated":      "episode reached a true terminal state at step t (TorchRL key (next, terminated)); zeroes the bootstrap",
	"next_value":      "critic value of the observation after step t, V(s_{t+1}) (TorchRL key (next, state_value))",
}

// reduce is TorchRL's _reduce (torchrl/objectives/utils.py): none keeps x, mean and sum run
// over every element.
func (l *lowerer) reduce(x *ir.Node, reduction string) *ir.Node {
	switch reduction {
	case "mean":
		return l.b.MeanAll(x)
	case "sum":
		return l.b.SumAll(x)
	}
	return x
}

// standardize is torchrl/_utils.py _standardize: (x − mean)/clamp_min(std, eps) with the
// unbiased std, statistics over the named dims (all of x's dims when empty).
func (l *lowerer) standardize(x *ir.Node, over []string, eps float64) *ir.Node {
	b := l.b
	if len(over) == 0 {
		over = x.Shape.Names()
	}
	mean := b.Note(b.Mean(x, over...), "mean")
	std := b.Note(b.Sqrt(b.Var(x, 1, over...)), "std")
	return b.Div(b.Sub(x, mean), b.Max(std, b.Const(eps)))
}

// distance is torchrl/objectives/utils.py distance_loss(v1, v2, fn), elementwise:
// l2 (v1−v2)², l1 |v1−v2|, smooth_l1 Huber with beta 1 (PyTorch's F.smooth_l1_loss).
func (l *lowerer) distance(v1, v2 *ir.Node, fn string) *ir.Node {
	b := l.b
	x := b.Sub(v1, v2)
	switch fn {
	case "l2":
		return b.Square(x)
	case "l1":
		return b.Abs(x)
	}
	z := b.Abs(x)
	half := b.Const(0.5)
	return b.Where(b.Lt(z, b.Const(1)), b.Mul(b.Mul(half, z), z), b.Sub(z, half))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
