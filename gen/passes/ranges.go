package passes

import (
	"fmt"
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime/vmath"
)

// ValueRange attaches to g the interval of every node's values, NaN aside (ir.Facts.Range),
// by interval arithmetic over constants, iotas, argmaxes, flags, a softmax's shifted logits
// x − max x (≤ 0) and the ops scan coefficients are made of (GAE's λγ·(1 − done),
// V-trace's γ(1 − done)·min(ρ, c̄)); any other node is unbounded.
// Rounding is monotone, so a float result of exact values within [lo, hi] stays within
// [lo, hi] when both are representable. The AVX2 overflow guard reads it to skip testing
// scan coefficients that are within [−1, 1] by construction, and the PTX gathers to skip
// the range check of an index that cannot leave its axis.
func ValueRange(g *ir.Graph) (*ir.Graph, error) {
	r := ranges(g.Nodes)
	return withFacts(g, func(f *ir.Facts) { f.Range = r }), nil
}

// ranges is the interval of every node (in topological order).
func ranges(nodes []*ir.Node) map[*ir.Node]ir.Interval {
	r := map[*ir.Node]ir.Interval{}
	for _, n := range nodes {
		args := make([]ir.Interval, len(n.Args))
		for i, a := range n.Args {
			args[i] = r[a]
		}
		r[n] = rangeOf(n, args)
	}
	return r
}

// boundedNodes lists the nodes (in topological order) whose interval lies within ±1e30:
// finite in float32 whatever the rounding, so a gradient's 0·d stays 0 (see ir.MarkBounded).
func boundedNodes(nodes []*ir.Node) []*ir.Node {
	r := ranges(nodes)
	var out []*ir.Node
	for _, n := range nodes {
		if r[n].Within(-1e30, 1e30) {
			out = append(out, n)
		}
	}
	return out
}

// rangeOf is n's interval given its arguments'.
func rangeOf(n *ir.Node, args []ir.Interval) ir.Interval {
	inf := math.Inf(1)
	switch n.Op {
	case ir.OpConst:
		iv := ir.Interval{Lo: inf, Hi: -inf}
		for _, v := range n.Value {
			iv = ir.Interval{Lo: min(iv.Lo, v), Hi: max(iv.Hi, v)}
		}
		return iv
	case ir.OpIota:
		return ir.Interval{Lo: 0, Hi: float64(n.Shape.Numel() - 1)}
	case ir.OpArgMax:
		x := n.Args[0].Shape
		return ir.Interval{Lo: 0, Hi: float64(x[x.Index(n.Axes[0])].Size - 1)}
	case ir.OpInput:
		if n.Input.Kind == ir.Bool {
			return ir.Interval{Lo: 0, Hi: 1}
		}
	case ir.OpDetach, ir.OpCustomGrad:
		return args[0]
	case ir.OpExp:
		// The kernels' exp is within an ulp of e^x: widen the top.
		return ir.Interval{Lo: 0, Hi: math.Exp(args[0].Hi) * (1 + 0x1p-20)}
	case ir.OpExpM1MinusX:
		// Convex with its minimum 0 at 0: the larger end's value, widened by the kernels' error
		// (up to 19 ulps, 2e-6 relative in float32: gen/expm1_test.go).
		a, hi := args[0], inf
		if !math.IsInf(a.Lo, 0) && !math.IsInf(a.Hi, 0) {
			hi = max(vmath.ExpM1MinusX(a.Lo), vmath.ExpM1MinusX(a.Hi)) * (1 + 0x1p-16)
		}
		return ir.Interval{Lo: 0, Hi: hi}
	case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpMin, ir.OpMax:
		iv := binaryRange(n.Op, args[0], args[1])
		if math.IsNaN(iv.Lo) || math.IsNaN(iv.Hi) { // 0·∞ at a corner
			break
		}
		if shiftedByMax(n) {
			iv.Hi = min(iv.Hi, 0)
		}
		return iv
	}
	return ir.Interval{Lo: -inf, Hi: inf}
}

// shiftedByMax reports whether n is x − max(x) over some of x's dims (the max perhaps
// detached), a softmax's shifted logits: every element is at most the max it is shifted by,
// and rounding is monotone, so the difference is ≤ 0 (NaN aside: x − x for x = ±∞).
func shiftedByMax(n *ir.Node) bool {
	if n.Op != ir.OpSub {
		return false
	}
	m := n.Args[1]
	for m.Op == ir.OpDetach {
		m = m.Args[0]
	}
	return m.Op == ir.OpRMax && m.Args[0] == n.Args[0]
}

// binaryRange is the interval of op over a and b.
func binaryRange(op ir.Op, a, b ir.Interval) ir.Interval {
	switch op {
	case ir.OpAdd:
		return ir.Interval{Lo: a.Lo + b.Lo, Hi: a.Hi + b.Hi}
	case ir.OpSub:
		return ir.Interval{Lo: a.Lo - b.Hi, Hi: a.Hi - b.Lo}
	case ir.OpMul:
		iv := ir.Interval{Lo: math.Inf(1), Hi: math.Inf(-1)}
		for _, p := range []float64{a.Lo * b.Lo, a.Lo * b.Hi, a.Hi * b.Lo, a.Hi * b.Hi} {
			iv = ir.Interval{Lo: min(iv.Lo, p), Hi: max(iv.Hi, p)}
		}
		return iv
	case ir.OpMin:
		return ir.Interval{Lo: min(a.Lo, b.Lo), Hi: min(a.Hi, b.Hi)}
	}
	return ir.Interval{Lo: max(a.Lo, b.Lo), Hi: max(a.Hi, b.Hi)} // OpMax
}

// reportRanges lists the bounded nodes but constants (ValueRange's report).
func reportRanges(g *ir.Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		if iv := g.Range(n); n.Op != ir.OpConst && (!math.IsInf(iv.Lo, -1) || !math.IsInf(iv.Hi, 1)) {
			out = append(out, fmt.Sprintf("%s ∈ %s", n.Name(), iv))
		}
	}
	return out
}
