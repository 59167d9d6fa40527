// Package ir is lossgen's intermediate representation: a typed dataflow graph over
// fixed-shape tensors. Losses, estimators and transforms lower to it (package lower); the
// reference interpreter (package interp) evaluates it; the fusion planner (package plan)
// groups it into loops that every backend emits. No loss ever needs backend code of its own:
// a backend that handles every Op handles every loss.
//
// Values. Every value is a tensor of the graph's floating-point element type (DType) with a
// Shape: a list of named dims, a sub-sequence of the graph's dim order. Boolean results
// (comparisons) are 0 or 1; boolean inputs (done flags) load as 0 or 1; index inputs load as
// their integer value. Elementwise ops broadcast by dim name: an operand whose dims are a
// sub-sequence of the result's dims is repeated along the missing ones.
//
// NaN. Min, Max, Clamp and the reductions propagate NaN, as torch.minimum, torch.maximum,
// torch.clamp and torch.min/max/sum do; comparisons with NaN are false except Ne.
package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DType is the element type a kernel computes in.
type DType uint8

// The kernel element types.
const (
	F32 DType = iota
	F64
)

// String returns the Go type name of the element type.
func (t DType) String() string {
	if t == F64 {
		return "float64"
	}
	return "float32"
}

// Eps is torch.finfo(dtype).eps: 2^-23 for float32, 2^-52 for float64.
func (t DType) Eps() float64 {
	if t == F64 {
		return 0x1p-52
	}
	return 0x1p-23
}

// MaxFinite is torch.finfo(dtype).max, the largest finite value (its negation is finfo.min).
func (t DType) MaxFinite() float64 {
	if t == F64 {
		return math.MaxFloat64
	}
	return math.MaxFloat32
}

// Resolution is torch.finfo(dtype).resolution, 10^−precision: 1e−6 for float32, 1e−15 for
// float64.
func (t DType) Resolution() float64 {
	if t == F64 {
		return 1e-15
	}
	return 1e-6
}

// Round rounds v to the element type (a Python float constant applied to a float32 tensor).
func (t DType) Round(v float64) float64 {
	if t == F64 {
		return v
	}
	return float64(float32(v))
}

// Dim is a named, fixed extent.
type Dim struct {
	Name string
	Size int
}

// Shape is a tensor shape as named dims, outermost first. The empty shape is a scalar.
type Shape []Dim

// Numel returns the number of elements (1 for a scalar).
func (s Shape) Numel() int {
	n := 1
	for _, d := range s {
		n *= d.Size
	}
	return n
}

// Has reports whether the shape has the named dim.
func (s Shape) Has(name string) bool { return s.Index(name) >= 0 }

// Index returns the position of the named dim, or -1.
func (s Shape) Index(name string) int {
	for i, d := range s {
		if d.Name == name {
			return i
		}
	}
	return -1
}

// Equal reports whether two shapes have the same dims in the same order.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// SubOf reports whether s is a sub-sequence of o (s broadcasts to o).
func (s Shape) SubOf(o Shape) bool {
	j := 0
	for _, d := range o {
		if j < len(s) && s[j] == d {
			j++
		}
	}
	return j == len(s)
}

// Without returns s minus the named dims.
func (s Shape) Without(names ...string) Shape {
	out := Shape{}
	for _, d := range s {
		drop := false
		for _, n := range names {
			drop = drop || d.Name == n
		}
		if !drop {
			out = append(out, d)
		}
	}
	return out
}

// Names returns the dim names.
func (s Shape) Names() []string {
	out := make([]string, len(s))
	for i, d := range s {
		out[i] = d.Name
	}
	return out
}

// Sizes returns the extents.
func (s Shape) Sizes() []int {
	out := make([]int, len(s))
	for i, d := range s {
		out[i] = d.Size
	}
	return out
}

// String formats the shape as [N=64 T=421].
func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprintf("%s=%d", d.Name, d.Size)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// SubIndex maps each flat (row-major) element of s to the flat element of sub it lies on:
// sub's dims, all of which s has, taken at the element's coordinates (the batch element a
// [*batch, A] tensor's entry belongs to). nil when s lacks one of sub's dims.
func (s Shape) SubIndex(sub Shape) []int {
	st := s.Strides()
	pos := make([]int, len(sub))
	for k, d := range sub {
		if pos[k] = s.Index(d.Name); pos[k] < 0 {
			return nil
		}
	}
	out := make([]int, s.Numel())
	for i := range out {
		m := 0
		for k, d := range sub {
			m = m*d.Size + i/st[pos[k]]%d.Size
		}
		out[i] = m
	}
	return out
}

// Strides returns the row-major element strides of s.
func (s Shape) Strides() []int {
	st := make([]int, len(s))
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i].Size
	}
	return st
}

// ElemKind is how an input is stored in memory; it loads as the graph's DType.
type ElemKind uint8

// The input storage kinds.
const (
	Float ElemKind = iota // the graph's DType
	Bool                  // Go bool / NumPy bool; loads as 0 or 1
	Index                 // int64 (categorical actions); loads as its value
)

func (k ElemKind) String() string {
	switch k {
	case Bool:
		return "bool"
	case Index:
		return "int64"
	}
	return "float"
}

// Node is one operation in the graph. Args are earlier nodes (the graph is in topological order).
type Node struct {
	ID    int
	Op    Op
	Args  []*Node
	Shape Shape

	Input   *Input    // OpInput
	Value   []float64 // OpConst: row-major data of Shape (one value for a scalar)
	Axes    []string  // reductions: the reduced dims; scans, shifts, gathers: the one axis
	Corr    int       // a Corrected reduction's correction (torch's; 0 biased, 1 unbiased)
	Reverse bool      // OpScan: runs from the end of its axis (y[t] depends on y[t+1]); OpIota: counts from the end
	// Cut (OpScan) makes a c[t] of 0 cut the line: its product is +0 whatever y[t±1] holds
	// (NaN, ±inf), where 0·y would be NaN. Set where padding may follow a done step.
	Cut bool
	// TieFirst (OpMin, OpMax) is how the gradient splits: to the first argument where the
	// two are equal or it is NaN (torch.clamp against a bound, inclusive; the min over
	// ClipPPO's stacked gains, SEMANTICS.md §11.5), instead of half to each on a tie
	// (torch.minimum, torch.maximum).
	TieFirst bool
	// Stabiliser (OpRMax) marks a maximum m whose only use is to shift its argument x for a
	// log-sum-exp (a softmax's max): every element of x then enters a sum through
	// exp(x − m), which is NaN wherever x holds a NaN, whatever m is, and exp(x − m) does
	// not depend on the sign of a zero m. A backend may so fold it with an instruction that
	// drops NaN operands or picks either zero (AVX2's VMAXPS): the results are the same,
	// up to the sign of a zero.
	Stabiliser bool
	Note       string // a short name for plans and generated comments ("delta", "ratio")
}

// Name returns a stable name for the node in plans and analysis messages: an input's data
// name, else "v<ID>". Generated code names nodes with Identifiers.
func (n *Node) Name() string {
	if n.Op == OpInput {
		return n.Input.Name
	}
	return fmt.Sprintf("v%d", n.ID)
}

// String describes the node on one line, for plans and tests.
func (n *Node) String() string {
	return n.format(func(m *Node) string { return fmt.Sprintf("v%d", m.ID) }, true)
}

// Formula describes the node on one line with the names of Identifiers, an argument that
// is a detach or broadcast by what it reads, and a scalar constant argument by its value, for the comments of generated code: "delta = sub(v11,
// stateValue)", "v9 = mul(0.99, v5)", "gae = scan(delta, discount) over T reverse".
func (n *Node) Formula(names map[int]string) string {
	return n.format(func(m *Node) string {
		for m != n && m.Op.Aliases() {
			m = m.Args[0] // no code of their own: the argument's value
		}
		if m != n && m.Op == OpConst && len(m.Shape) == 0 {
			return shortFloat(m.Value[0])
		}
		return names[m.ID]
	}, false)
}

// shortFloat formats v in the fewest digits that read it back: as a float32 where it is
// one (0.99, not 0.9900000095367432).
func shortFloat(v float64) string {
	if float64(float32(v)) == v {
		return strconv.FormatFloat(v, 'g', -1, 32)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// format describes the node with name naming it and its arguments; full adds its shape and
// note.
func (n *Node) format(name func(*Node) string, full bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s = %s", name(n), n.Op)
	switch n.Op {
	case OpInput:
		fmt.Fprintf(&b, " %q %s", n.Input.Name, n.Input.Kind)
	case OpConst:
		if len(n.Value) == 1 {
			fmt.Fprintf(&b, " %v", n.Value[0])
		} else {
			fmt.Fprintf(&b, " %v", n.Value)
		}
	}
	for i, a := range n.Args {
		if i == 0 {
			b.WriteString("(")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(name(a))
		if i == len(n.Args)-1 {
			b.WriteString(")")
		}
	}
	if len(n.Axes) > 0 {
		fmt.Fprintf(&b, " over %s", strings.Join(n.Axes, ","))
	}
	if n.Op.Class() == Reduce && ReductionOf[float64](n.Op).Corrected {
		fmt.Fprintf(&b, " correction=%d", n.Corr)
	}
	if (n.Op == OpScan || n.Op == OpIota) && n.Reverse {
		b.WriteString(" reverse")
	}
	if n.Cut {
		b.WriteString(" cut")
	}
	if n.TieFirst {
		b.WriteString(" tie=first")
	}
	if n.Stabiliser {
		b.WriteString(" stabiliser")
	}
	if !full {
		return b.String()
	}
	fmt.Fprintf(&b, " %s", n.Shape)
	if n.Note != "" {
		fmt.Fprintf(&b, "  # %s", n.Note)
	}
	return b.String()
}

// Input describes one kernel input: its data name (nested keys joined with '.'), how it is
// stored, and what it means.
type Input struct {
	Key   string // the spec's logical key (value, reward, ...), which says what the data means
	Name  string
	Kind  ElemKind
	Shape Shape
	Doc   string // meaning and TorchRL key, for generated doc comments
	// Differentiable marks a network output TorchRL differentiates the loss with respect to
	// (log_prob, entropy, state_value, logits, ...): the autodiff pass gives it a gradient.
	Differentiable bool
	// GradDoc says how each stage's loss terms contribute to the input's gradient (their
	// formula and source), for the generated Grads doc comments.
	GradDoc []string
	// State marks kernel state (KLPEN's β), a scalar: the value in force at the call's start,
	// Init before the first call. The output of the same name with role State is its next
	// value; the generated package keeps it in a State and updates it after each call.
	State bool
	Init  float64
}

// Role says what an output is, for the autodiff pass and the generated API.
type Role uint8

// The output roles.
const (
	// Metric is a logged, detached quantity (clip_fraction, kl_approx, ESS, entropy, ...).
	Metric Role = iota
	// LossTerm is a loss_* output: the gradient is that of the sum of every element of
	// every loss term (TorchRL users sum the loss_ keys and call backward).
	LossTerm
	// Estimate is a value estimator's result (advantage, value_target): detached in TorchRL.
	Estimate
	// Transformed is a transform's result (a rewritten reward, a chosen action).
	Transformed
	// Gradient is the gradient of the summed loss terms with respect to a differentiable
	// input (added by the autodiff pass).
	Gradient
	// State is kernel state carried to the next call (KLPEN's updated β).
	State
	// Fault is a run-time data check: a scalar count of the input elements that break a
	// precondition TorchRL raises an error for (log-softmax values above 0). Every backend
	// computes it like any output; the generated Forward returns a *runtime.DataError when it
	// is not 0, and a PTX driver reads it from its buffer (role "fault" in the launch table).
	Fault
)

func (r Role) String() string {
	return [...]string{"metric", "loss", "estimate", "transformed", "gradient", "state", "fault"}[r]
}

// Output is one named kernel output (TorchRL's output key).
type Output struct {
	Name   string
	Node   *Node
	Role   Role
	Doc    string // meaning, shape convention
	Source string // the TorchRL file and function that defines it
	// IllConditioned, when not 0, is the relative bound float32 tests hold a value to that
	// can amplify its inputs' last-ulp differences far beyond an ordinary op's:
	// explained_variance's ratio of variances, whose denominator cancels where a column's
	// values nearly agree.
	IllConditioned float64
}

// Graph is a complete kernel: inputs, nodes in topological order, and named outputs.
type Graph struct {
	DType   DType
	Dims    []Dim // every dim, in spec order
	Batch   Shape // the batch shape
	Inputs  []*Input
	Nodes   []*Node
	Outputs []*Output
	Facts   *Facts // what the analysis passes found, or nil (facts.go)
	// GenericReductions makes every backend run each reduction's description
	// (ReductionOf), skipping its faster forms of the same reductions: the op zoo runs both.
	GenericReductions bool
}

// IsBatch reports whether the named dim is a batch dim. Reductions over batch dims are
// barriers; other dims (actions, atoms, ensemble members, event dims) are small fixed axes
// a fused loop handles inside each batch element.
func (g *Graph) IsBatch(dim string) bool { return g.Batch.Has(dim) }

// InnerReduce reports whether n is a reduction over non-batch dims only, which a fused loop
// finishes inside each batch element rather than as a barrier.
func (g *Graph) InnerReduce(n *Node) bool {
	if n.Op.Class() != Reduce {
		return false
	}
	for _, a := range n.Axes {
		if g.IsBatch(a) {
			return false
		}
	}
	return true
}

// BatchPart returns the batch dims of s, in s's order.
func (g *Graph) BatchPart(s Shape) Shape {
	out := Shape{}
	for _, d := range s {
		if g.IsBatch(d.Name) {
			out = append(out, d)
		}
	}
	return out
}

// InnerPart returns the non-batch dims of s, in s's order.
func (g *Graph) InnerPart(s Shape) Shape {
	out := Shape{}
	for _, d := range s {
		if !g.IsBatch(d.Name) {
			out = append(out, d)
		}
	}
	return out
}

// Output returns the named output, or nil.
func (g *Graph) Output(name string) *Output {
	for _, o := range g.Outputs {
		if o.Name == name {
			return o
		}
	}
	return nil
}

// Users returns, for each node ID, the nodes that read it.
func (g *Graph) Users() map[int][]*Node {
	u := map[int][]*Node{}
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			u[a.ID] = append(u[a.ID], n)
		}
	}
	return u
}
