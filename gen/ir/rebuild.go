package ir

// Graphs are rebuilt, never edited in place: an IR pass either rebuilds a graph node by node
// (Rebuild, with a rewrite per node: peepholes) or extends a copy of it (Extend: autodiff adds
// nodes and outputs). Both give a fresh graph whose nodes nothing else holds, so a pass can
// renumber them freely and the graph it started from stays valid.

// Clone returns a deep copy of g's nodes and outputs (inputs are shared: they are not
// changed by passes), without g's facts, which name g's nodes.
func (g *Graph) Clone() *Graph {
	c := *g
	c.Facts = nil
	c.Nodes = make([]*Node, len(g.Nodes))
	byID := map[*Node]*Node{}
	for i, n := range g.Nodes {
		m := *n
		m.Args = make([]*Node, len(n.Args))
		for j, a := range n.Args {
			m.Args[j] = byID[a]
		}
		m.Axes = append([]string(nil), n.Axes...)
		m.Value = append([]float64(nil), n.Value...)
		c.Nodes[i] = &m
		byID[n] = &m
	}
	c.Inputs = append([]*Input(nil), g.Inputs...)
	c.Outputs = make([]*Output, len(g.Outputs))
	for i, o := range g.Outputs {
		oc := *o
		oc.Node = byID[o.Node]
		c.Outputs[i] = &oc
	}
	return &c
}

// Extend returns a builder over a copy of g: new nodes are merged with g's (CSE), and
// Graph() returns the copy with what was added.
func Extend(g *Graph) *Builder {
	c := g.Clone()
	b := &Builder{g: c, cse: map[string]*Node{}}
	for i, n := range c.Nodes {
		n.ID = i
		b.cse[cseKey(n)] = n
	}
	return b
}

// Rewrite builds the replacement of node n, whose arguments have already been rebuilt as
// args, with b; it returns nil to keep n as it is (rebuilt on args).
type Rewrite func(b *Builder, n *Node, args []*Node) *Node

// Rebuild builds g anew, node by node in order, giving rewrite the chance to replace each
// one. Inputs keep their order; outputs keep their names, roles and order.
func Rebuild(g *Graph, rewrite Rewrite) *Graph {
	b := &Builder{g: &Graph{DType: g.DType, Dims: g.Dims, Batch: g.Batch, GenericReductions: g.GenericReductions}, cse: map[string]*Node{}}
	to := map[*Node]*Node{}
	for _, n := range g.Nodes {
		args := make([]*Node, len(n.Args))
		for i, a := range n.Args {
			args[i] = to[a]
		}
		var m *Node
		if rewrite != nil && n.Op != OpInput {
			m = rewrite(b, n, args)
		}
		if m == nil {
			m = b.Copy(n, args)
		}
		to[n] = m
	}
	for _, o := range g.Outputs {
		b.Output(o.Name, to[o.Node], o.Role, o.Doc, o.Source)
		if o.IllConditioned != 0 {
			b.MarkIllConditioned(o.Name, o.IllConditioned)
		}
	}
	return b.Graph()
}

// Copy adds a node like n on the given arguments (through the same folding and merging as
// any other node).
func (b *Builder) Copy(n *Node, args []*Node) *Node {
	switch n.Op.Class() {
	case Leaf:
		if n.Op == OpInput {
			if m := b.InputNode(n.Input.Name); m != nil {
				return m
			}
			return b.Input(*n.Input)
		}
		if n.Op == OpIota {
			return b.Iota(n.Axes[0], n.Reverse)
		}
		return b.ConstTensor(n.Shape, n.Value)
	case Elementwise:
		switch {
		case n.Op == OpDetach:
			return b.Detach(args[0])
		case n.Op == OpBroadcast:
			return b.Broadcast(args[0], n.Shape)
		case n.TieFirst:
			return b.Note(b.tieFirst(b.elem(n.Op, args...)), n.Note)
		}
		return b.Note(b.elem(n.Op, args...), n.Note)
	case Reduce:
		return b.Note(b.reduceLike(n, args[0], n.Axes...), n.Note)
	case Scan:
		return b.Note(b.Scan(args[0], args[1], n.Axes[0], n.Reverse, n.Cut), n.Note)
	case Shift:
		return b.Note(b.ShiftNext(args[0], args[1], n.Axes[0]), n.Note)
	case Gather:
		return b.Note(b.Gather(args[0], args[1], n.Axes[0]), n.Note)
	}
	panic("ir: Copy of " + n.Op.String())
}
