// Package plan groups an IR graph into fused loops ("passes") that every backend emits the
// same way, so the backends differ only in how they write one loop.
//
// Outer structure. A pass loops over a domain of batch dims. Elementwise nodes, shifts,
// gathers and reductions over non-batch dims (actions, atoms, ensemble members) are never
// stored unless they are outputs: each pass recomputes what it needs from what is in memory
// (inputs, constants, earlier results), so a chain costs arithmetic, not memory traffic. What
// must be in memory is: inputs; outputs; scan results read by another pass; the operands of
// shifts and gathers (read at other indices); and results of reductions over batch dims,
// which exist only once their loop has finished. Such a reduction is therefore a barrier: a
// node that reads one runs at a later level (but see RowLocal: one that keeps the domain's
// first dim is finished row by row, and its readers run row by row after it). A scan runs in the pass of its own shape,
// iterating its axis in its direction, and everything of the same level and domain joins that
// pass. Passes run in order of level, then of domain size (smaller domains first).
//
// Inner structure. At each index of its domain a pass runs a program (Block): steps that
// load, compute and store values, accumulate reductions, and loops over non-batch dims. A
// reduction over non-batch dims opens a loop over them, nested where its result is needed,
// and its result is ready after the loop; a value with non-batch dims is computed inside the
// loop that binds them, recomputed in every loop that needs it, and values with fewer dims
// are computed outside, once.
package plan

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
)

// Plan is the fused-loop schedule of a graph.
type Plan struct {
	Graph   *ir.Graph
	Passes  []*Pass
	Scratch []*Buffer // intermediate buffers the kernel allocates (not inputs or outputs)

	bufOf map[int][]*Buffer // node ID -> the buffers the node is stored in
}

// Buffer is a stored tensor: an output, or a scratch buffer.
type Buffer struct {
	Name   string     // output name, or "s<k>" for scratch
	Node   *ir.Node   // the node whose value it holds
	Output *ir.Output // non-nil for an output buffer
}

// Pass is one fused loop nest over Domain: at each index it runs Body; after the loops its
// barrier reductions (Reduces) are finished into their buffers.
type Pass struct {
	Index  int
	Level  int
	Domain ir.Shape // batch dims, outermost first; the last is the vector (AVX2) / thread (PTX) axis
	// Scan is the axis along which the pass's scans run and their direction (nil: no scan;
	// every loop runs forwards). Its loop runs in that direction; the other loops forwards.
	Scan *ScanAxis
	Body *Block

	Loads   []*ir.Node // read from memory at the loop indices (inputs, constants, stored results)
	Compute []*ir.Node // computed at each index (every block), in dependency order
	Stores  []*ir.Node // written to their buffer
	Reduces []*ir.Node // barrier reductions: accumulated over the whole pass
	Inner   []*ir.Node // reductions over non-batch dims, finished inside each index
	Row     *RowLocal  // non-nil: the pass runs row by row with another (see RowLocal)

	// Schedule is how the pass runs (loops, lanes, chunks, stores, GPU threads): every
	// backend emits what it says.
	Schedule *Schedule
}

// ScanAxis is the axis and direction of a pass's scans.
type ScanAxis struct {
	Axis    string
	Reverse bool
}

// Block is a sequence of steps run at one combination of inner (non-batch) indices: a pass's
// top block runs once per index of the domain; a Loop step's block runs once per index of its
// Dims, nested in the block that holds the step.
type Block struct {
	Dims  ir.Shape // the inner dims this block's loop adds (empty for a pass's top block)
	Bound ir.Shape // every inner dim bound in this block (the enclosing blocks' and its own), graph order
	Steps []Step
}

// StepKind says what a step does.
type StepKind uint8

// The step kinds.
const (
	Load       StepKind = iota // read Node from memory at the current indices
	Compute                    // compute Node (elementwise, shift, gather or scan)
	Store                      // write Node's value to its buffer
	Accumulate                 // fold Node's argument (already in the block) into Node's state
	Init                       // start an inner reduction's state, before its loop
	Finish                     // an inner reduction's value from its state, after its loop
	Loop                       // run Block at every index of Block.Dims
)

func (k StepKind) String() string {
	return [...]string{"load", "compute", "store", "accumulate", "init", "finish", "loop"}[k]
}

// Step is one step of a block.
type Step struct {
	Kind  StepKind
	Node  *ir.Node
	Block *Block // Loop only
}

// Buffer returns the buffer that holds n (the first, if n is several outputs), or nil when n
// is recomputed wherever it is used.
func (p *Plan) Buffer(n *ir.Node) *Buffer {
	if bs := p.bufOf[n.ID]; len(bs) > 0 {
		return bs[0]
	}
	return nil
}

// Buffers returns every buffer a Store of n writes: one per output it is (an output may be
// another output's value, or an input's), or its scratch buffer.
func (p *Plan) Buffers(n *ir.Node) []*Buffer { return p.bufOf[n.ID] }

// Options turns off planner choices, for A/B measurements (gen's TestPlanChoicesAB); the
// zero value is what Build does.
type Options struct {
	NoSink     bool // keep every result in the first pass that can compute it (see sinkable)
	NoRowLocal bool // run every reduction over a batch dim as a barrier (see RowLocal)
}

// Build schedules g. It fails on graphs no backend can run (a scan over non-batch dims, a
// shift along one).
func Build(g *ir.Graph) (*Plan, error) { return BuildOptions(g, Options{}) }

// BuildOptions is Build with the choices opt turns off.
func BuildOptions(g *ir.Graph, opt Options) (*Plan, error) {
	for _, n := range g.Nodes {
		switch n.Op.Class() {
		case ir.Scan, ir.Shift:
			if len(g.InnerPart(n.Shape)) > 0 || !g.IsBatch(n.Axes[0]) {
				return nil, fmt.Errorf("plan: %s: scans and shifts run over batch dims only", n)
			}
		}
	}
	p, sunk := build(g, nil, opt), map[int]int{}
	for better := !opt.NoSink; better; {
		better = false
		for _, sink := range sinkable(p) {
			maps.Copy(sink, sunk)
			if q := build(g, sink, opt); cheaper(q, p) {
				p, sunk, better = q, sink, true
			}
		}
	}
	return p, nil
}

// build schedules g with the results in minLevel (node ID -> level; see sinkable) computed no
// earlier than that level.
func build(g *ir.Graph, minLevel map[int]int, opt Options) *Plan {
	b := &builder{g: g, stored: map[int]bool{}, minLevel: map[int]int{}}
	for id, l := range minLevel {
		b.minLevel[id] = l
	}
	b.markStored()
	passes, homes := b.passes()
	p := &Plan{Graph: g, bufOf: map[int][]*Buffer{}}
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
	for i, ps := range p.Passes {
		ps.Index = i
		b.program(ps, homes[ps])
	}
	b.storeLoadedScans(p)
	b.buffers(p)
	if !opt.NoRowLocal {
		fuseRows(p)
	}
	p.schedule() // after fuseRows, which may reorder the passes
	return p
}

// markStored decides what must be stored: outputs, operands read at other indices, barrier
// reductions; never a leaf, which is in memory already (or baked), unless it is an output.
func (b *builder) markStored() {
	g := b.g
	for _, o := range g.Outputs {
		b.stored[o.Node.ID] = true
	}
	for _, n := range g.Nodes {
		switch {
		case n.Op.Class() == ir.Reduce && !g.InnerReduce(n):
			b.stored[n.ID] = true
		case n.Op.Class() == ir.Shift, n.Op.Class() == ir.Gather:
			b.stored[n.Args[0].ID] = true
		}
	}
	for _, n := range g.Nodes {
		if n.Op.Class() == ir.Leaf {
			b.stored[n.ID] = false // already in memory (or baked)
		}
	}
	for _, o := range g.Outputs {
		b.stored[o.Node.ID] = true // an input or constant that is an output is copied there
	}
}

// passes groups the nodes into passes by level and domain, raising levels until no pass
// holds scans of two directions or axes, or a reduction its GPU threads cannot run
// (raiseUnmappedReductions). It returns the passes by key and each one's nodes.
func (b *builder) passes() (map[string]*Pass, map[*Pass][]*ir.Node) {
	for {
		b.lvl, b.need = map[int]int{}, map[string]int{}
		for _, n := range b.g.Nodes {
			b.level(n)
		}
		passes, homes := map[string]*Pass{}, map[*Pass][]*ir.Node{}
		conflict := false
		for _, n := range b.g.Nodes {
			if !b.home(n) {
				continue
			}
			dom := b.domain(n)
			key := fmt.Sprintf("%d|%s", b.lvl[n.ID], dom)
			ps := passes[key]
			if ps == nil {
				ps = &Pass{Level: b.lvl[n.ID], Domain: dom}
				passes[key] = ps
			}
			if n.Op == ir.OpScan {
				sa := &ScanAxis{Axis: n.Axes[0], Reverse: n.Reverse}
				if ps.Scan != nil && *ps.Scan != *sa {
					b.minLevel[n.ID] = b.lvl[n.ID] + 1
					conflict = true
					continue
				}
				ps.Scan = sa
			}
			homes[ps] = append(homes[ps], n)
		}
		if b.raiseUnmappedReductions(homes) {
			conflict = true
		}
		if !conflict {
			return passes, homes
		}
	}
}

// raiseUnmappedReductions moves a barrier reduction that the GPU's thread mapping of its pass
// (gpuMapping) cannot run to the next level, and reports whether it moved one. Two cases
// arise: a scan pass runs one GPU thread per line, so a reduction over some of its lines but
// not all (the explained variance over A of GAE on [A, B, T], which keeps B) would merge
// some threads and not others; and an elementwise pass loops the dims its reductions keep
// outermost, so two reductions keeping different dims (a mean over B, T keeping A beside a
// variance over A keeping B) cannot both find theirs outermost. Alone in a pass of the next
// level, the reduction maps; every backend runs the plan this gives, so all stay the same
// computation. raises bounds the moves (a reduction no pass could map stays, and is the
// spec's error).
func (b *builder) raiseUnmappedReductions(homes map[*Pass][]*ir.Node) bool {
	raised := false
	for ps, nodes := range homes {
		probe := &Pass{Domain: ps.Domain, Scan: ps.Scan}
		for _, n := range nodes {
			if n.Op.Class() == ir.Reduce && !b.g.InnerReduce(n) {
				probe.Reduces = append(probe.Reduces, n)
			}
		}
		if len(probe.Reduces) == 0 || b.raises > len(b.g.Nodes) {
			continue
		}
		if m := gpuMapping(probe); m.Unmapped != nil {
			n := m.Unmapped.Node
			b.minLevel[n.ID] = b.lvl[n.ID] + 1
			b.raises++
			raised = true
		}
	}
	return raised
}

// storeLoadedScans makes a scan that another pass reads stored by its own pass.
func (b *builder) storeLoadedScans(p *Plan) {
	loaded := map[int]bool{}
	for _, ps := range p.Passes {
		for _, n := range ps.Loads {
			loaded[n.ID] = true
		}
	}
	for _, ps := range p.Passes {
		for i := 0; i < len(ps.Body.Steps); i++ {
			st := ps.Body.Steps[i]
			if st.Kind == Compute && st.Node.Op == ir.OpScan && loaded[st.Node.ID] && !b.stored[st.Node.ID] {
				b.stored[st.Node.ID] = true
				ps.Body.Steps = append(ps.Body.Steps[:i+1], append([]Step{{Kind: Store, Node: st.Node}}, ps.Body.Steps[i+1:]...)...)
				ps.Stores = append(ps.Stores, st.Node)
			}
		}
	}
}

// buffers names the plan's buffers: outputs first (by output order), then scratch in node
// order.
func (b *builder) buffers(p *Plan) {
	for _, o := range b.g.Outputs {
		p.bufOf[o.Node.ID] = append(p.bufOf[o.Node.ID], &Buffer{Name: o.Name, Node: o.Node, Output: o})
	}
	for _, n := range b.g.Nodes {
		if b.stored[n.ID] && p.bufOf[n.ID] == nil {
			buf := &Buffer{Name: fmt.Sprintf("s%d", len(p.Scratch)), Node: n}
			p.Scratch = append(p.Scratch, buf)
			p.bufOf[n.ID] = []*Buffer{buf}
		}
	}
}

type builder struct {
	g        *ir.Graph
	lvl      map[int]int    // node ID -> level of the pass that computes it
	need     map[string]int // memo for needAt
	stored   map[int]bool
	minLevel map[int]int // results sunk to a later pass (sinkable), scans moved up a level to keep one scan direction per pass, reductions moved to one the GPU maps
	raises   int         // reductions raiseUnmappedReductions moved
}

// home reports whether n belongs to one pass (rather than being recomputed where used): scans,
// barrier reductions, and stored nodes.
func (b *builder) home(n *ir.Node) bool {
	switch n.Op.Class() {
	case ir.Leaf:
		return b.stored[n.ID] // an output
	case ir.Scan:
		return true
	case ir.Reduce:
		return !b.g.InnerReduce(n) || b.stored[n.ID]
	}
	return b.stored[n.ID]
}

// recompute reports whether n is computed in every pass that needs it.
func (b *builder) recompute(n *ir.Node) bool {
	switch n.Op.Class() {
	case ir.Elementwise, ir.Shift, ir.Gather:
		return true
	case ir.Reduce:
		return b.g.InnerReduce(n)
	}
	return false
}

// domain is the batch domain of the pass a home node belongs to.
func (b *builder) domain(n *ir.Node) ir.Shape {
	if n.Op.Class() == ir.Reduce && !b.g.InnerReduce(n) {
		return b.g.BatchPart(n.Args[0].Shape)
	}
	return b.g.BatchPart(n.Shape)
}

// level computes the level of the pass that computes n (memoised; nodes come in topological order).
func (b *builder) level(n *ir.Node) int {
	if l, ok := b.lvl[n.ID]; ok {
		return l
	}
	l := 0
	switch {
	case n.Op.Class() == ir.Leaf:
	case n.Op == ir.OpScan:
		for _, a := range n.Args {
			l = max(l, b.needAt(a, n.Shape))
		}
	case n.Op.Class() == ir.Reduce && !b.g.InnerReduce(n):
		l = b.needAt(n.Args[0], b.domain(n))
	default:
		l = b.needAt(n, b.domain(n))
	}
	l = max(l, b.minLevel[n.ID])
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
// recomputed nodes need what they read (shifts and gathers: their operand complete in
// memory); a barrier reduction is ready one level after it is accumulated; a scan of the
// same domain is computed in the same pass, one of another domain must have finished.
func (b *builder) needAt(n *ir.Node, dom ir.Shape) int {
	k := fmt.Sprintf("%d|%s", n.ID, dom)
	if l, ok := b.need[k]; ok {
		return l
	}
	l := 0
	switch {
	case n.Op.Class() == ir.Leaf:
	case n.Op.Class() == ir.Elementwise:
		for _, a := range n.Args {
			l = max(l, b.needAt(a, dom))
		}
	case n.Op.Class() == ir.Shift, n.Op.Class() == ir.Gather:
		l = max(b.done(n.Args[0]), b.needAt(n.Args[1], dom))
	case b.g.InnerReduce(n):
		l = b.needAt(n.Args[0], dom)
	case n.Op.Class() == ir.Reduce:
		l = b.level(n) + 1
	default: // scan
		l = b.level(n)
		if !n.Shape.Equal(dom) {
			l++
		}
	}
	b.need[k] = l
	return l
}

// String prints the plan (lossgen explain).
func (p *Plan) String() string {
	var s strings.Builder
	for _, ps := range p.Passes {
		kind := "elementwise"
		if ps.Scan != nil {
			dir := "forward"
			if ps.Scan.Reverse {
				dir = "reverse"
			}
			kind = dir + " scan along " + ps.Scan.Axis
		}
		fmt.Fprintf(&s, "pass %d (level %d): %s over %s\n", ps.Index, ps.Level, kind, ps.Domain)
		if ps.Row != nil {
			s.WriteString(p.describeRow(ps))
		}
		var names []string
		for _, n := range ps.Loads {
			names = append(names, p.describe(n))
		}
		fmt.Fprintf(&s, "  reads:  %s\n", strings.Join(names, ", "))
		p.printBlock(&s, ps.Body, "    ")
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
		s.WriteString(ps.Schedule.String(ps))
	}
	return s.String()
}

func (p *Plan) printBlock(s *strings.Builder, bl *Block, indent string) {
	for _, st := range bl.Steps {
		switch st.Kind {
		case Compute:
			fmt.Fprintf(s, "%s%s\n", indent, st.Node)
		case Loop:
			fmt.Fprintf(s, "%sfor %s:\n", indent, strings.Join(st.Block.Dims.Names(), ", "))
			p.printBlock(s, st.Block, indent+"  ")
		case Init, Finish:
			fmt.Fprintf(s, "%s%s v%d\n", indent, st.Kind, st.Node.ID)
		case Accumulate:
			fmt.Fprintf(s, "%s%s(v%d) into v%d\n", indent, st.Node.Op, st.Node.Args[0].ID, st.Node.ID)
		}
	}
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
	case n.Op == ir.OpIota:
		return fmt.Sprintf("iota%s", n.Shape)
	}
	if buf := p.Buffer(n); buf != nil {
		return fmt.Sprintf("%s(v%d)%s", buf.Name, n.ID, n.Shape)
	}
	return fmt.Sprintf("v%d", n.ID)
}
