package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
)

// Row-local fusion (Halide's compute_at). A reduction that keeps the first dim of its pass's
// domain (a per-sequence mean over L of a [B, L] batch, a per-group statistic over N of
// [G, N, L]) is complete for one index of that dim ("a row") as soon as the pass has swept
// the row. When the pass of the next level over the same domain reads such results, and only
// those of the first pass (or stored values of the first pass at the same index, or values
// of earlier levels), the two passes run row by row: the first sweeps a row, accumulating its
// reductions; they are finished for that row; the second sweeps the same row, while it is in
// cache. The data then crosses DRAM once instead of twice. The reductions of the two passes
// that run over the first dim too (a mean over the whole batch) still accumulate over every
// row and finish after the last.
//
// The plan keeps the two as Passes, adjacent and in that order (running the first over every
// row and then the second is the same computation, so a backend may), and both point to one
// RowLocal that says how to interleave them.

// RowCacheBytes is the largest row (bytes both sweeps read and write at one index of the
// domain's first dim) that runs row-local: half of a 512 KiB L2, the per-core L2 of the
// smaller current x86 server cores, so that the row is still in L2 when the second sweep
// reads it, beside the hardware prefetcher's lines. Beyond it the reduction stays a barrier.
const RowCacheBytes = 256 << 10

// RowLocal is a pair of passes over the same domain that run row by row: for each index of
// Domain[0], First over that row, then First's RowReduces finished for the row, then Second
// over that row, then Second's RowReduces finished for the row.
type RowLocal struct {
	First, Second *Pass
	Dim           ir.Dim // the domain's first dim: its indices are the rows
	// RowBytes is how many bytes the two sweeps read and write per row: every array with the
	// row dim they load or store, once (constants not counted).
	RowBytes int
	// Reads are First's reductions Second reads: what made them a barrier.
	Reads []*ir.Node
}

// RowReduces are ps's barrier reductions that keep the row dim: each row's result is final
// once the pass has swept that row. Backends finish them row by row.
func (rl *RowLocal) RowReduces(ps *Pass) []*ir.Node {
	var out []*ir.Node
	for _, r := range ps.Reduces {
		if !slices.Contains(r.Axes, rl.Dim.Name) {
			out = append(out, r)
		}
	}
	return out
}

// SlotsPerRow is how many result elements of a row reduction r one row holds: r's slots of
// row i are [i·SlotsPerRow, (i+1)·SlotsPerRow) (the row dim is r's first).
func (rl *RowLocal) SlotsPerRow(r *ir.Node) int { return r.Shape.Numel() / rl.Dim.Size }

// fuseRows pairs passes into RowLocal groups and orders each pair adjacently: the first at
// the end of its level (the passes of one level are independent), the second right after it
// (nothing of its level runs before it that it could need, and what needs it runs later).
func fuseRows(p *Plan) {
	producer := map[int]*Pass{} // node ID -> the pass that stores or reduces it
	for _, ps := range p.Passes {
		for _, n := range ps.Stores {
			producer[n.ID] = ps
		}
		for _, n := range ps.Reduces {
			producer[n.ID] = ps
		}
	}
	var groups []*RowLocal
	for _, second := range p.Passes {
		if second.Row != nil {
			continue
		}
		for _, first := range p.Passes {
			if first.Row != nil || first.Level != second.Level-1 || !first.Domain.Equal(second.Domain) {
				continue
			}
			if rl := rowPair(p, first, second, producer); rl != nil {
				first.Row, second.Row = rl, rl
				groups = append(groups, rl)
			}
			break
		}
	}
	if len(groups) == 0 {
		return
	}
	// A pass's sort key: its position, but a group's first runs after the rest of its level
	// and its second right after it.
	key := map[*Pass][2]int{}
	for i, ps := range p.Passes {
		key[ps] = [2]int{2 * i, 0}
	}
	for _, rl := range groups {
		last := 0
		for i, ps := range p.Passes {
			if ps.Level == rl.First.Level {
				last = i
			}
		}
		key[rl.First] = [2]int{2*last + 1, 0}
		key[rl.Second] = [2]int{2*last + 1, 1}
	}
	sort.SliceStable(p.Passes, func(i, j int) bool {
		a, b := key[p.Passes[i]], key[p.Passes[j]]
		return a[0] < b[0] || a[0] == b[0] && a[1] < b[1]
	})
	for i, ps := range p.Passes {
		ps.Index = i
	}
}

// rowPair returns the RowLocal of first and second when second may run row by row after
// first, or nil: second reads from first's level only first's results, each a reduction that
// keeps the row dim (first in its shape) or a value first stores at the same index (never
// one second shifts or gathers from another index); no scan of either runs along the row
// dim; every buffer either stores has the row dim (rows write disjoint elements); and a row
// fits RowCacheBytes.
func rowPair(p *Plan, first, second *Pass, producer map[int]*Pass) *RowLocal {
	dom := first.Domain
	if len(dom) < 2 {
		return nil
	}
	row := dom[0]
	for _, ps := range []*Pass{first, second} {
		if ps.Scan != nil && ps.Scan.Axis == row.Name {
			return nil
		}
		for _, n := range ps.Stores {
			if len(n.Shape) == 0 || n.Shape[0] != row {
				return nil
			}
		}
	}
	rl := &RowLocal{First: first, Second: second, Dim: row}
	for _, n := range second.Loads {
		by := producer[n.ID]
		switch {
		case by == nil || by.Level < first.Level:
		case by != first:
			return nil
		case slices.Contains(first.Reduces, n):
			if slices.Contains(n.Axes, row.Name) || len(n.Shape) == 0 || n.Shape[0] != row {
				return nil
			}
			rl.Reads = append(rl.Reads, n)
		}
	}
	for _, n := range second.Compute {
		if c := n.Op.Class(); (c == ir.Shift || c == ir.Gather) && producer[n.Args[0].ID] == first {
			return nil
		}
	}
	if len(rl.Reads) == 0 {
		return nil // nothing to fuse for: the second does not wait on the first
	}
	rl.RowBytes = rowBytes(p, row, first, second)
	if rl.RowBytes > RowCacheBytes {
		return nil
	}
	return rl
}

// rowBytes is how many bytes the passes read and write per index of row: every array with
// the row dim they load or store, once.
func rowBytes(p *Plan, row ir.Dim, passes ...*Pass) int {
	size := 4
	if p.Graph.DType == ir.F64 {
		size = 8
	}
	seen := map[int]bool{}
	n := 0
	count := func(x *ir.Node, k, copies int) {
		if seen[x.ID] || len(x.Shape) == 0 || x.Shape[0] != row || x.Op == ir.OpConst || x.Op == ir.OpIota {
			return
		}
		seen[x.ID] = true
		n += k * x.Shape.Numel() / row.Size * copies
	}
	for _, ps := range passes {
		for _, x := range ps.Loads {
			k := size
			if x.Op == ir.OpInput {
				switch x.Input.Kind {
				case ir.Bool:
					k = 1
				case ir.Index:
					k = 8
				}
			}
			count(x, k, 1)
		}
		for _, x := range ps.Stores {
			count(x, size, max(1, len(p.Buffers(x)))) // an output may be stored twice
		}
	}
	return n
}

// describeRow is the explain line of a pass in a RowLocal group.
func (p *Plan) describeRow(ps *Pass) string {
	rl := ps.Row
	if ps == rl.Second {
		return fmt.Sprintf("  row-local: second sweep of each %s row of pass %d, while the row is in cache\n", rl.Dim.Name, rl.First.Index)
	}
	var reads []string
	for _, r := range rl.Reads {
		reads = append(reads, p.describe(r))
	}
	return fmt.Sprintf("  row-local: runs row by row over %s=%d with pass %d (%d bytes a row, at most %d): %s finish per row, not a barrier\n",
		rl.Dim.Name, rl.Dim.Size, rl.Second.Index, rl.RowBytes, RowCacheBytes, strings.Join(reads, ", "))
}
