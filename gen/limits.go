package gen

import (
	"fmt"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// MaxExactIndex is the largest extent a float32 kernel indexes by value (a gather's index, an
// argmax, an iota): 2^24, past which float32 no longer holds every integer.
const MaxExactIndex = 1 << 24

// checkLimits reports, at the dim at fault, a tensor of g the backends cannot index: one of
// more than spec.MaxElements elements (inputs, outputs and intermediates alike: the PTX
// kernels index every one with 32-bit arithmetic), and, in float32, an axis indexed by a value
// (a gather's index, an argmax, an iota) longer than MaxExactIndex. The batch alone is checked by the spec; this covers the other
// dims (an action dim of a 256k-token vocabulary, an ensemble).
func checkLimits(s *spec.Spec, g *ir.Graph) error {
	names := map[*ir.Node]string{}
	for _, in := range g.Nodes {
		if in.Op == ir.OpInput {
			names[in] = "input " + in.Input.Name
		}
	}
	for _, o := range g.Outputs {
		if names[o.Node] == "" {
			names[o.Node] = "output " + o.Name
		}
	}
	for _, n := range g.Nodes {
		numel, over := 1, false
		for _, d := range n.Shape {
			over = over || numel > spec.MaxElements/d.Size
			numel *= d.Size
		}
		if over {
			what := names[n]
			if what == "" {
				what = "a value the kernel computes"
			}
			d, smaller := largestDim(g, n.Shape), ""
			if !g.IsBatch(d) {
				smaller = " or the batch (" + g.Batch.String() + ")"
			}
			return dimError(s, d, fmt.Sprintf("%s %s holds more than %d elements, the most a kernel indexes (32-bit GPU thread indices); make %s%s smaller", what, n.Shape, spec.MaxElements, d, smaller))
		}
		if g.DType == ir.F32 && (n.Op == ir.OpGather || n.Op == ir.OpArgMax || n.Op == ir.OpIota && !n.Reverse) {
			a, shape := n.Axes[0], n.Shape
			if n.Op != ir.OpIota {
				shape = n.Args[0].Shape
			}
			if size := shape[shape.Index(a)].Size; size > MaxExactIndex {
				return dimError(s, a, fmt.Sprintf("%d entries; a float32 kernel indexes %s by value, exact up to 2^24 = %d: use dtype: float64 or a smaller %s", size, a, MaxExactIndex, a))
			}
		}
	}
	return nil
}

// largestDim is the longest dim of shape that is not a batch dim (the batch is within the
// limit), or the longest of all.
func largestDim(g *ir.Graph, shape ir.Shape) string {
	best := ir.Dim{}
	for _, d := range shape {
		if !g.IsBatch(d.Name) && d.Size > best.Size {
			best = d
		}
	}
	if best.Name == "" {
		for _, d := range shape {
			if d.Size > best.Size {
				best = d
			}
		}
	}
	return best.Name
}

// dimError is msg at the size of dim name under dims.
func dimError(s *spec.Spec, name, msg string) error {
	pos := s.PosOf("dims")
	for _, d := range s.Dims {
		if d.Name == name && d.Pos.Line > 0 {
			pos = d.Pos
		}
	}
	return &spec.Error{Pos: pos, Msg: "dims." + name + ": " + msg}
}
