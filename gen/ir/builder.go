package ir

import (
	"fmt"
	"math"
	"strings"
)

// Builder constructs a Graph. It infers shapes, folds constant arithmetic (in float64, with
// Apply, so folded and interpreted values agree) and merges identical nodes, so lowering code
// can say what it means without bookkeeping. Shape errors are bugs in lowering code: the
// builder panics with a message naming the op and shapes.
type Builder struct {
	g   *Graph
	cse map[string]*Node
	dup []string // output names declared twice (a user's key renaming onto another output)
	// bounded are nodes a value-range analysis bounds well inside the float32 range (see
	// MarkBounded): the chain rule needs no overflow guard against them.
	bounded map[*Node]bool
}

// MarkBounded records nodes whose values lie within ±1e30, NaN aside, by construction (a
// clamp, a polynomial of one; passes.Autodiff marks them from the value-range analysis):
// like an input, such a node is non-finite only where an input is, so gradMul and gradDiv
// need no guard against its overflow or underflow.
func (b *Builder) MarkBounded(ns []*Node) {
	if b.bounded == nil {
		b.bounded = map[*Node]bool{}
	}
	for _, n := range ns {
		b.bounded[n] = true
	}
}

// NewBuilder starts a graph over the given dims; batch names the batch dims.
func NewBuilder(dtype DType, dims []Dim, batch []string) *Builder {
	b := &Builder{g: &Graph{DType: dtype, Dims: dims}, cse: map[string]*Node{}}
	b.g.Batch = b.Shape(batch...)
	return b
}

// DType returns the graph's element type.
func (b *Builder) DType() DType { return b.g.DType }

// Batch returns the batch shape.
func (b *Builder) Batch() Shape { return b.g.Batch }

// Shape returns the shape made of the named dims, in the graph's dim order.
func (b *Builder) Shape(names ...string) Shape {
	s := Shape{}
	for _, d := range b.g.Dims {
		for _, n := range names {
			if n == d.Name {
				s = append(s, d)
			}
		}
	}
	if len(s) != len(names) {
		panic(fmt.Sprintf("ir: unknown or repeated dim in %v", names))
	}
	return s
}

// union returns the broadcast shape of the given shapes, in graph dim order.
func (b *Builder) union(shapes ...Shape) Shape {
	var names []string
	seen := map[string]bool{}
	for _, d := range b.g.Dims {
		for _, s := range shapes {
			if s.Has(d.Name) && !seen[d.Name] {
				seen[d.Name] = true
				names = append(names, d.Name)
			}
		}
	}
	return b.Shape(names...)
}

func (b *Builder) add(n *Node) *Node {
	key := cseKey(n)
	if m, ok := b.cse[key]; ok {
		if m.Note == "" {
			m.Note = n.Note
		}
		return m
	}
	n.ID = len(b.g.Nodes)
	b.g.Nodes = append(b.g.Nodes, n)
	b.cse[key] = n
	return n
}

// Key identifies what n computes from its arguments, by their IDs: two nodes of a graph with
// the same key compute the same values, and the builder keeps only the first.
func (n *Node) Key() string { return cseKey(n) }

func cseKey(n *Node) string {
	var k strings.Builder
	fmt.Fprintf(&k, "%d|%v|%d|%v|%v|%v|%v|", n.Op, n.Axes, n.Corr, n.Reverse, n.Cut, n.TieFirst, n.Stabiliser)
	for _, a := range n.Args {
		fmt.Fprintf(&k, "%d,", a.ID)
	}
	if n.Input != nil {
		k.WriteString("in:" + n.Input.Name)
	}
	for _, v := range n.Value {
		fmt.Fprintf(&k, "%x,", math.Float64bits(v))
	}
	fmt.Fprintf(&k, "|%s", n.Shape)
	return k.String()
}

// Input declares a kernel input (in.Name must be new).
func (b *Builder) Input(in Input) *Node {
	for _, x := range b.g.Inputs {
		if x.Name == in.Name {
			panic("ir: input declared twice: " + in.Name)
		}
	}
	p := &in
	b.g.Inputs = append(b.g.Inputs, p)
	return b.add(&Node{Op: OpInput, Input: p, Shape: in.Shape})
}

// InputNode returns the node of the input with the given data name, or nil.
func (b *Builder) InputNode(name string) *Node {
	for _, n := range b.g.Nodes {
		if n.Op == OpInput && n.Input.Name == name {
			return n
		}
	}
	return nil
}

// Const returns a scalar constant.
func (b *Builder) Const(v float64) *Node {
	return b.add(&Node{Op: OpConst, Value: []float64{v}, Shape: Shape{}})
}

// ConstTensor returns a constant tensor with row-major values.
func (b *Builder) ConstTensor(shape Shape, vals []float64) *Node {
	if len(vals) != shape.Numel() {
		panic(fmt.Sprintf("ir: const of shape %s with %d values", shape, len(vals)))
	}
	return b.add(&Node{Op: OpConst, Value: append([]float64(nil), vals...), Shape: shape})
}

// IsScalarConst reports whether n is a constant of shape [] (one value, broadcast).
func (n *Node) IsScalarConst() bool { return n.Op == OpConst && len(n.Shape) == 0 }

// elem adds an elementwise node, folding it when every argument is a scalar constant.
func (b *Builder) elem(op Op, args ...*Node) *Node {
	if len(args) != op.Arity() || op.Class() != Elementwise {
		panic(fmt.Sprintf("ir: %s takes %d arguments", op, op.Arity()))
	}
	fold := true
	vals := make([]float64, len(args))
	shapes := make([]Shape, len(args))
	for i, a := range args {
		fold = fold && a.IsScalarConst()
		if a.IsScalarConst() {
			vals[i] = a.Value[0]
		}
		shapes[i] = a.Shape
	}
	if fold {
		return b.Const(Apply(op, vals...))
	}
	shape := b.union(shapes...)
	if op == OpMul { // x·1 is x, exactly (a coefficient of 1: critic_coeff, a unit gradient)
		for i, a := range args {
			if other := args[1-i]; a.IsScalarConst() && a.Value[0] == 1 && other.Shape.Equal(shape) {
				return other
			}
		}
	}
	return b.add(&Node{Op: op, Args: args, Shape: shape})
}

// Elementwise ops.
func (b *Builder) Neg(x *Node) *Node    { return b.elem(OpNeg, x) }
func (b *Builder) Detach(x *Node) *Node { return b.detach(x) }
func (b *Builder) Abs(x *Node) *Node    { return b.elem(OpAbs, x) }
func (b *Builder) Exp(x *Node) *Node    { return b.elem(OpExp, x) }
func (b *Builder) Log(x *Node) *Node    { return b.elem(OpLog, x) }
func (b *Builder) Log1p(x *Node) *Node  { return b.elem(OpLog1p, x) }

// ExpM1MinusX is e^x − 1 − x, accurate at small |x| (OpExpM1MinusX).
func (b *Builder) ExpM1MinusX(x *Node) *Node { return b.elem(OpExpM1MinusX, x) }
func (b *Builder) Sqrt(x *Node) *Node        { return b.elem(OpSqrt, x) }
func (b *Builder) Add(x, y *Node) *Node      { return b.elem(OpAdd, x, y) }
func (b *Builder) Sub(x, y *Node) *Node      { return b.elem(OpSub, x, y) }
func (b *Builder) Mul(x, y *Node) *Node      { return b.elem(OpMul, x, y) }
func (b *Builder) Div(x, y *Node) *Node      { return b.elem(OpDiv, x, y) }
func (b *Builder) Min(x, y *Node) *Node      { return b.elem(OpMin, x, y) }
func (b *Builder) Max(x, y *Node) *Node      { return b.elem(OpMax, x, y) }

// MinFirst is min(x, y) whose gradient goes to x on a tie and where x is NaN (TieFirst).
func (b *Builder) MinFirst(x, y *Node) *Node { return b.tieFirst(b.Min(x, y)) }

// MaxFirst is max(x, y) whose gradient goes to x on a tie and where x is NaN (TieFirst).
func (b *Builder) MaxFirst(x, y *Node) *Node { return b.tieFirst(b.Max(x, y)) }

// tieFirst re-adds a min or max node with TieFirst set (a folded constant stays as it is).
func (b *Builder) tieFirst(n *Node) *Node {
	if n.Op != OpMin && n.Op != OpMax || n.TieFirst {
		return n
	}
	return b.add(&Node{Op: n.Op, Args: n.Args, Shape: n.Shape, TieFirst: true, Note: n.Note})
}

// Broadcast is x repeated onto shape (which has every dim of x).
func (b *Builder) Broadcast(x *Node, shape Shape) *Node {
	if !x.Shape.SubOf(shape) {
		panic(fmt.Sprintf("ir: broadcast of %s to %s", x.Shape, shape))
	}
	if x.Shape.Equal(shape) {
		return x
	}
	return b.add(&Node{Op: OpBroadcast, Args: []*Node{x}, Shape: shape})
}
func (b *Builder) Lt(x, y *Node) *Node { return b.elem(OpLt, x, y) }
func (b *Builder) Le(x, y *Node) *Node { return b.elem(OpLe, x, y) }
func (b *Builder) Gt(x, y *Node) *Node { return b.elem(OpGt, x, y) }
func (b *Builder) Ge(x, y *Node) *Node { return b.elem(OpGe, x, y) }
func (b *Builder) Eq(x, y *Node) *Node { return b.elem(OpEq, x, y) }
func (b *Builder) Ne(x, y *Node) *Node { return b.elem(OpNe, x, y) }

// RoundF32 is x rounded to float32 precision (OpRoundF32): x itself in a float32 graph.
func (b *Builder) RoundF32(x *Node) *Node {
	if b.g.DType == F32 {
		return x
	}
	return b.elem(OpRoundF32, x)
}

// Where is x where c is nonzero, else y, elementwise. A selection that selects nothing new
// folds, exactly (masked losses build them: every term is where(mask, ·, 0) again):
// where(c, x, x) = x; where(c, where(c, x, y), z) = where(c, x, z); where(c, x, where(c, y,
// z)) = where(c, x, z).
func (b *Builder) Where(c, x, y *Node) *Node {
	shape := b.union(c.Shape, x.Shape, y.Shape)
	switch {
	case x == y:
		return b.Broadcast(x, shape)
	case x.Op == OpWhere && x.Args[0] == c:
		return b.Broadcast(b.Where(c, x.Args[1], y), shape)
	case y.Op == OpWhere && y.Args[0] == c:
		return b.Broadcast(b.Where(c, x, y.Args[2]), shape)
	}
	return b.elem(OpWhere, c, x, y)
}

// CustomGrad is y with the derivative d with respect to x (OpCustomGrad): autodiff sends
// g·d to x, none through y's formula. y, x and d broadcast as an elementwise op's arguments;
// d must be y's derivative at every element (the finite-difference tests check lowerings
// that use it). Where x carries no gradient it is y, detached.
func (b *Builder) CustomGrad(y, x, d *Node) *Node {
	if x.Op == OpConst || x.Op == OpIota || x.Op == OpDetach || (x.Op == OpInput && !x.Input.Differentiable) {
		return b.detach(y)
	}
	return b.elem(OpCustomGrad, y, x, d)
}

// detach is torch's x.detach(): the same values, no gradient. Constants and inputs that are
// not differentiable carry none anyway.
func (b *Builder) detach(x *Node) *Node {
	if x.Op == OpConst || x.Op == OpIota || x.Op == OpDetach || (x.Op == OpInput && !x.Input.Differentiable) {
		return x
	}
	return b.add(&Node{Op: OpDetach, Args: []*Node{x}, Shape: x.Shape, Note: x.Note})
}

// reduce adds a reduction of x over the named axes.
func (b *Builder) reduce(op Op, x *Node, corr int, axes ...string) *Node {
	return b.reduceLike(&Node{Op: op, Corr: corr}, x, axes...)
}

// reduceLike adds the reduction of x over axes that n describes (its op, correction and
// flags).
func (b *Builder) reduceLike(n *Node, x *Node, axes ...string) *Node {
	op := n.Op
	if len(axes) == 0 {
		panic("ir: " + op.String() + " needs at least one axis")
	}
	for _, a := range axes {
		if !x.Shape.Has(a) {
			panic(fmt.Sprintf("ir: %s over %s, which %s does not have", op, a, x.Shape))
		}
	}
	ordered := b.Shape(axes...).Names()
	return b.add(&Node{Op: op, Args: []*Node{x}, Axes: ordered, Corr: n.Corr, Stabiliser: n.Stabiliser, Shape: x.Shape.Without(axes...)})
}

// Sum is Σ x over the named axes.
func (b *Builder) Sum(x *Node, axes ...string) *Node { return b.reduce(OpSum, x, 0, axes...) }

// ReduceMax is max x over the named axes.
func (b *Builder) ReduceMax(x *Node, axes ...string) *Node { return b.reduce(OpRMax, x, 0, axes...) }

// StabiliserMax is ReduceMax marked as a log-sum-exp's shift (Node.Stabiliser): x must
// enter a sum through exp(x − m) and m nothing else.
func (b *Builder) StabiliserMax(x *Node, axes ...string) *Node {
	return b.reduceLike(&Node{Op: OpRMax, Stabiliser: true}, x, axes...)
}

// ReduceMin is min x over the named axes.
func (b *Builder) ReduceMin(x *Node, axes ...string) *Node { return b.reduce(OpRMin, x, 0, axes...) }

// LogSumExp is torch.logsumexp over the named axes.
func (b *Builder) LogSumExp(x *Node, axes ...string) *Node {
	return b.reduce(OpLogSumExp, x, 0, axes...)
}

// Var is the variance over the named axes with the given correction (torch.var).
func (b *Builder) Var(x *Node, correction int, axes ...string) *Node {
	return b.reduce(OpVar, x, correction, axes...)
}

// Std is the standard deviation over the named axes with the given correction (torch.std).
func (b *Builder) Std(x *Node, correction int, axes ...string) *Node {
	return b.reduce(OpStd, x, correction, axes...)
}

// ArgMax is the first index of the maximum along one axis (torch.argmax).
func (b *Builder) ArgMax(x *Node, axis string) *Node { return b.reduce(OpArgMax, x, 0, axis) }

// Mean is Σ x / n over the named axes (torch.mean).
func (b *Builder) Mean(x *Node, axes ...string) *Node { return b.reduce(OpMean, x, 0, axes...) }

// MeanAll is the mean over every element of x.
func (b *Builder) MeanAll(x *Node) *Node {
	if len(x.Shape) == 0 {
		return x
	}
	return b.Mean(x, x.Shape.Names()...)
}

// SumAll is the sum over every element of x.
func (b *Builder) SumAll(x *Node) *Node {
	if len(x.Shape) == 0 {
		return x
	}
	return b.Sum(x, x.Shape.Names()...)
}

// Clamp is torch.clamp(x, lo, hi) = min(max(x, lo), hi), NaN-propagating, whose gradient
// passes where lo ≤ x ≤ hi, bounds included (TieFirst).
func (b *Builder) Clamp(x, lo, hi *Node) *Node { return b.MinFirst(b.MaxFirst(x, lo), hi) }

// Square is x·x.
func (b *Builder) Square(x *Node) *Node { return b.Mul(x, x) }

// along checks that x has the axis a scan or shift runs along.
func along(op Op, x *Node, axis string) {
	if !x.Shape.Has(axis) {
		panic(fmt.Sprintf("ir: %s along %s, which %s does not have", op, axis, x.Shape))
	}
}

// Scan is the linear recurrence along axis: y[t] = x[t] + c[t]·y[t+1] (y past the end is
// 0) when reverse, y[t] = x[t] + c[t]·y[t−1] otherwise; with cut, a c[t] of 0 gives the
// product +0 whatever y[t±1] holds (Node.Cut).
func (b *Builder) Scan(x, c *Node, axis string, reverse, cut bool) *Node {
	along(OpScan, x, axis)
	if !c.Shape.SubOf(x.Shape) {
		panic(fmt.Sprintf("ir: scan coefficient %s does not broadcast to %s", c.Shape, x.Shape))
	}
	return b.add(&Node{Op: OpScan, Args: []*Node{x, c}, Axes: []string{axis}, Reverse: reverse, Cut: cut, Shape: x.Shape})
}

// ShiftNext is y[t] = x[t+1] for t < T−1 and y[T−1] = last[T−1], along axis.
func (b *Builder) ShiftNext(x, last *Node, axis string) *Node {
	along(OpShiftNext, x, axis)
	if !last.Shape.Equal(x.Shape) {
		panic(fmt.Sprintf("ir: shift fill %s differs from %s", last.Shape, x.Shape))
	}
	return b.add(&Node{Op: OpShiftNext, Args: []*Node{x, last}, Axes: []string{axis}, Shape: x.Shape})
}

// Gather is y[i] = x[i, idx[i]] along axis of x.
func (b *Builder) Gather(x, idx *Node, axis string) *Node {
	if !x.Shape.Has(axis) {
		panic(fmt.Sprintf("ir: gather along %s, which %s does not have", axis, x.Shape))
	}
	out := x.Shape.Without(axis)
	if !idx.Shape.SubOf(out) {
		panic(fmt.Sprintf("ir: gather index %s does not broadcast to %s", idx.Shape, out))
	}
	return b.add(&Node{Op: OpGather, Args: []*Node{x, idx}, Axes: []string{axis}, Shape: out})
}

// Note names a node for plans and generated comments; it returns n.
func (b *Builder) Note(n *Node, note string) *Node {
	if n.Op.Class() != Leaf && n.Note == "" {
		n.Note = note
	}
	return n
}

// Output declares a named kernel output.
func (b *Builder) Output(name string, n *Node, role Role, doc, source string) {
	for _, o := range b.g.Outputs {
		if o.Name == name {
			b.dup = append(b.dup, name)
			return
		}
	}
	b.g.Outputs = append(b.g.Outputs, &Output{Name: name, Node: n, Role: role, Doc: doc, Source: source})
}

// MarkIllConditioned marks the output name as ill-conditioned: float32 tests hold it to
// relative bound rel (Output.IllConditioned).
func (b *Builder) MarkIllConditioned(name string, rel float64) {
	for _, o := range b.g.Outputs {
		if o.Name == name {
			o.IllConditioned = rel
		}
	}
}

// Nodes lists the nodes so far, in topological order.
func (b *Builder) Nodes() []*Node { return b.g.Nodes }

// Outputs lists the outputs declared so far.
func (b *Builder) Outputs() []*Output { return b.g.Outputs }

// Inputs lists the inputs declared so far.
func (b *Builder) Inputs() []*Input { return b.g.Inputs }

// OutputNames lists the outputs declared so far.
func (b *Builder) OutputNames() []string {
	out := make([]string, len(b.g.Outputs))
	for i, o := range b.g.Outputs {
		out[i] = o.Name
	}
	return out
}

// Duplicates lists the output names declared more than once (only the first was kept).
func (b *Builder) Duplicates() []string { return b.dup }

// Graph returns the finished graph, keeping only the nodes that outputs depend on.
func (b *Builder) Graph() *Graph {
	live := map[int]bool{}
	var mark func(n *Node)
	mark = func(n *Node) {
		if live[n.ID] {
			return
		}
		live[n.ID] = true
		for _, a := range n.Args {
			mark(a)
		}
	}
	for _, o := range b.g.Outputs {
		mark(o.Node)
	}
	g := *b.g
	g.Nodes = nil
	for _, n := range b.g.Nodes {
		if live[n.ID] || n.Op == OpInput {
			g.Nodes = append(g.Nodes, n)
		}
	}
	for i, n := range g.Nodes {
		n.ID = i
	}
	return &g
}
