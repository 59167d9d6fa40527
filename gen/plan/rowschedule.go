package plan

import (
	"fmt"
	"slices"
	"strings"
)

// RowSchedule is how a row-local pair (Pass.Row) runs, decided once for both of its passes:
// their Schedule.Row is the same one, and so is their Schedule.Chunks (the pair's chunks of
// rows, nil when the pair runs in one piece).
type RowSchedule struct {
	// Sweep is how many rows one CPU sweep covers (the first pass over them, its row
	// reductions finished for them, then the second pass over them): as many rows as fit
	// RowCacheBytes, at least one.
	Sweep int
	// GPU is the pair's PTX launch.
	GPU RowGPU
}

// RowGPU is a row-local pair's PTX launch: either one kernel with one block per row (Fused:
// its threads stride over the row's columns, running the first pass, merging each row
// statistic across the block, then the second pass), or each pass its own kernel with its
// own Schedule.GPU, Unfused saying why.
type RowGPU struct {
	Fused bool
	// Grid and Block are the fused kernel's launch: a block per row, Block threads (whole
	// warps, at most MaxBlock, as GridFor sizes them for one row's columns).
	Grid, Block int
	// Unfused is why the pair runs as two kernels (when not Fused).
	Unfused string
}

// rowSchedule schedules the pair rl: its sweeps and GPU launch, and its chunks of rows
// (shared by both passes).
func rowSchedule(rl *RowLocal) (*RowSchedule, *Chunking) {
	rs := &RowSchedule{Sweep: max(1, RowCacheBytes/max(1, rl.RowBytes)), GPU: rowGPU(rl)}
	return rs, rowChunking(rl)
}

// rowChunking is how the pair rl is cut into chunks of rows, or nil when it runs in one
// piece: its row reductions finish within each sweep, so only its reductions over every row
// (the row dim among their axes) merge across chunks, and each must merge (mergesInChunks).
// Each chunk runs whole sweeps of its own rows. The count is a chunked pass's (chunking).
func rowChunking(rl *RowLocal) *Chunking {
	c := &Chunking{Dim: rl.Dim.Name, Align: 1, Count: 1}
	for _, ps := range []*Pass{rl.First, rl.Second} {
		for _, r := range ps.Reduces {
			if !slices.Contains(r.Axes, rl.Dim.Name) {
				continue
			}
			if !mergesInChunks(r) {
				return nil
			}
			c.Merge = append(c.Merge, r)
		}
	}
	if rl.First.Domain.Numel() >= ChunkElems {
		c.Count = min(rl.Dim.Size, MaxChunks)
	}
	return c
}

// rowGPU is the pair's PTX launch: one block per row when the domain is [rows, columns], no
// pass scans, and every reduction either keeps just the row (one slot per row, finished by
// the block) or reduces everything (a partial per block, merged in block order).
func rowGPU(rl *RowLocal) RowGPU {
	dom := rl.First.Domain
	if len(dom) != 2 {
		return RowGPU{Unfused: fmt.Sprintf("a rank-%d domain; one block per row needs [rows, columns]", len(dom))}
	}
	for _, ps := range []*Pass{rl.First, rl.Second} {
		if ps.Scan != nil {
			return RowGPU{Unfused: fmt.Sprintf("pass %d scans along %s", ps.Index, ps.Scan.Axis)}
		}
		for _, r := range ps.Reduces {
			if len(r.Shape) != 0 && !(len(r.Shape) == 1 && r.Shape[0] == rl.Dim) {
				return RowGPU{Unfused: fmt.Sprintf("v%d keeps %s, neither one value per row nor one in all", r.ID, r.Shape)}
			}
		}
	}
	_, block := GridFor(dom[1].Size)
	return RowGPU{Fused: true, Grid: rl.Dim.Size, Block: block}
}

// writeRow prints the pair's sweeps of pass ps's schedule s (lossgen explain).
func (s *Schedule) writeRow(b *strings.Builder, ps *Pass) {
	rl := ps.Row
	fmt.Fprintf(b, "    sweeps: %d %s row(s) at a time (of %d), pass %d then pass %d over them\n",
		min(s.Row.Sweep, rl.Dim.Size), rl.Dim.Name, rl.Dim.Size, rl.First.Index, rl.Second.Index)
}

// writeRowGPU prints the pair's PTX launch (lossgen explain): false when the pass runs as a
// kernel of its own, whose mapping the caller prints.
func (s *Schedule) writeRowGPU(b *strings.Builder, ps *Pass) bool {
	rl, g := ps.Row, s.Row.GPU
	if !g.Fused {
		return false
	}
	if ps == rl.Second {
		fmt.Fprintf(b, "    gpu: in pass %d's kernel\n", rl.First.Index)
		return true
	}
	cols := ps.Domain[1]
	fmt.Fprintf(b, "    gpu: one kernel with pass %d: a block per %s row, grid %d × block %d, threads striding over %s[%d]", rl.Second.Index, rl.Dim.Name, g.Grid, g.Block, cols.Name, cols.Size)
	var perRow, all []string
	for _, p := range []*Pass{rl.First, rl.Second} {
		for _, r := range p.Reduces {
			if len(r.Shape) == 0 {
				all = append(all, fmt.Sprintf("v%d", r.ID))
			} else {
				perRow = append(perRow, fmt.Sprintf("v%d", r.ID))
			}
		}
	}
	if len(perRow) > 0 {
		fmt.Fprintf(b, "; finished by each row's block: %s", strings.Join(perRow, ", "))
	}
	if len(all) > 0 {
		fmt.Fprintf(b, "; merged across threads, then blocks in order: %s", strings.Join(all, ", "))
	}
	b.WriteString("\n")
	return true
}

// rowPartner is the index of the other pass of ps's row-local pair.
func rowPartner(ps *Pass) int {
	if ps == ps.Row.First {
		return ps.Row.Second.Index
	}
	return ps.Row.First.Index
}
