package plan

import (
	"sort"

	"github.com/lossgen/lossgen/gen/ir"
)

// scope is a block under construction: the values placed in it and its steps, each with a
// sort key (node IDs are a topological order, so sorting by ID runs every value after what it
// reads; fractions order a node's store after it and a reduction's init and loop before its
// finish).
type scope struct {
	parent  *scope
	block   *Block
	bound   map[string]bool
	has     map[int]bool
	items   []item
	forEach map[string]*scope // loops that only store or accumulate, by dims, merged
	// reduceLoops are the loops of inner reductions placed in this scope, by their dims: a
	// later reduction over the same dims joins one when it reads nothing the loop precedes.
	reduceLoops map[string][]reduceLoop
}

// reduceLoop is an inner reduction's loop: the scope of its body and its sort key.
type reduceLoop struct {
	key   float64
	child *scope
}

type item struct {
	key   float64
	step  Step
	child *scope
}

func newScope(parent *scope, dims ir.Shape, g *ir.Graph) *scope {
	s := &scope{parent: parent, bound: map[string]bool{}, has: map[int]bool{}, forEach: map[string]*scope{},
		reduceLoops: map[string][]reduceLoop{}}
	var bound []string
	if parent != nil {
		for d := range parent.bound {
			s.bound[d] = true
		}
	}
	for _, d := range dims {
		s.bound[d.Name] = true
	}
	for _, d := range g.Dims {
		if s.bound[d.Name] {
			bound = append(bound, d.Name)
		}
	}
	s.block = &Block{Dims: dims, Bound: shapeOf(g, bound)}
	return s
}

func shapeOf(g *ir.Graph, names []string) ir.Shape {
	out := ir.Shape{}
	for _, d := range g.Dims {
		for _, n := range names {
			if n == d.Name {
				out = append(out, d)
			}
		}
	}
	return out
}

func (s *scope) add(key float64, st Step, child *scope) {
	s.items = append(s.items, item{key: key, step: st, child: child})
}

// binds reports whether every dim of shape is bound in s.
func (s *scope) binds(shape ir.Shape) bool {
	for _, d := range shape {
		if !s.bound[d.Name] {
			return false
		}
	}
	return true
}

// outermost returns the outermost scope on the path from the top to s that binds ctx: where a
// value of that context is computed once for everything nested in it.
func (s *scope) outermost(ctx ir.Shape) *scope {
	var path []*scope
	for x := s; x != nil; x = x.parent {
		path = append(path, x)
	}
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].binds(ctx) {
			return path[i]
		}
	}
	panic("plan: no scope binds " + ctx.String())
}

// progBuilder builds one pass's program.
type progBuilder struct {
	b     *builder
	g     *ir.Graph
	ps    *Pass
	own   map[int]bool // scans of this pass
	top   *scope
	seen  map[int]bool // summaries
	inner map[int]bool
}

// context is the non-batch part of the shape at which n's value exists.
func (pb *progBuilder) context(n *ir.Node) ir.Shape { return pb.g.InnerPart(n.Shape) }

// value makes n's value available in scope sc (or an enclosing one).
func (pb *progBuilder) value(n *ir.Node, sc *scope) {
	home := sc.outermost(pb.context(n))
	if home.has[n.ID] {
		return
	}
	home.has[n.ID] = true
	key := float64(n.ID)
	switch {
	case n.Op.Class() == ir.Leaf, !pb.b.recompute(n) && !pb.own[n.ID]:
		home.add(key, Step{Kind: Load, Node: n}, nil)
		pb.summarize(&pb.ps.Loads, n)
	case pb.g.InnerReduce(n):
		for _, a := range n.Axes {
			if home.bound[a] {
				// forEach nests dims so that this cannot happen (nesting); a loop over a dim
				// inside a loop over the same dim would read one index's value for all.
				panic("plan: " + n.String() + " would reduce over " + a + " inside a loop over " + a)
			}
		}
		dims := shapeOf(pb.g, n.Axes)
		child := pb.joinLoop(home, n, dims)
		if child == nil {
			child = newScope(home, dims, pb.g)
			home.add(key-0.3, Step{Kind: Init, Node: n}, nil)
			home.add(key-0.2, Step{Kind: Loop, Block: child.block}, child)
			home.reduceLoops[dims.String()] = append(home.reduceLoops[dims.String()], reduceLoop{key - 0.2, child})
		}
		home.add(key, Step{Kind: Finish, Node: n}, nil)
		pb.value(n.Args[0], child)
		child.add(key, Step{Kind: Accumulate, Node: n}, nil)
		if !pb.inner[n.ID] {
			pb.inner[n.ID] = true
			pb.ps.Inner = append(pb.ps.Inner, n)
		}
	default:
		for i, a := range n.Args {
			if (n.Op.Class() == ir.Shift || n.Op.Class() == ir.Gather) && i == 0 {
				continue // read from memory at another index by the step itself
			}
			pb.value(a, home)
		}
		home.add(key, Step{Kind: Compute, Node: n}, nil)
		pb.summarize(&pb.ps.Compute, n)
	}
}

// joinLoop returns the body of an earlier loop of home over dims that inner reduction n can
// share, with n's init placed before that loop, or nil. n can share a loop when every value
// its argument reads from outside the loop precedes it (node IDs order the steps): then the
// reductions over one axis that read the same things (softmax's Σ e^s and Σ e^s·s) read
// their operands, and compute what they share, once.
func (pb *progBuilder) joinLoop(home *scope, n *ir.Node, dims ir.Shape) *scope {
	loops := home.reduceLoops[dims.String()]
	if len(loops) == 0 {
		return nil
	}
	last := outsideDeps(n.Args[0], n.Axes, map[int]bool{})
	for _, lp := range loops {
		if float64(last) < lp.key && lp.key < float64(n.ID) {
			home.add(lp.key-0.1, Step{Kind: Init, Node: n}, nil)
			return lp.child
		}
	}
	return nil
}

// outsideDeps is the largest ID of a value that x's computation over the axes reads from
// outside a loop over them (a value without one of the axes), or −1.
func outsideDeps(x *ir.Node, axes []string, seen map[int]bool) int {
	if seen[x.ID] {
		return -1
	}
	seen[x.ID] = true
	for _, a := range axes {
		if !x.Shape.Has(a) {
			return x.ID
		}
	}
	last := -1
	for i, a := range x.Args {
		if (x.Op.Class() == ir.Shift || x.Op.Class() == ir.Gather) && i == 0 {
			continue
		}
		last = max(last, outsideDeps(a, axes, seen))
	}
	return last
}

func (pb *progBuilder) summarize(list *[]*ir.Node, n *ir.Node) {
	if !pb.seen[n.ID] {
		pb.seen[n.ID] = true
		*list = append(*list, n)
	}
}

// forEach returns the scope, under the top, that binds the inner dims ctx for stores and
// accumulations of n (the top itself when ctx is empty): loops nested one dim each, in the
// order nesting gives for n. Such loops produce no values, so all of one pass's loops over
// the same dims in the same order merge into one, placed after everything they read.
func (pb *progBuilder) forEach(n *ir.Node, ctx ir.Shape) *scope {
	sc := pb.top
	order := pb.nesting(n, ctx)
	for i := range order {
		k := order[:i+1].String()
		next := sc.forEach[k]
		if next == nil {
			next = newScope(sc, order[i:i+1], pb.g)
			sc.forEach[k] = next
		}
		sc = next
	}
	return sc
}

// nesting orders the dims ctx of n's loops so that every reduction over inner dims that n
// needs within the pass has its result's dims bound outside the loops over the dims it
// reduces (Σ_a Q[q, a] broadcast back along a, in a gradient [Q, *batch, A]: the loop over q
// holds the reduction's loop over a, then the loop over a that uses it). Otherwise ctx keeps
// the graph's dim order.
func (pb *progBuilder) nesting(n *ir.Node, ctx ir.Shape) ir.Shape {
	if len(ctx) < 2 {
		return ctx
	}
	in := map[string]bool{}
	for _, d := range ctx {
		in[d.Name] = true
	}
	before := map[string]map[string]bool{} // before[x][c]: c's loop must enclose x's
	seen := map[int]bool{}
	var walk func(m *ir.Node)
	walk = func(m *ir.Node) {
		if seen[m.ID] || m.Op.Class() == ir.Leaf || !pb.b.recompute(m) && !pb.own[m.ID] {
			return
		}
		seen[m.ID] = true
		if pb.g.InnerReduce(m) {
			for _, x := range m.Axes {
				for _, c := range pb.context(m) {
					if in[x] && in[c.Name] {
						if before[x] == nil {
							before[x] = map[string]bool{}
						}
						before[x][c.Name] = true
					}
				}
			}
		}
		for i, a := range m.Args {
			if (m.Op.Class() == ir.Shift || m.Op.Class() == ir.Gather) && i == 0 {
				continue
			}
			walk(a)
		}
	}
	walk(n)
	// A topological order, the graph's order among the free dims; with a cycle, the graph's.
	var out ir.Shape
	placed := map[string]bool{}
	for len(out) < len(ctx) {
		progress := false
		for _, d := range ctx {
			if placed[d.Name] {
				continue
			}
			ready := true
			for c := range before[d.Name] {
				ready = ready && placed[c]
			}
			if ready {
				out, placed[d.Name], progress = append(out, d), true, true
				break
			}
		}
		if !progress {
			return ctx
		}
	}
	return out
}

// program builds ps's steps from the nodes that belong to it: its scans, its barrier
// reductions and its stored nodes.
func (b *builder) program(ps *Pass, homes []*ir.Node) {
	pb := &progBuilder{b: b, g: b.g, ps: ps, own: map[int]bool{}, seen: map[int]bool{}, inner: map[int]bool{}}
	pb.top = newScope(nil, ir.Shape{}, b.g)
	for _, n := range homes {
		if n.Op == ir.OpScan {
			pb.own[n.ID] = true
		}
	}
	for _, n := range homes {
		switch {
		case n.Op.Class() == ir.Reduce && !b.g.InnerReduce(n):
			arg := n.Args[0]
			sc := pb.forEach(arg, pb.context(arg))
			pb.value(arg, sc)
			sc.add(float64(n.ID), Step{Kind: Accumulate, Node: n}, nil)
			ps.Reduces = append(ps.Reduces, n)
		default:
			sc := pb.forEach(n, pb.context(n))
			pb.value(n, sc)
			if b.stored[n.ID] {
				sc.outermost(pb.context(n)).add(float64(n.ID)+0.25, Step{Kind: Store, Node: n}, nil)
				ps.Stores = append(ps.Stores, n)
			}
		}
	}
	ps.Body = pb.emit(pb.top)
	sort.Slice(ps.Compute, func(i, j int) bool { return ps.Compute[i].ID < ps.Compute[j].ID })
	sort.Slice(ps.Loads, func(i, j int) bool { return ps.Loads[i].ID < ps.Loads[j].ID })
}

// emit orders a scope's steps and those of its loops.
func (pb *progBuilder) emit(s *scope) *Block {
	var dims []string
	for k := range s.forEach {
		dims = append(dims, k)
	}
	sort.Strings(dims)
	for _, k := range dims {
		fe := s.forEach[k]
		s.add(lastKey(fe)+0.1, Step{Kind: Loop, Block: fe.block}, fe)
	}
	sort.SliceStable(s.items, func(i, j int) bool { return s.items[i].key < s.items[j].key })
	for _, it := range s.items {
		if it.child != nil {
			pb.emit(it.child)
		}
		s.block.Steps = append(s.block.Steps, it.step)
	}
	return s.block
}

// lastKey is the largest sort key in a forEach scope and the forEach scopes nested in it: the
// loop goes after everything it reads.
func lastKey(s *scope) float64 {
	key := 0.0
	for _, it := range s.items {
		key = max(key, it.key)
	}
	for _, fe := range s.forEach {
		key = max(key, lastKey(fe))
	}
	return key
}
