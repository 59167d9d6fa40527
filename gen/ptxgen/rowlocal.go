package ptxgen

import (
	"fmt"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// Row-local pairs (plan.RowLocal) as one kernel, when their schedule says so (plan.RowGPU).
// The default mapping (one thread per column, looping over rows) spreads a row over every
// block, so a row's reduction is complete only once the grid has finished. A pair over
// [R, C] therefore runs as one kernel with one block per row: its threads stride over the
// row's columns, the first pass's program at each, accumulating per thread; the block merges
// each row statistic into thread 0, which finishes and stores it; after a barrier every
// thread sweeps its columns again with the second pass's program, which loads the statistic
// (from L1) and the row (from L2). The pair's reductions over every row are block reductions
// as usual: a partial per block (row), folded in block order by the merge kernel.

// rowKernel emits the kernel of a row-local pair its schedule fuses (plan.RowGPU; named
// after its first pass).
func (e *emitter) rowKernel(rl *plan.RowLocal) *passK {
	rows, cols := rl.First.Domain[0], rl.First.Domain[1]
	k := &passK{kernel: newKernel(fmt.Sprintf("%spass%d", e.prefix, rl.First.Index), e.f64), e: e, ps: rl.First, row: rl,
		idx: map[string]string{}, vals: map[int]string{}, carries: map[int]string{}, inner: map[int][]string{}, rowVals: map[int]string{}}
	gpu := rl.First.Schedule.Row.GPU
	k.grid, k.block = gpu.Grid, gpu.Block
	k.threads = k.grid * k.block
	rowReds := map[*plan.Pass][]*redK{}
	for _, ps := range []*plan.Pass{rl.First, rl.Second} {
		for _, r := range ps.Reduces {
			rk := &redK{r: r, block: len(r.Shape) == 0}
			for range red(r.Op).Fields {
				rk.state = append(rk.state, k.fd())
			}
			k.reds = append(k.reds, rk)
			if !rk.block {
				rowReds[ps] = append(rowReds[ps], rk)
			}
		}
	}
	row, tid := k.r32(), k.r32()
	k.op("mov.u32 %s, %%ctaid.x", row)
	k.op("mov.u32 %s, %%tid.x", tid)
	k.idx[rows.Name] = row
	for _, rk := range k.reds {
		for i, id := range red(rk.r.Op).Identity {
			k.op("mov.f64 %s, %s", rk.state[i], immF64(id))
		}
	}
	for _, ps := range []*plan.Pass{rl.First, rl.Second} {
		k.ps = ps
		k.comment("sweep of row %s with pass %d", rows.Name, ps.Index)
		k.sweep(cols, tid)
		for _, rk := range rowReds[ps] {
			k.finishRow(rk)
		}
	}
	k.ps = rl.First // partial buffers are named after the kernel's pass
	for _, rk := range k.reds {
		if rk.block {
			k.blockReduce(rk)
		}
	}
	k.op("ret")
	k.finish()
	return k
}

// sweep runs the current pass's program at the columns tid, tid+block, … of the row: every
// thread runs the same number of iterations (the block's shuffles need the whole warp);
// past the row's end a thread is inactive and reads the last column.
func (k *passK) sweep(cols ir.Dim, tid string) {
	it := k.r32()
	k.op("mov.u32 %s, 0", it)
	top := k.newLabel("cols")
	k.label(top)
	j := k.r32()
	k.op("mad.lo.s32 %s, %s, %d, %s", j, it, k.block, tid)
	k.active = k.pred()
	k.op("setp.lt.u32 %s, %s, %d", k.active, j, cols.Size)
	k.op("min.u32 %s, %s, %d", j, j, cols.Size-1)
	k.idx[cols.Name] = j
	k.vals = map[int]string{}
	k.program(k.ps.Body)
	more := k.pred()
	k.op("add.s32 %s, %s, 1", it, it)
	k.op("setp.lt.u32 %s, %s, %d", more, it, (cols.Size+k.block-1)/k.block)
	k.op("@%s bra %s", more, top)
}

// finishRow merges a row statistic over the block; thread 0 finishes it, stores it to its
// buffers (for later passes) and hands it to every thread through shared memory: the next
// sweep reads it from a register, not from the global word thread 0 wrote (no thread reads
// another's global writes within a launch).
func (k *passK) finishRow(rk *redK) {
	tid := k.blockMerge(rk)
	zero := k.pred()
	k.op("setp.eq.u32 %s, %s, 0", zero, tid)
	v := k.finalize(rk.r, rk.state)
	off := k.linear(rk.r.Shape)
	for _, name := range k.e.bufNames(rk.r) {
		a := k.addr(k.param(name), off, k.e.esz())
		k.op("@%s st.global.%s [%s], %s", zero, k.t(), a, v)
	}
	sh, all := k.r64(), k.el()
	k.op("mov.u64 %s, %s_red", sh, k.Name)
	k.op("bar.sync 0") // the merge's reads of the scratch are done
	k.op("@%s st.shared.%s [%s], %s", zero, k.t(), sh, v)
	k.op("bar.sync 0")
	k.op("ld.shared.%s %s, [%s]", k.t(), all, sh)
	k.op("bar.sync 0") // the shared scratch is reused by the next reduction
	k.rowVals[rk.r.ID] = all
}
