package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
)

// Schedule is how a pass runs, decided here for every backend: the order and direction of
// its loops, the vector (AVX2) and thread (PTX) axis, how its domain is cut into fixed chunks
// that run concurrently, and how each stored buffer is written. What a pass computes (its
// Body) never depends on it (Halide, TVM: the algorithm does not change with the schedule);
// the only results it changes are reductions' summation orders, which it fixes from the
// shape alone, never from the machine.
type Schedule struct {
	// Loops are the domain's loops, outermost first (the domain's order); the last is the
	// vector axis, walked in blocks of Lanes elements.
	Loops []DomainLoop
	// Lanes is how many elements a CPU vector block holds: one 32-byte AVX2 register of the
	// graph's dtype (8 float32, 4 float64).
	Lanes int
	// Chunks, when not nil, cuts the domain into chunks that run concurrently, each with its
	// own reduction states, merged in chunk order afterwards. A row-local pair's passes share
	// the pair's.
	Chunks *Chunking
	// Row, for a pass of a row-local pair (Pass.Row), is the pair's schedule, shared by both.
	Row *RowSchedule
	// Prefetch says the pass streams more than PrefetchPass bytes: it prefetches ahead.
	Prefetch bool
	// Stores is the store policy of each stored node (by ID; every one of Pass.Stores).
	Stores map[int]StorePolicy
	// GPU is the PTX thread mapping; GPU.Unmapped says why a pass has none yet.
	GPU GPUMapping
}

// DomainLoop is one loop over a domain dim.
type DomainLoop struct {
	Dim     ir.Dim
	Reverse bool // walked from the last index down (a reverse scan's axis)
}

// Chunking cuts a pass's domain along Dim into Count chunks, as evenly as Align allows:
// chunk c of n covers units [c·u/n, (c+1)·u/n) of u = ⌊size/Align⌋ units of Align indices,
// the last chunk also the size%Align tail. The count is fixed from the shape (never from
// the machine's cores or GOMAXPROCS), so the results are the same bits on every machine.
type Chunking struct {
	// Dim is the dim cut: the first domain dim of a multi-dim domain (chunks of rows), the
	// vector axis of a flat one (chunks of whole vector blocks).
	Dim string
	// Align is the indices per unit: 1 for rows; for the vector axis 16 float32 elements (a
	// block of the AVX-512 variants, two of AVX2) or 4 float64 ones, so that every chunk but
	// the last is whole blocks of every backend and keeps the buffers' alignment.
	Align int
	// Count is how many chunks the pass runs as by default: MaxChunks for a pass of at
	// least ChunkElems elements (a smaller one is not worth the goroutines and merges), else
	// 1. Backends keep it a variable that tests set to check the chunked form on small data.
	Count int
	// Merge are the reductions whose chunk states merge, in chunk order (every barrier
	// reduction of the pass: sums, means, variances and logsumexps over Dim).
	Merge []*ir.Node
}

// Units is how many units of Align indices the chunked dim has (a chunk holds at least one).
func (c *Chunking) Units(dom ir.Shape) int { return dom[dom.Index(c.Dim)].Size / c.Align }

// StorePolicy is how a pass writes a stored buffer.
type StorePolicy uint8

// The store policies.
const (
	// Regular stores go through the caches.
	Regular StorePolicy = iota
	// NonTemporal stores bypass the caches for full blocks (VMOVNTPS): no read-for-ownership
	// of the lines, but a later pass reading the buffer finds it in memory, not in cache.
	// It needs 32-byte aligned buffers; a backend falls back to regular stores otherwise.
	NonTemporal
)

func (s StorePolicy) String() string { return [...]string{"regular", "non-temporal"}[s] }

// GPUMapping is a pass's PTX launch: one thread per index of Thread, each looping over Loop
// in order; Grid blocks of Block threads (whole warps, at most MaxBlock).
type GPUMapping struct {
	Thread  ir.Shape // dims indexed by the thread; adjacent threads touch adjacent elements
	Loop    ir.Shape // dims each thread loops over, outermost first (a scan's axis)
	Scan    bool     // Loop is the scan axis, walked in the scan's direction
	Threads int
	Grid    int
	Block   int
	// Reductions are the pass's barrier reductions' mappings, as Pass.Reduces.
	Reductions []GPUReduction
	// Unmapped, when not nil, is why the PTX backend cannot run this pass yet.
	Unmapped *UnmappedError
}

// GPUReduction is how a barrier reduction maps onto the GPU threads. A thread reduction
// keeps every thread dim: one thread sees all of a slot's elements and finishes it. A block
// reduction reduces every thread dim: each thread folds its elements, the block merges its
// threads, and a merge kernel folds the blocks' partial states in block order. Either way
// the kept loop dims are the outermost loops (Prefix of them), so a slot's elements arrive
// within one run of the inner loops.
type GPUReduction struct {
	Node   *ir.Node
	Block  bool
	Prefix int
}

// UnmappedError is a reduction the PTX backend has no thread mapping for yet (README, PTX:
// "Not mapped yet").
type UnmappedError struct {
	Pass   int      // the plan's pass
	Node   *ir.Node // the reduction
	Reason string
}

func (e *UnmappedError) Error() string {
	return fmt.Sprintf("ptxgen: pass %d: %s %s", e.Pass, e.Node, e.Reason)
}

// LargePass is the working set (bytes a pass streams) beyond the caches of current x86
// servers' cores, so that the data comes from memory anyway: above it, a pass may store
// non-temporally (storePolicy).
const LargePass = 32 << 20

// PrefetchPass is the working set above which a pass prefetches ahead: beyond a core's L2
// (2 MiB on Zen 5, 1–2 MiB on current Intel servers) several times over, so its streams come
// from L3 or memory. Measured on the 2-core Zen 5 with alternated runs of the same spec built
// with a threshold of 32 MiB and of 8 MiB: GAE [1024, 1024] (a 22 MiB scan pass) Forward at one
// thread, 6 runs each, medians 1.77 → 1.38 ns/element; GSPO at B = 512, L = 4096 (passes of
// 10–26 MiB) ForwardBackward, 5 runs, 2 threads 0.81 → 0.72, 1 thread 1.41 → 1.31; GRPO's
// 1 thread 2.34 → 2.23, 2 threads 1.20 → 1.24 (its noise).
const PrefetchPass = 8 << 20

// MaxChunks is how many chunks a large chunkable pass runs as, or fewer when its chunked dim
// has fewer units. It is fixed, not the machine's core count, so results are the same bits
// on every machine; 8 chunks keep 8 cores busy and cost 7 state merges.
const MaxChunks = 8

// ChunkElems is the smallest pass (in elements) that runs in chunks by default: about
// 0.25 ms of a ClipPPO+GAE pass on one core, against a few µs to start goroutines and merge
// states. The example specs' batches are below it, so their results are those of one piece.
const ChunkElems = 1 << 16

// MaxBlock is the most threads of a PTX block.
const MaxBlock = 256

// GridFor is the 1-D launch shape for n threads: blocks of whole warps, at most MaxBlock.
func GridFor(n int) (grid, block int) {
	block = min(MaxBlock, (n+31)/32*32)
	return (n + block - 1) / block, block
}

// schedule decides every pass's schedule.
func (p *Plan) schedule() {
	lanes := 8
	if p.Graph.DType == ir.F64 {
		lanes = 4
	}
	for _, ps := range p.Passes {
		s := &Schedule{Lanes: lanes, Stores: map[int]StorePolicy{}}
		for _, d := range ps.Domain {
			s.Loops = append(s.Loops, DomainLoop{Dim: d, Reverse: ps.Scan != nil && ps.Scan.Reverse && ps.Scan.Axis == d.Name})
		}
		s.Prefetch = p.PassBytes(ps) > PrefetchPass
		s.Chunks = chunking(ps, lanes)
		ps.Schedule = s
		policy := p.storePolicy(ps)
		for _, n := range ps.Stores {
			s.Stores[n.ID] = policy
		}
		s.GPU = gpuMapping(ps)
		ps.Schedule = s
	}
	for _, ps := range p.Passes {
		if rl := ps.Row; rl != nil && rl.First == ps {
			rs, c := rowSchedule(rl)
			for _, x := range []*Pass{rl.First, rl.Second} {
				x.Schedule.Row, x.Schedule.Chunks = rs, c
			}
		}
	}
}

// chunking is how pass ps is cut into chunks, or nil when it runs in one piece. A pass is
// chunkable along its first domain dim (rows; for a flat domain, its vector axis in whole
// blocks) when that dim is not its scan axis, every barrier reduction merges
// (mergesInChunks), and every buffer it stores has that dim (chunks write disjoint
// elements). A reduction that keeps the dim (a per-row sum over the tokens) has each row's
// state in one chunk only, the others' at its identity: the chunk merge leaves it exact
// (x + 0, a Welford merge with an empty state); a per-row variance is left out, since the
// kernels count a chunk's elements as its rows times the elements per row.
func chunking(ps *Pass, lanes int) *Chunking {
	if len(ps.Domain) == 0 || (ps.Scan != nil && ps.Scan.Axis == ps.Domain[0].Name) {
		return nil
	}
	d := ps.Domain[0]
	for _, n := range ps.Stores {
		if !n.Shape.Has(d.Name) {
			return nil
		}
	}
	for _, r := range ps.Reduces {
		switch {
		case !mergesInChunks(r):
			return nil
		case !slices.Contains(r.Axes, d.Name) && r.Op.Welford():
			return nil // a per-row variance's count is not the chunk's rows × elements per row
		}
	}
	c := &Chunking{Dim: d.Name, Align: 1, Count: 1, Merge: ps.Reduces}
	if len(ps.Domain) == 1 {
		c.Align = lanes
		if lanes == 8 { // float32: whole 16-lane blocks (Chunking.Align)
			c.Align = 16
		}
	}
	if ps.Domain.Numel() >= ChunkElems {
		c.Count = min(c.Units(ps.Domain), MaxChunks)
	}
	if c.Align > 1 && c.Units(ps.Domain) < 2 {
		return nil // under two blocks: nothing to cut
	}
	return c
}

// mergesInChunks reports whether reduction r's chunk states merge, in chunk order, in every
// backend that chunks: a sum, mean, variance or logsumexp (states that merge by addition or
// Chan's update).
func mergesInChunks(r *ir.Node) bool {
	switch r.Op {
	case ir.OpSum, ir.OpMean, ir.OpVar, ir.OpStd, ir.OpLogSumExp:
		return true
	}
	return false
}

// storePolicy is how pass ps writes its buffers: non-temporally when its sweep is large
// (beyond LargePass, so its data comes from memory anyway: the pass's own bytes, or for a
// row-local pass both sweeps' over each row), every buffer it stores is eligible, and its
// stores are at least a fifth of the bytes it streams (each saves a read-for-ownership of
// its lines); regularly otherwise.
//
// Measured on the 2-core Zen 5 this project runs on: the same spec built with every large
// pass non-temporal and with regular stores, alternated one process per round, medians of the
// paired ratios non-temporal ÷ regular over 7–13 rounds, at 1 and 2 threads (identical kernels
// measured so vary by about ±6%). Flat ClipPPO at B = 16M, ForwardBackward (its pass stores
// 30%): 0.80 and 0.95. ClipPPO+GAE [4096, 4096] Forward (its scan pass stores 23%): 0.89 and
// 0.92; its ForwardBackward with the scan pass non-temporal too (the pass after it already
// was): 1.06 and 1.04 in one run, 0.86 and 0.96 in a second, of 7 rounds each. IQL at Q = 2,
// B = 2^20, Forward: 0.88 and 0.96. The token losses at B = 512, L = 4096, ForwardBackward
// (gradient passes storing 28–32%): GSPO 0.94 and 0.90; CISPO 0.95 and 0.96; GRPO 1.11 and
// 1.03 in one run, 0.97 and 0.88 in another; DAPO 0.96 and 1.13, then 1.00 and 0.98;
// distillation 0.95 and 0.88, though its sweep (26 MiB) stays below LargePass. Categorical
// ClipPPO at B = 2^20, A = 16 (44%): 14.2 and 15.1 ns/element at 2 threads. On the 2-core
// Zen 3 an earlier policy was measured on, the flat 16M ForwardBackward lost (1.19, 1.18) and
// the ClipPPO+GAE Forward did not win (0.92, 1.02), so the threshold was 40% there; machines
// differ, and the policy follows the one the project measures on.
func (p *Plan) storePolicy(ps *Pass) StorePolicy {
	if len(ps.Stores) == 0 || p.sweepBytes(ps) <= LargePass {
		return Regular
	}
	stored := 0
	for _, n := range ps.Stores {
		if !ps.NonTemporalEligible(n) {
			return Regular
		}
		stored += n.Shape.Numel()
	}
	size := 4
	if p.Graph.DType == ir.F64 {
		size = 8
	}
	if 5*stored*size < p.PassBytes(ps) {
		return Regular
	}
	return NonTemporal
}

// sweepBytes is how many bytes the sweep that runs pass ps streams: its own (PassBytes), or
// for a row-local pass, which sweeps each row with its partner while the row is in cache,
// both passes' bytes a row over every row, if that is more.
func (p *Plan) sweepBytes(ps *Pass) int {
	n := p.PassBytes(ps)
	if rl := ps.Row; rl != nil {
		n = max(n, rl.RowBytes*rl.Dim.Size)
	}
	return n
}

// NonTemporalEligible reports whether pass ps could store n non-temporally: every row of the
// vector axis is a whole number of blocks, and the vector axis is n's innermost dim, or is
// followed only by dims outside the domain (a categorical's actions: the AVX2 kernel
// transposes such a block and stores it whole) of a whole number of vectors together; so
// full blocks stay 32-byte aligned when the buffers are.
func (ps *Pass) NonTemporalEligible(n *ir.Node) bool {
	if len(ps.Domain) == 0 || len(n.Shape) == 0 {
		return false
	}
	v := ps.Domain[len(ps.Domain)-1]
	i := n.Shape.Index(v.Name)
	if i < 0 || n.Shape[i] != v || v.Size%ps.Schedule.Lanes != 0 {
		return false
	}
	inner := n.Shape[i+1:]
	for _, d := range inner {
		if ps.Domain.Has(d.Name) {
			return false
		}
	}
	return len(inner) == 0 || inner.Numel()%ps.Schedule.Lanes == 0
}

// Reverse reports whether the loop over domain dim runs backwards.
func (s *Schedule) Reverse(dim string) bool {
	for _, l := range s.Loops {
		if l.Dim.Name == dim {
			return l.Reverse
		}
	}
	return false
}

// NonTemporal reports whether any buffer of ps is stored non-temporally: backends then emit
// a variant of the pass with such stores, run when the buffers are aligned.
func (s *Schedule) NonTemporal() bool {
	for _, p := range s.Stores {
		if p == NonTemporal {
			return true
		}
	}
	return false
}

// LanesPerSlot is how many lane states each result element (slot) of barrier reduction r
// has on the CPU: 1 when r keeps the vector axis (lanes are slots), else Lanes (each lane
// folds its own elements; the lanes merge after the pass). An inner reduction's states are
// one per lane.
func (s *Schedule) LanesPerSlot(g *ir.Graph, r *ir.Node) int {
	if g.InnerReduce(r) || len(s.Loops) == 0 || r.Shape.Has(s.Loops[len(s.Loops)-1].Dim.Name) {
		return 1
	}
	return s.Lanes
}

// PassBytes is how many bytes pass ps streams: every array it loads or stores, once.
func (p *Plan) PassBytes(ps *Pass) int {
	size := 4
	if p.Graph.DType == ir.F64 {
		size = 8
	}
	n := 0
	for _, x := range ps.Loads {
		if x.Op == ir.OpConst || x.Op == ir.OpIota {
			continue
		}
		k := size
		if x.Op == ir.OpInput && x.Input.Kind == ir.Bool {
			k = 1
		}
		n += k * x.Shape.Numel()
	}
	for _, x := range ps.Stores {
		n += size * x.Shape.Numel()
	}
	return n
}

// gpuMapping is pass ps's PTX thread mapping. A scan pass runs one thread per line along its
// scan axis (every other dim), each walking the scan axis in the scan's direction; any other
// pass runs one thread per index of its last dim (coalesced) and loops over the outer dims
// (see gpuLoopOrder). A scalar pass is one thread.
func gpuMapping(ps *Pass) GPUMapping {
	var m GPUMapping
	dom := ps.Domain
	switch {
	case len(dom) == 0:
	case ps.Scan != nil:
		m.Thread, m.Loop, m.Scan = dom.Without(ps.Scan.Axis), ir.Shape{dom[dom.Index(ps.Scan.Axis)]}, true
	default:
		m.Thread, m.Loop = dom[len(dom)-1:], gpuLoopOrder(dom[:len(dom)-1], ps.Reduces)
	}
	m.Threads = m.Thread.Numel()
	m.Grid, m.Block = GridFor(m.Threads)
	for _, r := range ps.Reduces {
		rm, err := m.classify(ps, r)
		if err != nil {
			m.Unmapped = err
			break
		}
		m.Reductions = append(m.Reductions, rm)
	}
	return m
}

// gpuLoopOrder orders an elementwise pass's loop dims so that the dims its reductions keep
// come first (in domain order), then the rest: a thread then finishes each reduction slot
// before moving to the next (e.g. explained variance over the first of three batch dims keeps
// the second: looping it outermost makes each slot's elements one inner run). The order of
// an elementwise loop nest does not change what it computes.
func gpuLoopOrder(loops ir.Shape, reds []*ir.Node) ir.Shape {
	kept := map[string]bool{}
	for _, r := range reds {
		for _, d := range r.Shape {
			kept[d.Name] = true
		}
	}
	var first, rest ir.Shape
	for _, d := range loops {
		if kept[d.Name] {
			first = append(first, d)
		} else {
			rest = append(rest, d)
		}
	}
	return append(first, rest...)
}

// classify maps reduction r of ps onto m's threads, or says why it cannot be yet.
func (m *GPUMapping) classify(ps *Pass, r *ir.Node) (GPUReduction, *UnmappedError) {
	reduced := map[string]bool{}
	for _, a := range r.Axes {
		reduced[a] = true
	}
	allReduced, allKept := true, true
	for _, d := range m.Thread {
		allReduced = allReduced && reduced[d.Name]
		allKept = allKept && !reduced[d.Name]
	}
	var keptLoop []string
	for _, d := range r.Shape {
		if m.Loop.Has(d.Name) {
			keptLoop = append(keptLoop, d.Name)
		}
	}
	for i, name := range keptLoop {
		if m.Loop[i].Name != name {
			return GPUReduction{}, &UnmappedError{Pass: ps.Index, Node: r, Reason: fmt.Sprintf("keeps loop dims %v that are not the outermost loops %v", keptLoop, m.Loop.Names())}
		}
	}
	rm := GPUReduction{Node: r, Prefix: len(keptLoop)}
	switch {
	case allKept:
	case allReduced:
		rm.Block = true
	default:
		return GPUReduction{}, &UnmappedError{Pass: ps.Index, Node: r, Reason: fmt.Sprintf("reduces only some of the thread dims %v", m.Thread.Names())}
	}
	return rm, nil
}

// String prints the schedule (lossgen explain), one line per aspect.
func (s *Schedule) String(ps *Pass) string {
	var b strings.Builder
	if len(s.Loops) == 0 {
		b.WriteString("  schedule: scalar, one piece\n")
	} else {
		var loops []string
		for _, l := range s.Loops {
			dir := ""
			if l.Reverse {
				dir = " reversed"
			}
			loops = append(loops, fmt.Sprintf("%s[%d]%s", l.Dim.Name, l.Dim.Size, dir))
		}
		v := s.Loops[len(s.Loops)-1].Dim
		fmt.Fprintf(&b, "  schedule: loops %s; vector axis %s in blocks of %d lanes (%d full, tail %d)", strings.Join(loops, " > "), v.Name, s.Lanes, v.Size/s.Lanes, v.Size%s.Lanes)
		if s.Prefetch {
			b.WriteString("; prefetch ahead")
		}
		b.WriteString("\n")
	}
	if s.Row != nil {
		s.writeRow(&b, ps)
	}
	switch c := s.Chunks; {
	case c == nil:
		b.WriteString("    chunks: none (one piece)\n")
	default:
		unit := "rows"
		if c.Align > 1 {
			unit = fmt.Sprintf("blocks of %d", c.Align)
		}
		var merge []string
		for _, r := range c.Merge {
			merge = append(merge, fmt.Sprintf("v%d", r.ID))
		}
		fmt.Fprintf(&b, "    chunks: %d along %s (%d units: %s)", c.Count, c.Dim, c.Units(ps.Domain), unit)
		if rl := ps.Row; rl != nil {
			fmt.Fprintf(&b, " of passes %d and %d, whole sweeps", rl.First.Index, rl.Second.Index)
		}
		if len(merge) > 0 {
			fmt.Fprintf(&b, "; merged in chunk order: %s", strings.Join(merge, ", "))
		}
		b.WriteString("\n")
	}
	if len(ps.Stores) > 0 {
		var st []string
		for _, n := range ps.Stores {
			st = append(st, fmt.Sprintf("v%d %s", n.ID, s.Stores[n.ID]))
		}
		fmt.Fprintf(&b, "    stores: %s\n", strings.Join(st, ", "))
	}
	if s.Row != nil && s.writeRowGPU(&b, ps) {
		return b.String()
	}
	g := s.GPU
	if g.Unmapped != nil {
		fmt.Fprintf(&b, "    gpu: not mapped: %s %s\n", g.Unmapped.Node, g.Unmapped.Reason)
		return b.String()
	}
	fmt.Fprintf(&b, "    gpu: %d thread(s) over [%s], grid %d × block %d", g.Threads, strings.Join(g.Thread.Names(), ", "), g.Grid, g.Block)
	if len(g.Loop) > 0 {
		fmt.Fprintf(&b, ", each looping %s", strings.Join(g.Loop.Names(), " > "))
	}
	var inThread, inBlocks []string
	for _, r := range g.Reductions {
		if r.Block {
			inBlocks = append(inBlocks, fmt.Sprintf("v%d", r.Node.ID))
		} else {
			inThread = append(inThread, fmt.Sprintf("v%d", r.Node.ID))
		}
	}
	if len(inThread) > 0 {
		fmt.Fprintf(&b, "; finished in their thread: %s", strings.Join(inThread, ", "))
	}
	if len(inBlocks) > 0 {
		fmt.Fprintf(&b, "; merged across threads, then blocks in order: %s", strings.Join(inBlocks, ", "))
	}
	if s.Row != nil {
		fmt.Fprintf(&b, "; a kernel of its own, not one with pass %d: %s", rowPartner(ps), s.Row.GPU.Unfused)
	}
	b.WriteString("\n")
	return b.String()
}
