// Package interp is lossgen's reference interpreter: it evaluates an IR graph op by op in
// float64 and is the oracle for golden files (a float32 graph's values keep float32's range:
// what overflows float32 is ±inf, see overflow32). Values are gorgonia.org/tensor Dense tensors;
// elementwise semantics come from ir.Apply (shared with constant folding, so there is one
// definition of each op). Reductions are as accurate as float64 allows: sums are Neumaier-
// compensated and variances two-pass, so the reference does not drift over millions of
// elements; a reduction without such a form folds its description (ir.Fold). Nothing here
// is optimised: it exists to be obviously right.
package interp

import (
	"fmt"
	"math"
	"slices"

	"gorgonia.org/tensor"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime"
)

// Run evaluates g. inputs maps each input name to a float64 tensor of the input's shape
// (bool inputs as 0/1, index inputs as their value). It returns every output by name.
// It fails on a missing input, a shape mismatch, or a gather index out of range.
//
// A node's value is dropped after its last use (outputs are kept), so a large batch holds
// only the values still needed, not one tensor per node.
func Run(g *ir.Graph, inputs map[string]*tensor.Dense) (map[string]*tensor.Dense, error) {
	vals := make([]*tensor.Dense, len(g.Nodes))
	last := make([]int, len(g.Nodes)) // the position of each node's last user
	keep := make([]bool, len(g.Nodes))
	for i, n := range g.Nodes {
		for _, a := range n.Args {
			last[a.ID] = i
		}
	}
	for _, o := range g.Outputs {
		keep[o.Node.ID] = true
	}
	for i, n := range g.Nodes {
		v, err := eval(n, vals, inputs)
		if err != nil {
			return nil, fmt.Errorf("interp: %s: %w", n, err)
		}
		if g.DType == ir.F32 {
			overflow32(Data(v))
		}
		vals[n.ID] = v
		for _, a := range n.Args {
			if last[a.ID] == i && !keep[a.ID] {
				vals[a.ID] = nil
			}
		}
	}
	out := make(map[string]*tensor.Dense, len(g.Outputs))
	for _, o := range g.Outputs {
		out[o.Name] = vals[o.Node.ID]
	}
	return out, nil
}

// overflow32 is float32's range, which a float32 kernel cannot leave: a value whose float32
// rounding is ±inf becomes ±inf (a sum of k·finfo(float32).min is −inf in every float32
// backend, as in TorchRL), and every later op sees the infinity. Values in range keep their
// float64 precision.
func overflow32(x []float64) {
	for i, v := range x {
		if f := float64(float32(v)); math.IsInf(f, 0) {
			x[i] = f
		}
	}
}

// New returns a float64 tensor of the given shape and row-major data (copied).
func New(shape ir.Shape, data []float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape.Sizes()...), tensor.WithBacking(append([]float64(nil), data...)))
}

// Data returns the row-major float64 backing of a tensor made by New or Run.
func Data(t *tensor.Dense) []float64 { return t.Float64s() }

func eval(n *ir.Node, vals []*tensor.Dense, inputs map[string]*tensor.Dense) (*tensor.Dense, error) {
	arg := func(i int) []float64 { return Data(vals[n.Args[i].ID]) }
	out := make([]float64, n.Shape.Numel())
	switch n.Op.Class() {
	case ir.Leaf:
		if n.Op == ir.OpConst {
			copy(out, n.Value)
			break
		}
		if n.Op == ir.OpIota {
			for i := range out {
				out[i] = float64(i)
				if n.Reverse {
					out[i] = float64(len(out) - 1 - i)
				}
			}
			break
		}
		t, ok := inputs[n.Input.Name]
		if !ok {
			return nil, fmt.Errorf("missing input %q", n.Input.Name)
		}
		if want := n.Shape.Sizes(); !slices.Equal([]int(t.Shape()), want) {
			return nil, fmt.Errorf("input %q has shape %v, want %v", n.Input.Name, []int(t.Shape()), want)
		}
		copy(out, Data(t))
	case ir.Elementwise:
		idx := make([]func(int) int, len(n.Args))
		for i, a := range n.Args {
			idx[i] = broadcastIndex(a.Shape, n.Shape)
		}
		xs := make([]float64, len(n.Args))
		for i := range out {
			for j := range n.Args {
				xs[j] = arg(j)[idx[j](i)]
			}
			out[i] = ir.Apply(n.Op, xs...)
		}
	case ir.Reduce:
		reduce(n, arg(0), out)
	case ir.Scan:
		scan(n, arg(0), arg(1), out)
	case ir.Shift:
		x, last := arg(0), arg(1)
		a := n.Shape.Index(n.Axes[0])
		size, stride := n.Shape[a].Size, n.Shape.Strides()[a]
		for i := range out {
			if (i/stride)%size == size-1 {
				out[i] = last[i]
			} else {
				out[i] = x[i+stride]
			}
		}
	case ir.Gather:
		if err := gather(n, arg(0), arg(1), out); err != nil {
			return nil, err
		}
	}
	return New(n.Shape, out), nil
}

// broadcastIndex maps a linear index in shape `to` to the linear index in `from`, whose dims
// are a sub-sequence of to's.
func broadcastIndex(from, to ir.Shape) func(int) int {
	fs := from.Strides()
	toSizes := to.Sizes()
	st := make([]int, len(to)) // stride in `from` of each dim of `to`; 0 when broadcast
	for i, d := range to {
		if j := from.Index(d.Name); j >= 0 {
			st[i] = fs[j]
		}
	}
	return func(lin int) int {
		k := 0
		for i := len(toSizes) - 1; i >= 0; i-- {
			k += (lin % toSizes[i]) * st[i]
			lin /= toSizes[i]
		}
		return k
	}
}

// reduce evaluates a reduction: each input element goes to the output slot of its index
// with the reduced dims dropped.
func reduce(n *ir.Node, x, out []float64) {
	in := n.Args[0].Shape
	slot := broadcastIndex(n.Shape, in) // input linear index -> output slot
	groups := make([][]float64, len(out))
	for i, v := range x {
		s := slot(i)
		groups[s] = append(groups[s], v)
	}
	for s, g := range groups {
		if f, ok := accurate[n.Op]; ok {
			out[s] = f(g, n.Corr)
		} else {
			out[s] = ir.Fold(n.Op, g, n.Corr)
		}
	}
}

// accurate holds the reductions the interpreter computes more accurately than a fold of
// their description (ir.Fold) in float64: compensated sums, two-pass forms. The others
// fold their description. ir's tests check the descriptions against the same values.
var accurate = map[ir.Op]func(xs []float64, corr int) float64{
	ir.OpSum:  func(xs []float64, _ int) float64 { return sum(xs) },
	ir.OpMean: func(xs []float64, _ int) float64 { return sum(xs) / float64(len(xs)) },
	ir.OpRMax: func(xs []float64, _ int) float64 {
		return extreme(xs, func(a, b float64) bool { return a > b })
	},
	ir.OpRMin: func(xs []float64, _ int) float64 {
		return extreme(xs, func(a, b float64) bool { return a < b })
	},
	ir.OpLogSumExp: func(xs []float64, _ int) float64 { return logSumExp(xs) },
	ir.OpVar:       variance,
	ir.OpArgMax:    func(xs []float64, _ int) float64 { return argMax(xs) },
}

// sum is Neumaier's compensated sum.
func sum(xs []float64) float64 {
	var s, c float64
	for _, x := range xs {
		t := s + x
		if math.Abs(s) >= math.Abs(x) {
			c += (s - t) + x
		} else {
			c += (x - t) + s
		}
		s = t
	}
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return s
	}
	return s + c
}

// extreme returns the first element e with better(e, every other), NaN if any is NaN.
func extreme(xs []float64, better func(a, b float64) bool) float64 {
	m := math.Inf(1)
	if better(1, 0) {
		m = math.Inf(-1)
	}
	for _, x := range xs {
		if x != x {
			return math.NaN()
		}
		if better(x, m) {
			m = x
		}
	}
	return m
}

// logSumExp is torch.logsumexp: m + log Σ exp(x − m) with m = max x, and m taken as 0 when
// it is infinite (so all −inf gives −inf and any +inf gives +inf).
func logSumExp(xs []float64) float64 {
	m := extreme(xs, func(a, b float64) bool { return a > b })
	if math.IsInf(m, 0) {
		m = 0
	}
	es := make([]float64, len(xs))
	for i, x := range xs {
		es[i] = math.Exp(x - m)
	}
	return m + math.Log(sum(es))
}

// variance is torch.var with a correction: two-pass, Σ(x − mean)²/(n − corr).
func variance(xs []float64, corr int) float64 {
	n := float64(len(xs))
	mean := sum(xs) / n
	sq := make([]float64, len(xs))
	for i, x := range xs {
		sq[i] = (x - mean) * (x - mean)
	}
	return sum(sq) / (n - float64(corr))
}

// argMax is torch.argmax: the first index of the maximum, a NaN counting as the maximum.
func argMax(xs []float64) float64 {
	best := 0
	for i, x := range xs {
		if xs[best] != xs[best] {
			break
		}
		if x != x || x > xs[best] {
			best = i
		}
	}
	return float64(best)
}

// scan runs y[t] = x[t] + y[t±1]·c[t] along the node's axis (from the end when Reverse),
// starting from 0, in the order TorchRL's loop GAE writes it (delta + prev·discount).
func scan(n *ir.Node, x, c, out []float64) {
	a := n.Shape.Index(n.Axes[0])
	size, stride := n.Shape[a].Size, n.Shape.Strides()[a]
	cIdx := broadcastIndex(n.Args[1].Shape, n.Shape)
	for start := range out {
		if (start/stride)%size != 0 {
			continue // not the first element of a line along the axis
		}
		prev := 0.0
		for k := 0; k < size; k++ {
			t := k
			if n.Reverse {
				t = size - 1 - k
			}
			i := start + t*stride
			if n.Cut {
				prev = x[i] + runtime.CutMul(prev, c[cIdx(i)])
			} else {
				prev = x[i] + prev*c[cIdx(i)]
			}
			out[i] = prev
		}
	}
}

func gather(n *ir.Node, x, idx, out []float64) error {
	axis := n.Axes[0]
	xs := n.Args[0].Shape
	a := xs.Index(axis)
	size := xs[a].Size
	stride := xs.Strides()[a]
	idxOf := broadcastIndex(n.Args[1].Shape, n.Shape)
	// Output index -> x index with the gathered dim at 0.
	outToX := func(lin int) int {
		k := 0
		sizes := n.Shape.Sizes()
		xst := xs.Strides()
		for i := len(sizes) - 1; i >= 0; i-- {
			k += (lin % sizes[i]) * xst[xs.Index(n.Shape[i].Name)]
			lin /= sizes[i]
		}
		return k
	}
	for i := range out {
		j := idx[idxOf(i)]
		if j != math.Trunc(j) || j < 0 || int(j) >= size {
			return fmt.Errorf("gather index %v out of range [0, %d)", j, size)
		}
		out[i] = x[outToX(i)+int(j)*stride]
	}
	return nil
}
