package spec

import (
	"fmt"
	"math"

	"github.com/lossgen/lossgen/runtime"
)

// The schema of the stages (losses, estimators, transforms) is not written here: each stage
// is one entry of a Registry (gen/lower registers one per file), which says what the stage
// is called in TorchRL, which parameters its YAML mapping takes (types, TorchRL's defaults,
// ranges), which keys it reads and writes, and how its parameters are checked together. The
// parser reads every stage's mapping from its entry, so a new stage needs no change here.

// Kind is where a stage runs in the pipeline: transforms, then the estimator, then the loss.
type Kind uint8

// The stage kinds.
const (
	Transform Kind = iota
	Estimator
	Loss
)

func (k Kind) String() string { return [...]string{"transform", "estimator", "loss"}[k] }

// ParamType says how a parameter's YAML value is read.
type ParamType uint8

// The parameter types. Numbers are float64 (integers for Int), checked against the
// parameter's range element by element.
const (
	Float       ParamType = iota // a number
	FloatOrBool                  // a number, or true/false (clip_value: true means clip_epsilon)
	FloatOrPair                  // a number, or a list of two ([eps_low, eps_high])
	FloatOrMap                   // a number, or a mapping {name: number} (per-head coefficients)
	FloatOrAuto                  // a number, or auto: derived by the stage's check (SAC's target_entropy)
	FloatList                    // a list of numbers
	Int                          // an integer
	IntList                      // a list of integers
	Bool                         // true or false
	Enum                         // one of the Enum strings
	Names                        // a list of distinct names, each a key part (action heads)
	DimName                      // the name of a dim declared under dims
	Text                         // any string (an ignored argument's torch.device: cpu, cuda:0)
)

// ParamDef is one parameter of a stage: a key of its YAML mapping, named as TorchRL's
// constructor argument.
type ParamDef struct {
	Name    string
	Type    ParamType
	Default any // float64, int, bool, string or nil (absent); the value when the key is not written
	// Null is the value a YAML null stands for (TorchRL's None), or nil when null is an error.
	Null any
	Enum []string // Enum: the allowed values
	// Min and Max bound every number (Max may be +Inf); MinOpen/MaxOpen exclude the bound.
	Min, Max         float64
	MinOpen, MaxOpen bool
	Doc              string

	// Aliases are other names the key may be written under (TorchRL's former spelling);
	// the value is read as the parameter's own. Their For is empty.
	Aliases []Alias
	// ValueAliases are other spellings of Enum values ("one-hot" for one_hot): For names the
	// value each stands for.
	ValueAliases []Alias
	// RejectedValues are Enum values TorchRL's class accepts that lossgen does not take, each
	// with why: writing one is an error that says so and lists the allowed values.
	RejectedValues []Rejected
	// DimIndex (DimName only) also accepts an integer, TorchRL's index into the tensordict's
	// batch dims (negative counts from the end, as TorchRL's time_dim): it names the batch
	// dim at that position of the keys' layout, the batch dims in the order of dims.
	DimIndex bool
	// DimSize (Int only) also accepts the name of a dim declared under dims, read as its
	// size: SAC's action_dim written as the dim the action has elsewhere (action_dim: D).
	DimSize bool
	// Applies, when set, reports whether the parameter means anything for the stage as
	// written (low and high only bound a tanh_normal action): where it does not, writing it
	// draws a warning and the generated package declares no constant for it.
	Applies func(st *Stage) bool
	// LinspaceDim (FloatList only), when set, also accepts {vmin: a, vmax: b, n_atoms: n}:
	// the n values of torch.linspace(a, b, n), computed as torch does in the param_dtype
	// (Linspace). It names the stage's DimName parameter whose dim n must equal.
	LinspaceDim string
	// Refuse (StageDef.Ignored only), when set, returns why the argument does change the
	// values for the stage as configured (a Monte-Carlo sample count where the distribution
	// has no closed-form entropy, a count that differs from its dim's size), or "" where it
	// has no effect: writing it is then that error instead of a note. It sees the spec, the
	// stage after its Check and the value written.
	Refuse func(s *Spec, st *Stage, v any) string
}

// Alias is another spelling the parser accepts for a canonical one, reading it exactly as
// the canonical spelling: the parsed Spec is the same.
type Alias struct {
	Name string
	// For is the canonical spelling it stands for, where the owner does not say (an enum
	// value alias names its value).
	For string
	// Deprecated, when set, says that TorchRL deprecates or has removed this spelling and
	// since which version; the parser then adds a note (Spec.Notes) naming the canonical
	// spelling. Empty: TorchRL accepts both alike.
	Deprecated string
}

// Rejected is a TorchRL constructor argument that lossgen does not take, with the reason and
// what to write instead, reported as the error when a spec writes it.
type Rejected struct {
	Name string
	Why  string
}

// KeyKind is how a key's data is stored.
type KeyKind uint8

// The key kinds.
const (
	FloatKey KeyKind = iota // the kernel's float dtype
	BoolKey                 // bool flags (done, terminated, masks)
	IndexKey                // int64 indices (categorical actions)
)

// Sample says how golden cases draw a key's values: uniform in [Lo, Hi), normal (Mean,
// Std), a flag true with probability P, or an index along the stage's action dim, with
// Offset, Within and the extreme-case variants. It is lossgen runtime's Sample: the one
// generator (runtime.CaseRecipe) that lossgen's golden cases and every generated test draw
// inputs with.
type Sample = runtime.Sample

// KeyDef is one logical key: a name TorchRL's tensor_keys or lossgen use for a tensor of the
// data, the nested data key it defaults to, and what it holds.
type KeyDef struct {
	Name    string
	Default []string // the nested data key; nil: derived (NextOf) or absent unless mapped
	// Shape is the key's layout in dim names, "[*batch]" when empty: "[*batch, A]" (logits),
	// "[Q, *batch]" (an ensemble); alternatives joined by " | " where the stage's
	// configuration decides. It documents the key (docs/spec-reference.md); lowering gives
	// each tensor its shape.
	Shape string
	// NextOf derives the default as ["next"] + the data key of another logical key
	// (next_value from value, as TorchRL's estimators read ("next", value_key)).
	NextOf string
	Kind   KeyKind
	Doc    string
	// Differentiable marks a network output TorchRL differentiates the loss with respect to.
	Differentiable bool
	// Pad is what a masked-out element of the key reads in a loss with keys.mask: a value
	// at which every formula the loss applies is finite with finite derivatives (0, or 1 for
	// a standard deviation), so that padding, whatever it holds, reaches no output and no
	// gradient. For a flag (BoolKey) Pad 1 selects true at padding (done: a recursion
	// restarts there); Pad 0 leaves the flag as read.
	Pad    float64
	Sample Sample
}

// StageDef is one registry entry: a loss, estimator or transform.
type StageDef struct {
	Kind Kind
	Type string // the YAML type name: clip_ppo, gae, kl_reward, ...
	// Class is the TorchRL class: ClipPPOLoss, GAE, KLRewardTransform, ... A spec may write
	// it as the type (type: ClipPPOLoss), which reads as Type.
	Class  string
	Source string // the TorchRL file that defines it
	Params []ParamDef
	// Rejected are TorchRL arguments of the class that lossgen does not take: writing one
	// is an error that says why and what to write (actor_network: the kernel takes its outputs).
	Rejected []Rejected
	// Ignored are TorchRL arguments of the class that change nothing the kernel computes
	// (vectorized, functional, device): the parser checks a written one's type as a
	// parameter's, leaves it out of the Spec and adds a note (Spec.Notes), "no effect here:"
	// and its Doc, which says why.
	Ignored []ParamDef
	// Keys are every key the stage may read or write. The stage's mapping also takes each as
	// TorchRL's <key>_key argument (advantage_key: adv), which reads as keys: {advantage: adv}.
	Keys []KeyDef
	// Check validates the stage's parameters together, with the whole spec at hand, and
	// applies defaults that depend on other keys. It may be nil.
	Check func(c *Check)
	// Example is what a starter spec (lossgen init) writes for the stage beyond TorchRL's
	// defaults, so that it is valid as written. It may be nil.
	Example *Example
}

// Example is a stage's part of a starter spec: a value for each parameter the stage needs
// that has no default (an action dim, a standalone estimator's γ), and the dims those
// parameters name, each where the tensors' layout puts it.
type Example struct {
	Params map[string]any // parameter name → value, of the parameter's type
	// Sizes are integer parameters that hold the size of an example dim (num_qvalue_nets: Q),
	// so that a starter sized otherwise stays consistent.
	Sizes map[string]string
	// Before are dims declared ahead of the batch dims (an ensemble, [Q, *batch]); After,
	// behind them (atoms and actions, [*batch, K, A]), in this order.
	Before, After []Dim
}

// Param returns the named parameter definition, or nil.
func (d *StageDef) Param(name string) *ParamDef {
	for i := range d.Params {
		if d.Params[i].Name == name {
			return &d.Params[i]
		}
	}
	return nil
}

// Registry is the set of stages a spec can use.
type Registry interface {
	// Stage returns the entry of the given kind and type, or nil.
	Stage(kind Kind, typ string) *StageDef
	// Types lists the type names of a kind, sorted.
	Types(kind Kind) []string
	// Key returns a logical key's definition.
	Key(name string) (KeyDef, bool)
	// Keys lists every logical key, sorted.
	Keys() []string
}

// Stage is one configured stage of a spec: its definition and its parameters' values
// (defaults applied), with their positions.
type Stage struct {
	Def    *StageDef
	Type   string
	Path   string // where it is in the spec: "loss", "estimator", "transforms[1]"
	Pos    Pos    // its mapping
	Values map[string]Value
}

// Value is a parameter's value: float64, int, bool, string, []float64, []int, []string,
// map[string]float64, or nil (absent, or null).
type Value struct {
	V       any
	Pos     Pos
	Written bool   // the spec wrote it (rather than taking the default)
	Null    bool   // it wrote null (V is then the parameter's ParamDef.Null)
	Dim     string // the dim a DimSize value was written as, whose size V is
}

// Get returns a parameter's value.
func (s *Stage) Get(name string) any { return s.Values[name].V }

// Float returns a numeric parameter's value (0 when absent, null or false).
func (s *Stage) Float(name string) float64 {
	switch v := s.Values[name].V.(type) {
	case float64:
		return v
	case int:
		return float64(v)
	}
	return 0
}

// Int returns an integer parameter's value.
func (s *Stage) Int(name string) int { v, _ := s.Values[name].V.(int); return v }

// Bool returns a boolean parameter's value.
func (s *Stage) Bool(name string) bool { v, _ := s.Values[name].V.(bool); return v }

// String returns a string parameter's value.
func (s *Stage) String(name string) string { v, _ := s.Values[name].V.(string); return v }

// Written reports whether the spec wrote the parameter.
func (s *Stage) Written(name string) bool { return s.Values[name].Written }

// PosOf returns the position of a parameter's value, or of the stage when it was not written.
func (s *Stage) PosOf(name string) Pos {
	if v, ok := s.Values[name]; ok && v.Written {
		return v.Pos
	}
	return s.Pos
}

// Set replaces a parameter's value (a Check applying a default that depends on other keys).
func (s *Stage) Set(name string, v any) {
	x := s.Values[name]
	x.V = v
	s.Values[name] = x
}

// Check is what a StageDef's Check function validates with: the spec, the stage, and
// positioned errors and warnings.
type Check struct {
	Spec     *Spec
	Stage    *Stage
	Registry Registry
	d        *decoder
}

// Errorf reports an error at a parameter's value (or the stage's mapping when the parameter
// was not written), prefixed with the parameter's path: "loss.clip_epsilon: ...".
func (c *Check) Errorf(param, format string, args ...any) {
	c.d.errs = append(c.d.errs, &Error{Pos: c.at(param), Msg: c.prefix(param) + fmt.Sprintf(format, args...)})
}

// Warnf reports a warning the same way.
func (c *Check) Warnf(param, format string, args ...any) {
	c.d.warns = append(c.d.warns, &Error{Pos: c.at(param), Msg: "warning: " + c.prefix(param) + fmt.Sprintf(format, args...)})
}

// ErrorAt reports an error at a spec path ("loss.entropy_coeff.move", "batch") without a
// prefix.
func (c *Check) ErrorAt(path, msg string) {
	c.d.errs = append(c.d.errs, &Error{Pos: c.Spec.PosOf(path), Msg: msg})
}

func (c *Check) at(param string) Pos {
	if param == "" {
		return c.Stage.Pos
	}
	return c.Stage.PosOf(param)
}

func (c *Check) prefix(param string) string {
	if param == "" {
		return c.Stage.Path + ": "
	}
	return c.Stage.Path + "." + param + ": "
}

// NewStage makes a stage from its registry entry with its defaults and the given values:
// how a Check adds a stage the spec implies (IQL's TD(0) target when no estimator is given).
func (c *Check) NewStage(kind Kind, typ string, values map[string]any) *Stage {
	def := c.Registry.Stage(kind, typ)
	st := &Stage{Def: def, Type: typ, Path: kind.String(), Pos: c.Stage.Pos, Values: map[string]Value{}}
	for _, p := range def.Params {
		st.Values[p.Name] = Value{V: p.Default}
	}
	for k, v := range values {
		st.Values[k] = Value{V: v}
	}
	return st
}

// fmtRange formats a parameter's range: "(0, 1)", "[1, inf)".
func (p *ParamDef) fmtRange() string {
	lb, rb := "[", "]"
	if p.MinOpen {
		lb = "("
	}
	if p.MaxOpen {
		rb = ")"
	}
	return lb + fmtNum(p.Min) + ", " + fmtNum(p.Max) + rb
}

// inRange reports whether v lies in the parameter's range.
func (p *ParamDef) inRange(v float64) bool {
	lo := v > p.Min || (!p.MinOpen && v == p.Min)
	hi := v < p.Max || (!p.MaxOpen && v == p.Max)
	return lo && hi
}

// Unbounded is a parameter range with no limits.
var Unbounded = struct{ Min, Max float64 }{math.Inf(-1), math.Inf(1)}
