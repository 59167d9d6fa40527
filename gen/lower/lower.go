package lower

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/passes"
	"github.com/lossgen/lossgen/spec"
)

// Lowerer is the state of one lowering: the IR builder, the environment of keys (what the
// stages have read and written so far, as TorchRL's tensordict), and the hyper-parameters as
// the kernel uses them.
type Lowerer struct {
	S *spec.Spec
	B *ir.Builder

	env     map[string]*ir.Node // logical key -> its current value
	inputs  map[string]string   // data name -> logical key of the input declared under it
	read    map[string]bool     // logical keys read from the data
	written map[string]bool     // logical keys written by a stage
	stage   *spec.Stage         // the stage being lowered
	hypers  []Hyper
	// mask and valid are the loss's keys.mask and its count of true elements (nil without a
	// mask): the loss's reductions run over the valid elements (mask.go).
	mask, valid *ir.Node
	// indexMask, while set (the policy's bootstrap, before the mask is read for the loss),
	// selects index inputs alone: padding may hold any index (−100), which a gather must not
	// read, while every other input stays unmasked, as the estimator reads its data.
	indexMask *ir.Node
	// targetOnly makes the estimator compute value_target alone, without reading V(s) or
	// writing the advantage (set by a loss's Prepare; estimate.go).
	targetOnly bool
}

// Hyper is a hyper-parameter as the kernel uses it: its name and exact value (after the
// float32 rounding TorchRL applies, SEMANTICS.md §11.14), for the generated doc.
type Hyper struct {
	Name  string
	Value float64
	Doc   string
}

// gradPrefix starts the names of the gradient outputs the autodiff pass adds, which no
// stage's output may take.
const gradPrefix = passes.GradPrefix

// lowerError is a positioned error raised by a stage's lowering; Lower returns it.
type lowerError struct{ err *spec.Error }

// Lower builds the IR graph of s: its transforms, its estimator, then its loss (whose
// Bootstrap, if any, runs before the estimator), each reading the keys it needs and writing
// its outputs. Keys the spec maps but nothing reads,
// and dims nothing uses, become warnings on s.
func Lower(s *spec.Spec) (g *ir.Graph, hypers []Hyper, err error) {
	dims := make([]ir.Dim, len(s.Dims))
	for i, d := range s.Dims {
		dims[i] = ir.Dim{Name: d.Name, Size: d.Size}
	}
	dt := ir.F32
	if s.DType == spec.Float64 {
		dt = ir.F64
	}
	l := &Lowerer{S: s, B: ir.NewBuilder(dt, dims, s.Batch), env: map[string]*ir.Node{},
		inputs: map[string]string{}, read: map[string]bool{}, written: map[string]bool{}}
	defer func() {
		if p := recover(); p != nil {
			le, ok := p.(lowerError)
			if !ok {
				panic(p)
			}
			g, hypers, err = nil, nil, le.err
		}
	}()
	for i, st := range s.Stages() {
		// The loss's Bootstrap runs first after the transforms: before the estimator.
		if i == len(s.Transforms) && s.Loss != nil && stageOf(s.Loss).Bootstrap != nil {
			l.stage = s.Loss
			stageOf(s.Loss).Bootstrap(l, s.Loss)
		}
		l.stage = st
		stageOf(st).Lower(l, st)
	}
	l.stage = nil
	for _, name := range l.B.Duplicates() {
		l.errorf("", "the output %q is written twice; rename one under keys", name)
	}
	g = l.B.Graph()
	l.warnUnused(g)
	return g, l.hypers, nil
}

// errorf stops the lowering with an error at a spec path ("keys.reward"; "" is the spec), or
// at the stage being lowered when the spec does not write that path (a default key).
func (l *Lowerer) errorf(path, format string, args ...any) {
	pos := l.S.PosOf(path)
	if l.stage != nil && !l.S.HasPos(path) {
		pos = l.stage.Pos
	}
	panic(lowerError{&spec.Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}})
}

// Errorf stops the lowering with an error at a parameter of the stage being lowered.
func (l *Lowerer) Errorf(param, format string, args ...any) {
	panic(lowerError{&spec.Error{Pos: l.stage.PosOf(param), Msg: l.stage.Path + "." + param + ": " + fmt.Sprintf(format, args...)}})
}

// DType is the kernel's element type.
func (l *Lowerer) DType() ir.DType { return l.B.DType() }

// Batch is the batch shape.
func (l *Lowerer) Batch() ir.Shape { return l.B.Batch() }

// Mapped reports whether the spec maps key to data (it is not null), or a stage wrote it.
func (l *Lowerer) Mapped(key string) bool { return l.env[key] != nil || l.S.Keys[key] != nil }

// Read returns key's value with the batch shape: what an earlier stage wrote under it, or
// else a kernel input named by the spec's data key.
func (l *Lowerer) Read(key string) *ir.Node { return l.ReadShaped(key, l.Batch()) }

// ReadShaped is Read for a key of another shape (logits [*batch, A], an ensemble [Q, *batch]).
func (l *Lowerer) ReadShaped(key string, shape ir.Shape) *ir.Node {
	def, ok := keys[key]
	if !ok {
		panic("lower: " + l.stage.Type + " reads key " + key + ", which no stage declares")
	}
	return l.ReadAs(key, shape, def.Kind)
}

// ReadAs is ReadShaped for a key whose storage depends on the stage's configuration (the
// action: an index for a categorical policy, a float vector for a one-hot or continuous one).
func (l *Lowerer) ReadAs(key string, shape ir.Shape, kind spec.KeyKind) *ir.Node {
	if n, ok := l.env[key]; ok {
		if n.Op == ir.OpBroadcast && n.Args[0].Shape.Equal(shape) {
			n = n.Args[0] // a per-sequence value an estimator spread over the tokens, read per sequence
		}
		if !n.Shape.Equal(shape) {
			l.errorf("keys."+key, "keys.%s: %s reads it with shape %s, but it has shape %s here", key, l.stage.Type, shape, n.Shape)
		}
		return l.selectValid(n, keys[key], kind)
	}
	data := l.S.Keys[key]
	if data == nil {
		l.errorf("keys."+key, "keys.%s: %s reads %q but the key is mapped to null (absent from the data); map it to an array name", key, l.stage.Type, key)
	}
	return l.selectValid(l.input(key, keys[key], data, shape, kind), keys[key], kind)
}

// readDerived reads a key the spec cannot remap, one per configured name (a head's
// entropy, "entropy.<head>" from data <head>_entropy), described by the registry key def.
func (l *Lowerer) readDerived(key string, def spec.KeyDef, data []string) *ir.Node {
	if n, ok := l.env[key]; ok {
		return l.selectValid(n, def, def.Kind)
	}
	return l.selectValid(l.input(key, def, data, l.Batch(), def.Kind), def, def.Kind)
}

// stateInput declares a scalar of kernel state (ir.Input.State) that starts at init; the
// stage declares its next value as the output of the same name with role ir.State.
func (l *Lowerer) stateInput(name string, init float64, doc string) *ir.Node {
	if other, dup := l.inputs[name]; dup {
		l.errorf("keys."+other, "keys.%s: maps to %q, the name of %s's state; choose another", other, name, l.stage.Type)
	}
	l.inputs[name] = name
	return l.B.Input(ir.Input{Key: name, Name: name, Kind: ir.Float, State: true, Init: init, Doc: doc})
}

// input declares the kernel input of logical key key under data name data.
func (l *Lowerer) input(key string, def spec.KeyDef, data []string, shape ir.Shape, kind spec.KeyKind) *ir.Node {
	name := spec.DataName(data)
	if other, dup := l.inputs[name]; dup {
		at := key
		if !l.S.KeyWritten(key) {
			at = other
		}
		l.errorf("keys."+at, "keys.%s: maps to %q, the array keys.%s already reads", key, name, other)
	}
	for _, k := range slices.Sorted(maps.Keys(l.written)) {
		if k != key && l.S.Keys[k] != nil && spec.DataName(l.S.Keys[k]) == name {
			l.inputOutputClash(key, name)
		}
	}
	ek := map[spec.KeyKind]ir.ElemKind{spec.FloatKey: ir.Float, spec.BoolKey: ir.Bool, spec.IndexKey: ir.Index}[kind]
	n := l.B.Input(ir.Input{Key: key, Name: name, Kind: ek, Shape: shape, Doc: def.Doc, Differentiable: def.Differentiable && kind == spec.FloatKey})
	l.inputs[name] = key
	l.env[key] = n
	l.read[key] = true
	return n
}

// ReadOr reads key, or fallback when key is mapped to null (TorchRL's estimators use done
// where there is no terminated key, SEMANTICS.md §3.1).
func (l *Lowerer) ReadOr(key, fallback string) *ir.Node {
	if l.env[key] == nil && l.S.KeyWritten(key) && l.S.Keys[key] == nil {
		return l.Read(fallback)
	}
	return l.Read(key)
}

// Write sets key to n for the stages after this one and makes it an output named by the
// spec's data key, as TorchRL's modules write tensordict[key].
func (l *Lowerer) Write(key string, n *ir.Node, role ir.Role, doc string) {
	data := l.S.Keys[key]
	if data == nil {
		l.errorf("keys."+key, "keys.%s: the %s %s writes %q but the key is mapped to null; map it to an output name", key, l.stage.Type, l.stage.Def.Kind, key)
	}
	name := spec.DataName(data)
	if strings.HasPrefix(name, gradPrefix) {
		l.errorf("keys."+key, "keys.%s: the output name %q starts with %q, which names the gradients (%s<input>); choose another", key, name, gradPrefix, gradPrefix)
	}
	for _, o := range l.graphOutputs() {
		if o == name {
			l.outputClash(key, name)
		}
	}
	if other, ok := l.inputs[name]; ok && other != key {
		l.inputOutputClash(key, name)
	}
	if role == ir.Estimate {
		// TorchRL's estimators run on detached critic parameters: their results carry no
		// gradient (SEMANTICS.md §2.2, §3.7).
		n = l.B.Detach(n)
	}
	l.env[key] = n
	l.written[key] = true
	l.B.Output(name, n, role, doc, l.source())
}

// outputClash reports that key's output name is taken by an earlier output, at the renaming
// the user wrote: key's own, else that of the key whose output it is (keys: {advantage:
// value_target} clashes with value_target, which the user did not write).
func (l *Lowerer) outputClash(key, name string) {
	if !l.S.KeyWritten(key) {
		for other := range l.written {
			if other != key && l.S.KeyWritten(other) && spec.DataName(l.S.Keys[other]) == name {
				l.errorf("keys."+other, "keys.%s: maps to %q, the name of %s's output %s; choose another", other, name, l.stage.Type, key)
			}
		}
	}
	l.errorf("keys."+key, "keys.%s: the output name %q is also an output of %s; choose another", key, name, l.stage.Type)
}

// inputOutputClash reports that an output and an input of two different keys share the array
// name: at key, or at the other key when key was not renamed. TorchRL's stage would overwrite
// the array in its tensordict; a kernel has separate inputs and outputs, so one would shadow
// the other. (A stage that updates its own key, as the KL reward does the reward, is fine.)
func (l *Lowerer) inputOutputClash(key, name string) {
	at := key
	if !l.S.KeyWritten(key) {
		for _, other := range slices.Sorted(maps.Keys(l.S.Keys)) {
			if other != key && l.S.KeyWritten(other) && spec.DataName(l.S.Keys[other]) == name {
				at = other
			}
		}
	}
	l.errorf("keys."+at, "keys.%s: maps to %q, which would name both an input and an output of this spec; choose another name", at, name)
}

// Set sets key to n for the stages after this one without making it an output: what a
// TorchRL module writes back into the tensordict that lossgen does not report (an estimator
// overwrites the stored state_value with the critic's current value).
func (l *Lowerer) Set(key string, n *ir.Node) {
	l.env[key] = n
	l.written[key] = true
}

// GradDoc documents how the stage's loss terms contribute to the gradient with respect to
// key (an input): the formula and its source, for the generated Grads doc.
func (l *Lowerer) GradDoc(key, doc string) {
	if n := l.env[key]; n != nil && n.Op == ir.OpInput && !slices.Contains(n.Input.GradDoc, doc) {
		n.Input.GradDoc = append(n.Input.GradDoc, doc)
	}
}

// KeyDoc documents key (an input) for the stage's configuration, replacing the key's
// shared doc (spec.KeyDef.Doc), which has to cover every stage and configuration that reads
// it: the action is an index for a categorical policy, a point for a Normal one.
func (l *Lowerer) KeyDoc(key, doc string) {
	if n := l.env[key]; n != nil && n.Op == ir.OpInput {
		n.Input.Doc = doc
	}
}

// Output declares an output of the stage under TorchRL's output name (loss_objective, ESS, ...).
func (l *Lowerer) Output(name string, n *ir.Node, role ir.Role, doc string) {
	for key := range l.written {
		if spec.DataName(l.S.Keys[key]) == name {
			l.errorf("keys."+key, "keys.%s: the output name %q is also an output of %s; choose another", key, name, l.stage.Type)
		}
	}
	l.B.Output(name, n, role, doc, l.source())
}

func (l *Lowerer) graphOutputs() []string { return l.B.OutputNames() }

// source is the stage's TorchRL class and file, for outputs' doc comments.
func (l *Lowerer) source() string { return l.stage.Def.Source + " " + l.stage.Def.Class }

// Hyper returns a hyper-parameter as the kernel uses it. With param_dtype float32 (the
// default) f32 says that TorchRL holds this value as a float32 tensor, so it is rounded to
// float32 first (SEMANTICS.md §11.14); with param_dtype float64, or where TorchRL computes in
// Python floats, it stays as it is. The value is recorded for the generated doc.
func (l *Lowerer) Hyper(name string, v float64, f32 bool, doc string) float64 {
	if f32 && l.S.ParamDType == spec.Float32 {
		v = float64(float32(v))
	}
	for _, h := range l.hypers {
		if h.Name == name {
			return v
		}
	}
	l.hypers = append(l.hypers, Hyper{Name: name, Value: v, Doc: doc})
	return v
}

// Log1p32 is log1p of a hyper-parameter as TorchRL computes it on a float32 tensor: the
// float32 rounding of log1p of the float32 value (correctly rounded; SEMANTICS.md §11.14).
// With param_dtype float64 it is log1p in double.
func (l *Lowerer) Log1p32(v float64) float64 {
	if l.S.ParamDType == spec.Float32 {
		return float64(float32(math.Log1p(float64(float32(v)))))
	}
	return math.Log1p(v)
}

// warnUnused warns about keys the spec maps but no stage reads or writes, and dims no
// tensor of the kernel has nor a parameter names (SAC's action_dim: D, read as D's size).
func (l *Lowerer) warnUnused(g *ir.Graph) {
	for _, k := range (registry{}).Keys() {
		switch {
		case !l.S.KeyWritten(k) || l.read[k] || l.written[k]:
		case k == keyMask.Name && slices.ContainsFunc(g.Nodes, func(n *ir.Node) bool { return n.Cut }):
			// Not ignored: the mapping cuts the estimator's recursion at done steps.
			l.S.Warnf("keys."+k, "keys.%s is not read by this spec's %s (the kernel takes no mask), but with it mapped the estimator's recursion is cut at done steps: padding after a done step reaches no valid step, even NaN or ±inf (docs/SEMANTICS.md §11.18); without it, 0·NaN carries NaN back as in TorchRL", k, what(l.S))
		default:
			l.S.Warnf("keys."+k, "keys.%s is neither read nor written by this spec's %s; it is ignored", k, what(l.S))
		}
	}
	used := map[string]bool{}
	for _, n := range g.Nodes {
		for _, d := range n.Shape {
			used[d.Name] = true
		}
	}
	for _, st := range l.S.Stages() {
		for _, v := range st.Values {
			used[v.Dim] = true
		}
	}
	for _, d := range l.S.Dims {
		if !used[d.Name] {
			l.S.Warnings = append(l.S.Warnings, &spec.Error{Pos: d.Pos, Msg: "warning: dims." + d.Name + ": no tensor of the kernel has this dim; nothing uses it"})
		}
	}
}

// what names the configured stages, for messages: "estimator gae and loss clip_ppo".
func what(s *spec.Spec) string {
	var parts []string
	for _, st := range s.Stages() {
		parts = append(parts, st.Def.Kind.String()+" "+st.Type)
	}
	out := ""
	for i, p := range parts {
		switch {
		case i == 0:
		case i == len(parts)-1:
			out += " and "
		default:
			out += ", "
		}
		out += p
	}
	return out
}
