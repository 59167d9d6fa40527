package passes

import (
	"fmt"
	"math"
	"slices"

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
	rc := rangeCache{}
	for _, n := range nodes {
		rc.of(n)
	}
	return rc
}

// rangeCache computes value ranges (rangeOf) of nodes as they are built, on demand.
type rangeCache map[*ir.Node]ir.Interval

// of is n's interval (NaN aside).
func (rc rangeCache) of(n *ir.Node) ir.Interval {
	if iv, ok := rc[n]; ok {
		return iv
	}
	args := make([]ir.Interval, len(n.Args))
	for i, a := range n.Args {
		args[i] = rc.of(a)
	}
	iv := rangeOf(n, args)
	rc[n] = iv
	return iv
}

// excludesZero reports whether n is never 0 (NaN aside).
func (rc rangeCache) excludesZero(n *ir.Node) bool {
	iv := rc.of(n)
	return iv.Lo > 0 || iv.Hi < 0
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
	case ir.OpNeg:
		return ir.Interval{Lo: -args[0].Hi, Hi: -args[0].Lo}
	case ir.OpRoundF32: // rounding is monotone
		return ir.Interval{Lo: float64(float32(args[0].Lo)), Hi: float64(float32(args[0].Hi))}
	case ir.OpBroadcast, ir.OpRMax, ir.OpRMin:
		return args[0]
	case ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe, ir.OpEq, ir.OpNe:
		return ir.Interval{Lo: 0, Hi: 1}
	case ir.OpWhere:
		return ir.Interval{Lo: min(args[1].Lo, args[2].Lo), Hi: max(args[1].Hi, args[2].Hi)}
	case ir.OpSum, ir.OpMean:
		return sumRange(n, args[0])
	case ir.OpDiv:
		// Only a divisor of one sign: the quotient is monotone in each argument.
		if d := args[1]; d.Lo > 0 || d.Hi < 0 {
			if iv := binaryRange(ir.OpMul, args[0], ir.Interval{Lo: 1 / d.Hi, Hi: 1 / d.Lo}); !math.IsNaN(iv.Lo) && !math.IsNaN(iv.Hi) {
				return widen(iv, 1)
			}
		}
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

// sumRange is the interval of a sum or mean over n's axes of values within x: n·x for a
// sum (a mean stays within x), widened by the float32 rounding of n additions. A softmax's
// denominator, Σ exp(x − max x) over the max's own axes, is at least 1: the maximal element
// adds e^0 = 1 exactly, and every other term is ≥ 0 (NaN aside).
func sumRange(n *ir.Node, x ir.Interval) ir.Interval {
	k := float64(n.Args[0].Shape.Numel() / max(n.Shape.Numel(), 1))
	iv := x
	if n.Op == ir.OpSum {
		iv = ir.Interval{Lo: k * x.Lo, Hi: k * x.Hi}
	}
	if math.IsNaN(iv.Lo) || math.IsNaN(iv.Hi) {
		return ir.Interval{Lo: math.Inf(-1), Hi: math.Inf(1)}
	}
	iv = widen(iv, k)
	if e := n.Args[0]; n.Op == ir.OpSum && e.Op == ir.OpExp && shiftedByMax(e.Args[0]) && sameAxes(n, maxOf(e.Args[0])) {
		iv.Lo = max(iv.Lo, 1)
	}
	return iv
}

// widen moves an interval's ends outwards by k float32 roundings (k·2^−23 relative).
func widen(iv ir.Interval, k float64) ir.Interval {
	return ir.Interval{Lo: iv.Lo - math.Abs(iv.Lo)*k*0x1p-23, Hi: iv.Hi + math.Abs(iv.Hi)*k*0x1p-23}
}

// maxOf is the max a shifted x − max(x) subtracts (shiftedByMax), past its detaches.
func maxOf(n *ir.Node) *ir.Node {
	m := n.Args[1]
	for m.Op == ir.OpDetach {
		m = m.Args[0]
	}
	return m
}

// sameAxes reports whether two reductions reduce the same dims.
func sameAxes(a, b *ir.Node) bool {
	if len(a.Axes) != len(b.Axes) {
		return false
	}
	for _, x := range a.Axes {
		if !slices.Contains(b.Axes, x) {
			return false
		}
	}
	return true
}

// shiftedByMax reports whether n is x − max(x) over some of x's dims (the max perhaps
// detached), a softmax's shifted logits: every element is at most the max it is shifted by,
// and rounding is monotone, so the difference is ≤ 0 (NaN aside: x − x for x = ±∞).
func shiftedByMax(n *ir.Node) bool {
	if n.Op != ir.OpSub {
		return false
	}
	m := maxOf(n)
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
