// Package plan groups an IR graph into fused loops ("passes") that every backend emits the
// same way, so the backends differ only in how they write one loop.
//
// Rules. Elementwise nodes are never stored unless they are outputs: each pass recomputes the
// elementwise chain it needs from what is in memory (inputs, constants, earlier results), so a
// chain costs arithmetic, not memory traffic. What must be in memory is: inputs; outputs;
// scan results read by a later pass; the operands of shifts and gathers (read at other
// indices); and reduction results, which exist only once their loop has finished. A
// reduction is therefore a barrier: a node that reads one runs at a later level. A scan runs
// in the pass of its own shape, iterating the last axis backwards, and everything of the
// same level and shape joins that pass. Passes run in order of level, then of domain size
// (smaller domains first, so a broadcast value computed at a level is there when a larger
// domain of the same level reads it... and larger domains never feed smaller ones except
// through reductions, which move to the next level).
package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
)

// Plan is the fused-loop schedule of a graph.
type Plan struct {
	Graph   *ir.Graph
	Passes  []*Pass
	Scratch []*Buffer // intermediate buffers the kernel allocates (not inputs or outputs)

	bufOf map[int]*Buffer // node ID -> the buffer the node is stored in
}

// Buffer is a stored tensor: an output, or a scratch buffer.
type Buffer struct {
	Name   string     // output name, or "s<k>" for scratch
	Node   *ir.Node   // the node whose value it holds
	Output *ir.Output // non-nil for an output buffer
}

// Pass is one fused loop over Domain. At each index it loads Loads, computes Compute in
// order, stores Stores and accumulates Reduces; after the loop the reductions are finalised
// into their buffers.
type Pass struct {
	Index   int
	Level   int
	Domain  ir.Shape
	Scan    bool       // the last axis runs backwards (the pass holds a reverse scan)
	Loads   []*ir.Node // read from memory at the loop index (inputs, constants, stored results)
	Compute []*ir.Node // computed at each index, in dependency order
	Stores  []*ir.Node // computed nodes written to their buffer at each index
	Reduces []*ir.Node // reductions accumulated over the loop; their argument is in Compute or Loads
}

// Buffer returns the buffer that holds n, or nil when n is recomputed wherever it is used.
func (p *Plan) Buffer(n *ir.Node) *Buffer { return p.bufOf[n.ID] }

// Build schedules g.
func Build(g *ir.Graph) *Plan {
	b := &builder{g: g, lvl: map[int]int{}, need: map[string]int{}, stored: map[int]bool{}}
	p := &Plan{Graph: g, bufOf: map[int]*Buffer{}}

	// What must be stored.
	for _, o := range g.Outputs {
		b.stored[o.Node.ID] = true
	}
	for _, n := range g.Nodes {
		switch n.Op.Class() {
		case ir.Reduce, ir.Scan:
			b.stored[n.ID] = true
		case ir.Shift:
			b.stored[n.Args[0].ID] = true
			b.stored[n.Args[1].ID] = true
		case ir.Gather:
			b.stored[n.Args[0].ID] = true
		}
	}
	for _, n := range g.Nodes {
		if n.Op.Class() == ir.Leaf {
			b.stored[n.ID] = false // already in memory (or baked)
		}
	}
	for _, n := range g.Nodes {
		b.level(n)
	}

	// One root per stored node, in the pass of its level and domain.
	type key struct {
		level int
		dom   string
	}
	passes := map[key]*Pass{}
	pass := func(level int, dom ir.Shape) *Pass {
		k := key{level, dom.String()}
		if ps, ok := passes[k]; ok {
			return ps
		}
		ps := &Pass{Level: level, Domain: dom}
		passes[k] = ps
		return ps
	}
	roots := map[*Pass][]*ir.Node{}
	for _, n := range g.Nodes {
		switch {
		case n.Op.Class() == ir.Reduce:
			ps := pass(b.lvl[n.ID], n.Args[0].Shape)
			roots[ps] = append(roots[ps], n)
			ps.Reduces = append(ps.Reduces, n)
		case b.stored[n.ID]:
			ps := pass(b.lvl[n.ID], n.Shape)
			roots[ps] = append(roots[ps], n)
			ps.Stores = append(ps.Stores, n)
			ps.Scan = ps.Scan || n.Op == ir.OpScanRev
		}
	}
	for _, ps := range passes {
		p.Passes = append(p.Passes, ps)
	}
	sort.Slice(p.Passes, func(i, j int) bool {
		a, c := p.Passes[i], p.Passes[j]
		if a.Level != c.Level {
			return a.Level < c.Level
		}
		if a.Domain.Numel() != c.Domain.Numel() {
			return a.Domain.Numel() < c.Domain.Numel()
		}
		return a.Domain.String() < c.Domain.String()
	})

	// Buffers: outputs first (by output order), then scratch in node order.
	for _, o := range g.Outputs {
		if o.Node.Op.Class() != ir.Leaf && p.bufOf[o.Node.ID] == nil {
			p.bufOf[o.Node.ID] = &Buffer{Name: o.Name, Node: o.Node, Output: o}
		}
	}
	for _, n := range g.Nodes {
		if b.stored[n.ID] && p.bufOf[n.ID] == nil {
			buf := &Buffer{Name: fmt.Sprintf("s%d", len(p.Scratch)), Node: n}
			p.Scratch = append(p.Scratch, buf)
			p.bufOf[n.ID] = buf
		}
	}

	for i, ps := range p.Passes {
		ps.Index = i
		b.fill(ps, roots[ps])
	}
	return p
}

type builder struct {
	g      *ir.Graph
	lvl    map[int]int    // node ID -> level of the pass that computes it
	need   map[string]int // memo for needAt
	stored map[int]bool
}

// level computes the level of the pass that computes n (memoised; nodes come in topological order).
func (b *builder) level(n *ir.Node) int {
	if l, ok := b.lvl[n.ID]; ok {
		return l
	}
	l := 0
	switch n.Op.Class() {
	case ir.Leaf:
	case ir.Elementwise, ir.Scan:
		for _, a := range n.Args {
			l = max(l, b.needAt(a, n.Shape))
		}
	case ir.Reduce:
		l = b.needAt(n.Args[0], n.Args[0].Shape)
	case ir.Shift:
		l = max(b.done(n.Args[0]), b.done(n.Args[1]))
	case ir.Gather:
		l = max(b.done(n.Args[0]), b.needAt(n.Args[1], n.Shape))
	}
	b.lvl[n.ID] = l
	return l
}

// done is the first level at which all of n is in memory.
func (b *builder) done(n *ir.Node) int {
	if n.Op.Class() == ir.Leaf {
		return 0
	}
	return b.level(n) + 1
}

// needAt is the first level at which a pass over domain dom can have n's value at its index:
// elementwise chains are recomputed in the pass, so they need what they read; a reduction is
// ready one level after it is accumulated; a scan, shift or gather of the same domain can be
// computed in the same pass, one of another domain must have finished.
func (b *builder) needAt(n *ir.Node, dom ir.Shape) int {
	k := fmt.Sprintf("%d|%s", n.ID, dom)
	if l, ok := b.need[k]; ok {
		return l
	}
	l := 0
	switch n.Op.Class() {
	case ir.Leaf:
	case ir.Elementwise:
		for _, a := range n.Args {
			l = max(l, b.needAt(a, dom))
		}
	case ir.Reduce:
		l = b.level(n) + 1
	default:
		l = b.level(n)
		if !n.Shape.Equal(dom) {
			l++
		}
	}
	b.need[k] = l
	return l
}

// fill collects the nodes a pass loads and computes to produce its roots. Elementwise nodes
// are always recomputed (levels were assigned assuming so); roots are computed here; what
// else is not a leaf comes from a finished pass (a reduction, or a scan, shift or gather of
// an earlier level) and is loaded.
func (b *builder) fill(ps *Pass, roots []*ir.Node) {
	isRoot := map[int]bool{}
	for _, r := range roots {
		isRoot[r.ID] = true
	}
	seen := map[int]bool{}
	var visit func(n *ir.Node)
	visit = func(n *ir.Node) {
		if seen[n.ID] {
			return
		}
		seen[n.ID] = true
		if n.Op.Class() == ir.Leaf || !(isRoot[n.ID] || n.Op.Class() == ir.Elementwise) {
			ps.Loads = append(ps.Loads, n)
			return
		}
		switch n.Op.Class() {
		case ir.Reduce:
			visit(n.Args[0])
			return // accumulated, not computed per index
		case ir.Shift:
			// Reads its operands from memory at the next index.
		case ir.Gather:
			visit(n.Args[1]) // the operand is read at the gathered index
		default:
			for _, a := range n.Args {
				visit(a)
			}
		}
		ps.Compute = append(ps.Compute, n)
	}
	for _, r := range roots {
		visit(r)
	}
	sort.Slice(ps.Compute, func(i, j int) bool { return ps.Compute[i].ID < ps.Compute[j].ID })
	sort.Slice(ps.Loads, func(i, j int) bool { return ps.Loads[i].ID < ps.Loads[j].ID })
}

// String prints the plan (lossgen explain).
func (p *Plan) String() string {
	var s strings.Builder
	for _, ps := range p.Passes {
		kind := "elementwise"
		if ps.Scan {
			kind = "reverse scan along " + ps.Domain[len(ps.Domain)-1].Name
		}
		fmt.Fprintf(&s, "pass %d (level %d): %s over %s\n", ps.Index, ps.Level, kind, ps.Domain)
		var names []string
		for _, n := range ps.Loads {
			names = append(names, p.describe(n))
		}
		fmt.Fprintf(&s, "  reads:  %s\n", strings.Join(names, ", "))
		for _, n := range ps.Compute {
			fmt.Fprintf(&s, "    %s\n", n)
		}
		names = names[:0]
		for _, n := range ps.Stores {
			names = append(names, p.describe(n))
		}
		if len(names) > 0 {
			fmt.Fprintf(&s, "  writes: %s\n", strings.Join(names, ", "))
		}
		names = names[:0]
		for _, n := range ps.Reduces {
			names = append(names, fmt.Sprintf("%s(v%d) over %s -> %s", n.Op, n.Args[0].ID, strings.Join(n.Axes, ","), p.describe(n)))
		}
		if len(names) > 0 {
			fmt.Fprintf(&s, "  reduces: %s\n", strings.Join(names, "; "))
		}
	}
	return s.String()
}

func (p *Plan) describe(n *ir.Node) string {
	switch {
	case n.Op == ir.OpInput:
		return n.Input.Name
	case n.Op == ir.OpConst:
		if len(n.Value) == 1 {
			return fmt.Sprintf("%v", n.Value[0])
		}
		return fmt.Sprintf("const%s", n.Shape)
	}
	if buf := p.Buffer(n); buf != nil {
		return fmt.Sprintf("%s(v%d)%s", buf.Name, n.ID, n.Shape)
	}
	return fmt.Sprintf("v%d", n.ID)
}
