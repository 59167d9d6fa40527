package passes

import (
	"fmt"

	"github.com/lossgen/lossgen/gen/ir"
)

// verifyShape checks that n's shape is what its op makes of its arguments (ir.Builder's
// rules), and that the axes it works along exist.
func verifyShape(g *ir.Graph, n *ir.Node) error {
	want := n.Shape
	axis := func(s ir.Shape) error {
		if len(n.Axes) != 1 || !s.Has(n.Axes[0]) {
			return fmt.Errorf("along %v, not one axis of %s", n.Axes, s)
		}
		return nil
	}
	switch n.Op.Class() {
	case ir.Leaf:
		return verifyLeaf(g, n)
	case ir.Elementwise:
		if n.Op == ir.OpBroadcast {
			if !n.Args[0].Shape.SubOf(n.Shape) {
				return fmt.Errorf("broadcasts %s to %s", n.Args[0].Shape, n.Shape)
			}
			return nil
		}
		want = union(g, n.Args)
	case ir.Reduce:
		x := n.Args[0].Shape
		for _, a := range n.Axes {
			if !x.Has(a) {
				return fmt.Errorf("reduces %s, which %s does not have", a, x)
			}
		}
		if len(n.Axes) == 0 {
			return fmt.Errorf("reduces no axis")
		}
		want = x.Without(n.Axes...)
	case ir.Scan, ir.Shift:
		if err := axis(n.Args[0].Shape); err != nil {
			return err
		}
		want = n.Args[0].Shape
		if !n.Args[1].Shape.SubOf(want) || (n.Op == ir.OpShiftNext && !n.Args[1].Shape.Equal(want)) {
			return fmt.Errorf("second argument %s does not fit %s", n.Args[1].Shape, want)
		}
	case ir.Gather:
		if err := axis(n.Args[0].Shape); err != nil {
			return err
		}
		want = n.Args[0].Shape.Without(n.Axes[0])
		if !n.Args[1].Shape.SubOf(want) {
			return fmt.Errorf("index %s does not broadcast to %s", n.Args[1].Shape, want)
		}
	}
	if !n.Shape.Equal(want) {
		return fmt.Errorf("shape %s; its arguments make %s", n.Shape, want)
	}
	return nil
}

// verifyLeaf checks an input's, a constant's or an iota's shape.
func verifyLeaf(g *ir.Graph, n *ir.Node) error {
	switch n.Op {
	case ir.OpInput:
		for _, in := range g.Inputs {
			if in == n.Input {
				if !n.Shape.Equal(in.Shape) {
					return fmt.Errorf("shape %s; the input is %s", n.Shape, in.Shape)
				}
				return nil
			}
		}
		return fmt.Errorf("reads an input the graph does not declare")
	case ir.OpConst:
		if len(n.Value) != n.Shape.Numel() {
			return fmt.Errorf("%d values for shape %s", len(n.Value), n.Shape)
		}
	case ir.OpIota:
		if len(n.Axes) != 1 || len(n.Shape) != 1 || n.Shape[0].Name != n.Axes[0] {
			return fmt.Errorf("counts along %v with shape %s", n.Axes, n.Shape)
		}
	}
	return nil
}

// union is the broadcast shape of args' shapes, in the graph's dim order.
func union(g *ir.Graph, args []*ir.Node) ir.Shape {
	out := ir.Shape{}
	for _, d := range g.Dims {
		for _, a := range args {
			if a.Shape.Has(d.Name) {
				out = append(out, d)
				break
			}
		}
	}
	return out
}
