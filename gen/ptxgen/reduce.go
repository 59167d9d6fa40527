package ptxgen

import (
	"fmt"
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// redK is one reduction of a pass kernel, mapped by the plan (plan.GPUReduction). States
// are float64 registers (fields below). A "thread" reduction keeps every thread dim, so one
// thread sees all of a slot's elements and finishes it. A "block" reduction reduces every thread dim: each thread folds its
// elements, the block merges its threads (warp shuffles down 16, 8, 4, 2, 1, then warp 0 over
// the warps' results in shared memory), and a merge kernel folds the blocks' partial states
// in block order. Either way the kept loop dims must be the outermost loops (prefix), so a
// slot's elements arrive within one run of the inner loops.
type redK struct {
	r      *ir.Node
	block  bool
	prefix int      // kept loop dims: the slot changes when one of the first prefix loops does
	state  []string // one float64 register per field
}

// UnmappedError is a reduction the PTX backend has no thread mapping for yet (the plan's
// plan.UnmappedError). Check reports it before anything is emitted.
type UnmappedError = plan.UnmappedError

func (k *passK) groupStart(level int) {
	for _, rk := range k.reds {
		if rk.prefix == level {
			for i, id := range red(rk.r.Op).Identity {
				k.op("mov.f64 %s, %s", rk.state[i], immF64(id))
			}
		}
	}
}

func (k *passK) groupEnd(level int) {
	for _, rk := range k.reds {
		if rk.prefix != level {
			continue
		}
		if rk.block {
			k.blockReduce(rk)
			continue
		}
		v := k.finalize(rk.r, rk.state)
		off := k.linear(rk.r.Shape)
		a := k.addr(k.param(k.e.bufName(rk.r)), off, k.e.esz())
		k.op("@%s st.global.%s [%s], %s", k.active, k.t(), a, v)
	}
}

// accumulate folds the current element into r's state, if the thread is active.
func (k *passK) accumulate(rk *redK) {
	r := rk.r
	x := k.vals[r.Args[0].ID]
	if !k.f64 {
		w := k.fd()
		k.op("cvt.f64.f32 %s, %s", w, x)
		x = w
	}
	k.comment("%s(v%d) over %v", r.Op, r.Args[0].ID, r.Axes)
	single := k.singleton(r, x)
	merged := k.merge(r.Op, rk.state, single)
	for i := range rk.state {
		k.op("selp.f64 %s, %s, %s, %s", rk.state[i], merged[i], rk.state[i], k.active)
	}
}

// red is op's description (ir.ReductionOf) on the kernel's float64 registers.
func red(op ir.Op) *ir.Reduction[string] { return ir.ReductionOf[string](op) }

// singleton is the state of one element x (float64).
func (k *passK) singleton(r *ir.Node, x string) []string {
	return k.ops64().useAll(red(r.Op).Single(k.ops64(), x, func() string {
		i := k.fd()
		k.op("cvt.rn.f64.u32 %s, %s", i, k.idx[r.Axes[0]])
		return i
	}))
}

// merge returns the state of a followed by b (b's elements come later in the fold's fixed
// order; argmax breaks ties by index, so the order does not change its result).
func (k *kernel) merge(op ir.Op, a, b []string) []string {
	return k.ops64().useAll(red(op).Merge(k.ops64(), a, b))
}

// finalize turns a state into the reduction's value, in the kernel's element type.
func (k *kernel) finalize(r *ir.Node, st []string) string {
	v := k.ops64().use(red(r.Op).Finish(k.ops64(), st, r.Corr))
	if k.f64 {
		return v
	}
	f := k.f32()
	k.op("cvt.rn.f32.f64 %s, %s", f, v)
	return f
}

// shfl64 is a float64 shfl.sync.down by off; ok is false where the source lane is past the
// warp's end.
func (k *kernel) shfl64(x string, off int, ok string) string {
	lo, hi, lo2, hi2 := k.r32(), k.r32(), k.r32(), k.r32()
	k.op("mov.b64 {%s, %s}, %s", lo, hi, x)
	k.op("shfl.sync.down.b32 %s|%s, %s, %d, 31, 0xffffffff", lo2, ok, lo, off)
	k.op("shfl.sync.down.b32 %s, %s, %d, 31, 0xffffffff", hi2, hi, off)
	d := k.fd()
	k.op("mov.b64 %s, {%s, %s}", d, lo2, hi2)
	return d
}

// warpReduce merges the state across the warp: lane i takes lane i+off's state for off =
// 16, 8, 4, 2, 1, so lane 0 ends with the whole warp's, merged in a fixed tree.
func (k *kernel) warpReduce(op ir.Op, st []string) {
	for off := 16; off >= 1; off /= 2 {
		ok := k.pred()
		other := make([]string, len(st))
		for i, s := range st {
			p := ok
			if i > 0 {
				p = k.pred()
			}
			other[i] = k.shfl64(s, off, p)
		}
		merged := k.merge(op, st, other)
		for i := range st {
			k.op("selp.f64 %s, %s, %s, %s", st[i], merged[i], st[i], ok)
		}
	}
}

// blockReduce merges the block's states into thread 0, which writes the block's partial.
func (k *passK) blockReduce(rk *redK) {
	r := rk.r
	fields := red(r.Op).Fields
	tid := k.blockMerge(rk)
	zero := k.pred()
	k.op("setp.eq.u32 %s, %s, 0", zero, tid)
	slot := k.linear(r.Shape)
	ctaid, at := k.r32(), k.r32()
	k.op("mov.u32 %s, %%ctaid.x", ctaid)
	k.op("mad.lo.s32 %s, %s, %d, %s", at, slot, k.grid, ctaid)
	for i, f := range fields {
		name := k.partialName(r, f)
		a := k.addr(k.param(name), at, 8)
		k.op("@%s st.global.f64 [%s], %s", zero, a, rk.state[i])
	}
	k.op("bar.sync 0") // the shared scratch is reused by the next reduction
}

// blockMerge merges the block's states of rk into thread 0's (warp shuffles, then warp 0 over
// the warps' results in shared memory); it returns the register holding %tid.x.
func (k *passK) blockMerge(rk *redK) string {
	r := rk.r
	fields := red(r.Op).Fields
	k.comment("block reduction of %s", r)
	k.warpReduce(r.Op, rk.state)
	tid, lane, warp := k.r32(), k.r32(), k.r32()
	k.op("mov.u32 %s, %%tid.x", tid)
	k.op("and.b32 %s, %s, 31", lane, tid)
	k.op("shr.u32 %s, %s, 5", warp, tid)
	lead, first := k.pred(), k.pred()
	k.op("setp.eq.u32 %s, %s, 0", lead, lane)
	sh := k.r64()
	k.op("mov.u64 %s, %s_red", sh, k.Name)
	k.Shared = max(k.Shared, 3*32*8)
	for i := range fields {
		a := k.r64()
		k.op("mad.wide.u32 %s, %s, 8, %s", a, warp, sh)
		k.op("@%s st.shared.f64 [%s+%d], %s", lead, a, i*256, rk.state[i])
	}
	k.op("bar.sync 0")
	nwarps := k.block / 32
	k.op("setp.lt.u32 %s, %s, %d", first, lane, nwarps)
	for i := range fields {
		a, v := k.r64(), k.fd()
		k.op("mad.wide.u32 %s, %s, 8, %s", a, lane, sh)
		k.op("mov.f64 %s, %s", v, immF64(red(r.Op).Identity[i]))
		k.op("@%s ld.shared.f64 %s, [%s+%d]", first, v, a, i*256)
		k.op("mov.f64 %s, %s", rk.state[i], v)
	}
	k.warpReduce(r.Op, rk.state)
	return tid
}

func (k *passK) partialName(r *ir.Node, field string) string {
	name := fmt.Sprintf("scratch/pass%d.v%d.%s", k.ps.Index, r.ID, field)
	for _, p := range k.partials {
		if p.name == name {
			return name
		}
	}
	k.partials = append(k.partials, partialBuf{name: name, length: r.Shape.Numel() * k.grid})
	return name
}

// mergeKernel folds the blocks' partial states of every block reduction of the pass, one
// thread per slot, blocks in order, then finishes each slot into the reduction's buffer.
func (k *passK) mergeKernel() *kernel {
	var reds []*redK
	slots := 0
	for _, rk := range k.reds {
		if rk.block {
			reds = append(reds, rk)
			slots = max(slots, rk.r.Shape.Numel())
		}
	}
	if len(reds) == 0 {
		return nil
	}
	m := newKernel(k.Name+"_merge", k.f64)
	tid, ctaid, ntid, g := m.r32(), m.r32(), m.r32(), m.r32()
	m.op("mov.u32 %s, %%tid.x", tid)
	m.op("mov.u32 %s, %%ctaid.x", ctaid)
	m.op("mov.u32 %s, %%ntid.x", ntid)
	m.op("mad.lo.s32 %s, %s, %s, %s", g, ctaid, ntid, tid)
	for _, rk := range reds {
		r := rk.r
		fields := red(r.Op).Fields
		m.comment("merge %s over %d blocks", r, k.grid)
		done := m.newLabel("skip")
		out := m.pred()
		m.op("setp.ge.u32 %s, %s, %d", out, g, r.Shape.Numel())
		m.op("@%s bra %s", out, done)
		st := make([]string, len(fields))
		for i := range fields {
			st[i] = m.fd()
			m.op("mov.f64 %s, %s", st[i], immF64(red(r.Op).Identity[i]))
		}
		b := m.r32()
		m.op("mov.u32 %s, 0", b)
		top := m.newLabel("blocks")
		m.label(top)
		at := m.r32()
		m.op("mad.lo.s32 %s, %s, %d, %s", at, g, k.grid, b)
		part := make([]string, len(fields))
		for i, f := range fields {
			a := m.addr(m.param(k.partialName(r, f)), at, 8)
			part[i] = m.fd()
			m.op("ld.global.f64 %s, [%s]", part[i], a)
		}
		merged := m.merge(r.Op, st, part)
		for i := range st {
			m.op("mov.f64 %s, %s", st[i], merged[i])
		}
		more := m.pred()
		m.op("add.s32 %s, %s, 1", b, b)
		m.op("setp.lt.u32 %s, %s, %d", more, b, k.grid)
		m.op("@%s bra %s", more, top)
		v := m.finalize(r, st)
		a := m.addr(m.param(k.e.bufName(r)), g, k.e.esz())
		m.op("st.global.%s [%s], %s", m.t(), a, v)
		m.label(done)
	}
	m.op("ret")
	m.finish()
	return m
}

// describe is the one-line summary of a kernel for its doc comment.
func (k *passK) describe() string {
	var b strings.Builder
	if k.row != nil {
		fmt.Fprintf(&b, "passes %d and %d row-local: one block per %s row, its threads sweeping %s twice", k.row.First.Index, k.row.Second.Index, k.row.Dim.Name, k.row.First.Domain[1].Name)
	} else if k.scan {
		fmt.Fprintf(&b, "one thread per %v row, walking %s backwards", k.thread.Names(), k.loop[0].Name)
	} else if len(k.thread) > 0 {
		fmt.Fprintf(&b, "one thread per %s index, looping over %v", k.thread[0].Name, k.loop.Names())
	} else {
		b.WriteString("one thread")
	}
	fmt.Fprintf(&b, "; grid %d × block %d", k.grid, k.block)
	return b.String()
}
