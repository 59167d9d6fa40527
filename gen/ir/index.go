package ir

// IndexRead is what a gather's index reads of an index input: the input's value at the
// elements where Valid (a bool input, nil: every element) is true, or its negation with
// Negate; elsewhere a constant in range. Every backend's range check derives from it, so
// the CPU check before the kernels and the PTX check in the gather reject the same values.
type IndexRead struct {
	Input  *Input
	Valid  *Input
	Negate bool
}

// GatherIndex returns what gather n's index reads: the index input itself, or
// where(valid, input, c) / where(valid, c, input) with c a constant in the gathered axis
// (an input masked away). ok is false for an index computed otherwise (argmax, greedy),
// which is in range by construction.
func GatherIndex(n *Node) (r IndexRead, ok bool) {
	idx := n.Args[1]
	x := n.Args[0].Shape
	size := x[x.Index(n.Axes[0])].Size
	if idx.Op == OpInput && idx.Input.Kind == Index {
		return IndexRead{Input: idx.Input}, true
	}
	if idx.Op != OpWhere {
		return IndexRead{}, false
	}
	c, a, b := idx.Args[0], idx.Args[1], idx.Args[2]
	inRange := func(k *Node) bool {
		return k.IsScalarConst() && k.Value[0] >= 0 && k.Value[0] < float64(size) && k.Value[0] == float64(int(k.Value[0]))
	}
	isIndex := func(k *Node) bool { return k.Op == OpInput && k.Input.Kind == Index }
	// masked is the read of input k selected where the condition is !negate: only at the
	// condition's elements when it is a bool input of k's shape and the other branch a
	// constant in range; at every element otherwise (a check stricter than the gather's).
	masked := func(k, other *Node, negate bool) (IndexRead, bool) {
		if c.Op == OpInput && c.Input.Kind == Bool && c.Shape.Equal(k.Shape) && inRange(other) {
			return IndexRead{Input: k.Input, Valid: c.Input, Negate: negate}, true
		}
		return IndexRead{Input: k.Input}, true
	}
	switch {
	case isIndex(a):
		return masked(a, b, false)
	case isIndex(b):
		return masked(b, a, true)
	}
	return IndexRead{}, false
}

// IndexCheck is the range check of one index input: the values the gathers read must be in
// [0, Size), Size the smallest axis any of them selects along; Valid and Negate as in
// IndexRead (every element when the gathers read it under different masks).
type IndexCheck struct {
	IndexRead
	Size int
}

// IndexChecks lists the range checks of g's index inputs, in input order.
func IndexChecks(g *Graph) []IndexCheck {
	var out []IndexCheck
	for _, in := range g.Inputs {
		var c *IndexCheck
		for _, n := range g.Nodes {
			if n.Op != OpGather {
				continue
			}
			r, ok := GatherIndex(n)
			if !ok || r.Input != in {
				continue
			}
			x := n.Args[0].Shape
			size := x[x.Index(n.Axes[0])].Size
			if c == nil {
				c = &IndexCheck{IndexRead: r, Size: size}
				continue
			}
			c.Size = min(c.Size, size)
			if c.Valid != r.Valid || c.Negate != r.Negate {
				c.Valid, c.Negate = nil, false
			}
		}
		if c != nil {
			out = append(out, *c)
		}
	}
	return out
}
