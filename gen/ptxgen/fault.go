package ptxgen

import (
	"fmt"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime"
)

// Index faults. The CPU Forward rejects an index input outside its axis before any kernel
// runs (runtime.IndexError); a GPU has no such step, so each gather by an index input checks
// the value it reads: out of range it still reads in bounds (the index clamped) but counts
// the read and keeps the smallest faulting element in the input's fault buffer
// (fault/<data name>, uint32 [count, first]) with integer atomics, whose result does not
// depend on the order threads run in. The table's first launch clears those buffers, so
// they need no clearing by the caller; the host turns them into the IndexError
// (runtime.IndexFault).

// faultBuffer is the launch-table buffer of index input in's faults.
func faultBuffer(in *ir.Input) string { return "fault/" + in.Name }

// faultBuffers adds the index fault buffers of the emitter's graph to table, recording each
// input's range for the gathers' checks.
func (e *emitter) faultBuffers(table *runtime.LaunchTable) []string {
	var names []string
	e.indexSize = map[*ir.Input]int{}
	for _, c := range ir.IndexChecks(e.g) {
		e.indexSize[c.Input] = c.Size
		name := faultBuffer(c.Input)
		names = append(names, name)
		table.Buffers = append(table.Buffers, runtime.Buffer{Name: name, Role: "fault", DType: "uint32", Length: 2, Shape: []int{2},
			Input: "in/" + c.Input.Name, Size: c.Size})
	}
	return names
}

// faultsInit is the kernel that clears the fault buffers (count 0, first runtime.NoFault):
// one thread writes them all.
func (e *emitter) faultsInit(bufs []string) *kernel {
	k := newKernel(e.prefix+"faults_init", e.f64)
	tid, zero, none := k.r32(), k.r32(), k.r32()
	first := k.pred()
	k.op("mov.u32 %s, %%tid.x", tid)
	k.op("setp.eq.u32 %s, %s, 0", first, tid)
	k.op("mov.u32 %s, 0", zero)
	k.op("mov.u32 %s, %d", none, uint32(runtime.NoFault))
	for _, b := range bufs {
		p := k.param(b)
		k.op("@%s st.global.u32 [%s], %s", first, p, zero)
		k.op("@%s st.global.u32 [%s+4], %s", first, p, none)
	}
	k.op("ret")
	k.finish()
	return k
}

// checkIndex records, in the fault buffer of the index input gather n reads, an index i (a
// s32 register, truncated from the value read) outside the input's range, at the input's
// current element, when this thread is active. An index the value-range analysis keeps
// within the gathered axis (an argmax: passes.ValueRange) has no check.
func (k *passK) checkIndex(n *ir.Node, i string) {
	x := n.Args[0].Shape
	if k.e.g.Range(n.Args[1]).Within(0, float64(x[x.Index(n.Axes[0])].Size-1)) {
		return
	}
	r, ok := ir.GatherIndex(n)
	if !ok {
		panic(fmt.Sprintf("ptxgen: gather %s reads an index that is neither an index input nor in range (passes.Verify)", n))
	}
	size := k.e.indexSize[r.Input]
	k.comment("range check of %s: out of [0, %d) counts a fault", r.Input.Name, size)
	lo, bad := k.pred(), k.pred()
	k.op("setp.lt.s32 %s, %s, 0", lo, i)
	k.op("setp.ge.s32 %s, %s, %d", bad, i, size)
	k.op("or.pred %s, %s, %s", bad, bad, lo)
	k.op("and.pred %s, %s, %s", bad, bad, k.active)
	f := k.param(faultBuffer(r.Input))
	at := k.linear(r.Input.Shape)
	k.op("@%s red.global.add.u32 [%s], 1", bad, f)
	k.op("@%s red.global.min.u32 [%s+4], %s", bad, f, at)
}

// faultDoc describes the faults-init kernel for the module's comments.
func faultDoc(k *kernel, bufs []string) string {
	return fmt.Sprintf("%s: clears the index fault buffers %v (count 0, first element 0x%X) before the passes gather.", k.Name, bufs, uint32(runtime.NoFault))
}
