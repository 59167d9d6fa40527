package ptxgen

import (
	"fmt"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// Thread mapping: the plan decides it (plan.Schedule.GPU). A scan pass runs one thread per
// line along its scan axis (every other dim), each walking the scan axis in the scan's
// direction; any other pass runs one thread per index of its last dim (adjacent threads touch
// adjacent elements: coalesced) and loops over the outer dims. A scalar pass is one thread. Loops over non-batch dims (actions,
// atoms, ensemble members) run inside each thread. Reductions follow the mapping (see reduce.go): a slot
// whose elements one thread sees is finished in that thread; a slot spread over threads is
// reduced in the block (warp shuffles, then shared memory) and across blocks by a second,
// one-thread-per-slot kernel, in a fixed order, so results are the same bits every run.

// passK emits the kernel of one pass.
type passK struct {
	*kernel
	e        *emitter
	ps       *plan.Pass
	thread   ir.Shape // dims indexed by the thread
	loop     ir.Shape // dims looped over, outermost first
	scan     bool
	threads  int
	block    int
	grid     int
	idx      map[string]string // dim -> u32 register with its current index
	vals     map[int]string    // node ID -> register for the current step
	carries  map[int]string
	active   string // predicate: this thread has work
	reds     []*redK
	inner    map[int][]string // inner reduction ID -> its state registers
	partials []partialBuf
	row      *plan.RowLocal // a row-local pair's kernel (rowlocal.go), or nil
	rowVals  map[int]string // its row statistics: the register every thread holds each in
}

// partialBuf is a float64 scratch buffer of per-block partial reduction states.
type partialBuf struct {
	name   string
	length int
}

func (e *emitter) passKernel(ps *plan.Pass) (*passK, error) {
	k, err := e.mapPass(ps)
	if err != nil {
		return nil, err
	}
	k.prologue()
	k.loops(0)
	k.groupEnd(0)
	k.op("ret")
	k.finish()
	return k, nil
}

// mapPass sets up a pass's kernel from its schedule's thread mapping; it fails, with an
// *UnmappedError, for the shapes the plan has no mapping for yet.
func (e *emitter) mapPass(ps *plan.Pass) (*passK, error) {
	m := ps.Schedule.GPU
	if m.Unmapped != nil {
		return nil, m.Unmapped
	}
	k := &passK{kernel: newKernel(fmt.Sprintf("%spass%d", e.prefix, ps.Index), e.f64), e: e, ps: ps,
		idx: map[string]string{}, vals: map[int]string{}, carries: map[int]string{}, inner: map[int][]string{}}
	k.thread, k.loop, k.scan = m.Thread, m.Loop, m.Scan
	k.threads, k.grid, k.block = m.Threads, m.Grid, m.Block
	for _, rm := range m.Reductions {
		rk := &redK{r: rm.Node, block: rm.Block, prefix: rm.Prefix}
		for range red(rm.Node.Op).Fields {
			rk.state = append(rk.state, k.fd())
		}
		k.reds = append(k.reds, rk)
	}
	return k, nil
}

// Check reports whether the backend maps every pass of p, without emitting anything: Emit
// fails exactly when Check does, with the same *UnmappedError.
func Check(p *plan.Plan) error {
	e := &emitter{g: p.Graph, p: p, f64: p.Graph.DType == ir.F64}
	for _, ps := range p.Passes {
		if _, err := e.mapPass(ps); err != nil {
			return err
		}
	}
	return nil
}

// prologue computes the thread's index (clamped to the last valid one, so every load stays
// in bounds; stores and reduction contributions are predicated on active) and its dims.
func (k *passK) prologue() {
	tid, ctaid, ntid := k.r32(), k.r32(), k.r32()
	k.op("mov.u32 %s, %%tid.x", tid)
	k.op("mov.u32 %s, %%ctaid.x", ctaid)
	k.op("mov.u32 %s, %%ntid.x", ntid)
	g := k.r32()
	k.op("mad.lo.s32 %s, %s, %s, %s", g, ctaid, ntid, tid)
	k.active = k.pred()
	k.op("setp.lt.u32 %s, %s, %d", k.active, g, k.threads)
	k.op("min.u32 %s, %s, %d", g, g, max(k.threads-1, 0))
	rest := g
	for i := len(k.thread) - 1; i >= 0; i-- {
		d := k.thread[i]
		r := k.r32()
		if i == 0 {
			k.op("mov.u32 %s, %s", r, rest)
		} else {
			q := k.r32()
			k.op("rem.u32 %s, %s, %d", r, rest, d.Size)
			k.op("div.u32 %s, %s, %d", q, rest, d.Size)
			rest = q
		}
		k.idx[d.Name] = r
	}
	k.groupStart(0)
}

// loops emits the loop over loop dim level and everything inside it.
func (k *passK) loops(level int) {
	if level == len(k.loop) {
		k.step()
		return
	}
	d := k.loop[level]
	c := k.r32()
	k.idx[d.Name] = c
	reverse := k.scan && k.ps.Scan.Reverse
	for _, n := range k.ps.Compute {
		if n.Op == ir.OpScan && n.Axes[0] == d.Name { // the scan starts from 0
			r := k.el()
			k.op("mov.%s %s, %s", k.t(), r, k.imm(0))
			k.carries[n.ID] = r
		}
	}
	if reverse {
		k.op("mov.u32 %s, %d", c, d.Size-1)
	} else {
		k.op("mov.u32 %s, 0", c)
	}
	top := k.newLabel("loop")
	k.label(top)
	if level+1 < len(k.loop) {
		k.groupStart(level + 1)
	}
	k.loops(level + 1)
	if level+1 < len(k.loop) {
		k.groupEnd(level + 1)
	}
	more := k.pred()
	if reverse {
		k.op("sub.s32 %s, %s, 1", c, c)
		k.op("setp.ge.s32 %s, %s, 0", more, c)
	} else {
		k.op("add.s32 %s, %s, 1", c, c)
		k.op("setp.lt.s32 %s, %s, %d", more, c, d.Size)
	}
	k.op("@%s bra %s", more, top)
}

// linear returns a u32 register with the row-major offset of shape s at the current indices.
func (k *passK) linear(s ir.Shape) string {
	st := s.Strides()
	r := k.r32()
	if len(s) == 0 {
		k.op("mov.u32 %s, 0", r)
	}
	for i, d := range s {
		// The first term starts the sum; a stride of 1 needs no multiplication.
		switch x := k.idx[d.Name]; {
		case i == 0 && st[i] == 1:
			k.op("mov.u32 %s, %s", r, x)
		case i == 0:
			k.op("mul.lo.s32 %s, %s, %d", r, x, st[i])
		case st[i] == 1:
			k.op("add.s32 %s, %s, %s", r, r, x)
		default:
			k.op("mad.lo.s32 %s, %s, %d, %s", r, x, st[i], r)
		}
	}
	return r
}

// step emits one element's work: the pass's program, and the per-element part of its
// barrier reductions.
func (k *passK) step() {
	// Slots that change every step start and end here; with no loop dims, level 0 is the
	// whole kernel (prologue and epilogue).
	if len(k.loop) > 0 {
		k.groupStart(len(k.loop))
	}
	k.vals = map[int]string{}
	k.program(k.ps.Body)
	if len(k.loop) > 0 {
		k.groupEnd(len(k.loop))
	}
}

// program emits a block's steps; a Loop step becomes a loop over its dims inside the thread.
func (k *passK) program(bl *plan.Block) {
	for _, st := range bl.Steps {
		n := st.Node
		switch st.Kind {
		case plan.Load:
			k.vals[n.ID] = k.load(n)
		case plan.Compute:
			if !n.Op.Aliases() { // no code: the argument's register
				k.comment("%s", n.Formula(k.e.names))
			}
			k.vals[n.ID] = k.compute(n)
		case plan.Store:
			k.store(n, k.vals[n.ID])
		case plan.Accumulate:
			if rk := k.redOf(n); rk != nil {
				k.accumulate(rk)
			} else {
				k.innerAccumulate(n)
			}
		case plan.Init:
			k.innerInit(n)
		case plan.Finish:
			k.vals[n.ID] = k.finalize(n, k.inner[n.ID])
		case plan.Loop:
			k.innerLoop(st.Block, 0)
		}
	}
}

// innerLoop runs bl at every index of its dims, from dim i on.
func (k *passK) innerLoop(bl *plan.Block, i int) {
	if i == len(bl.Dims) {
		k.program(bl)
		return
	}
	d := bl.Dims[i]
	c := k.r32()
	k.idx[d.Name] = c
	k.op("mov.u32 %s, 0", c)
	top := k.newLabel("inner")
	k.label(top)
	k.innerLoop(bl, i+1)
	more := k.pred()
	k.op("add.s32 %s, %s, 1", c, c)
	k.op("setp.lt.s32 %s, %s, %d", more, c, d.Size)
	k.op("@%s bra %s", more, top)
}

// redOf returns the barrier reduction state of r, or nil for an inner reduction.
func (k *passK) redOf(r *ir.Node) *redK {
	for _, rk := range k.reds {
		if rk.r == r {
			return rk
		}
	}
	return nil
}

// innerInit starts an inner reduction's state (float64 registers, as every reduction's).
func (k *passK) innerInit(r *ir.Node) {
	id := red(r.Op).Identity
	st := make([]string, len(id))
	for i := range st {
		st[i] = k.fd()
		k.op("mov.f64 %s, %s", st[i], immF64(id[i]))
	}
	k.inner[r.ID] = st
}

// innerAccumulate folds the current element into an inner reduction's state. Every thread
// does, active or not: the state is its own, and an inactive thread stores nothing.
func (k *passK) innerAccumulate(r *ir.Node) {
	x := k.vals[r.Args[0].ID]
	if !k.f64 {
		w := k.fd()
		k.op("cvt.f64.f32 %s, %s", w, x)
		x = w
	}
	k.comment("%s(%s) over %v", r.Op, k.e.names[r.Args[0].ID], r.Axes)
	st := k.inner[r.ID]
	merged := k.merge(r.Op, st, k.singleton(r, x))
	for i := range st {
		k.op("mov.f64 %s, %s", st[i], merged[i])
	}
}

// load reads a node the pass does not compute, at the current indices.
func (k *passK) load(n *ir.Node) string {
	if v, ok := k.rowVals[n.ID]; ok {
		return v
	}
	if n.IsScalarConst() {
		return k.constReg(n.Value[0])
	}
	off := k.linear(n.Shape)
	return k.loadAt(n, off)
}

// loadAt reads node n's memory at element offset off; an iota, which has none, is off.
func (k *passK) loadAt(n *ir.Node, off string) string {
	t := k.t()
	v := k.el()
	switch {
	case n.Op == ir.OpIota:
		if n.Reverse {
			r := k.r32()
			k.op("sub.s32 %s, %d, %s", r, n.Shape.Numel()-1, off)
			off = r
		}
		k.op("cvt.rn.%s.u32 %s, %s", t, v, off)
	case n.Op == ir.OpConst:
		base := k.r64()
		k.op("mov.u64 %s, %s", base, k.e.constName(n))
		a := k.addr(base, off, k.e.esz())
		k.op("ld.global.%s %s, [%s]", t, v, a)
	case n.Op == ir.OpInput && n.Input.Kind == ir.Bool:
		a := k.addr(k.param(k.e.bufName(n)), off, 1)
		b := k.reg("rs")
		k.op("ld.global.u8 %s, [%s]", b, a)
		k.op("cvt.rn.%s.u16 %s, %s", t, v, b)
	case n.Op == ir.OpInput && n.Input.Kind == ir.Index:
		a := k.addr(k.param(k.e.bufName(n)), off, 8)
		w := k.r64()
		k.op("ld.global.s64 %s, [%s]", w, a)
		k.op("cvt.rn.%s.s64 %s, %s", t, v, w)
	default:
		a := k.addr(k.param(k.e.bufName(n)), off, k.e.esz())
		k.op("ld.global.%s %s, [%s]", t, v, a)
	}
	return v
}

// store writes v to n's buffers at the current indices, if this thread is active.
func (k *passK) store(n *ir.Node, v string) {
	off := k.linear(n.Shape)
	for _, name := range k.e.bufNames(n) {
		a := k.addr(k.param(name), off, k.e.esz())
		k.op("@%s st.global.%s [%s], %s", k.active, k.t(), a, v)
	}
}

// compute emits one node on its arguments' registers.
func (k *passK) compute(n *ir.Node) string {
	switch n.Op.Class() {
	case ir.Scan:
		// y[t] = x[t] + y[t∓1]·c[t], in the order TorchRL's loop GAE writes it; with Cut, a
		// c of 0 gives the product +0 (ir.OpScan).
		t, d := k.t(), k.el()
		c, cv := k.carries[n.ID], k.vals[n.Args[1].ID]
		k.op("mul.rn.%s %s, %s, %s", t, d, c, cv)
		if n.Cut {
			cut := k.pred()
			k.op("setp.eq.%s %s, %s, %s", t, cut, cv, k.imm(0))
			k.op("selp.%s %s, %s, %s, %s", t, d, k.imm(0), d, cut)
		}
		k.op("add.rn.%s %s, %s, %s", t, d, k.vals[n.Args[0].ID], d)
		k.op("mov.%s %s, %s", t, c, d)
		return d
	case ir.Shift:
		return k.shift(n)
	case ir.Gather:
		return k.gather(n)
	}
	args := make([]string, len(n.Args))
	for i, a := range n.Args {
		args[i] = k.vals[a.ID]
	}
	return ir.Elem[string](ptxOps{k: k.kernel}, n.Op, args)
}

// shift is y[t] = x[t+1] for t < T−1 and last[t] at t = T−1 along its axis.
func (k *passK) shift(n *ir.Node) string {
	x, last := n.Args[0], k.vals[n.Args[1].ID]
	axis := n.Axes[0]
	a := x.Shape.Index(axis)
	T, stride := x.Shape[a].Size, x.Shape.Strides()[a]
	atEnd := k.pred()
	k.op("setp.ge.u32 %s, %s, %d", atEnd, k.idx[axis], T-1)
	off := k.linear(x.Shape)
	next := k.r32()
	k.op("add.s32 %s, %s, %d", next, off, stride)
	k.op("selp.b32 %s, %s, %s, %s", next, off, next, atEnd) // stay in bounds at the end
	nx := k.loadAt(x, next)
	d := k.el()
	k.op("selp.%s %s, %s, %s, %s", k.t(), d, last, nx, atEnd)
	return d
}

// gather is y = x[..., idx] along axis a of x, the index truncated and clamped into the axis,
// so the read stays in bounds; an index read from an index input is range-checked first
// (fault.go), as Forward checks it before any kernel runs.
func (k *passK) gather(n *ir.Node) string {
	x, idx := n.Args[0], k.vals[n.Args[1].ID]
	axis := n.Axes[0]
	xs := x.Shape
	size := xs[xs.Index(axis)].Size
	i := k.r32()
	if k.f64 {
		k.op("cvt.rzi.s32.f64 %s, %s", i, idx)
	} else {
		k.op("cvt.rzi.s32.f32 %s, %s", i, idx)
	}
	k.checkIndex(n, i)
	k.op("max.s32 %s, %s, 0", i, i)
	k.op("min.s32 %s, %s, %d", i, i, size-1)
	saved := k.idx[axis]
	k.idx[axis] = i
	off := k.linear(xs)
	k.idx[axis] = saved
	return k.loadAt(x, off)
}
