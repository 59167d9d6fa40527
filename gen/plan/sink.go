package plan

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
)

// Sinking results (a planner choice, made by cost). A reduction over a pass's domain, or a
// result it stores, is scheduled in the first pass that can compute it. When no pass over as
// large a domain reads it before some later pass over the same domain runs (the scalar pass
// that finishes a loss reads it, or the pass after next), it may as well be computed in that
// later pass, which streams the same rows anyway. ForwardBackward is the case that matters:
// its gradient pass depends on a count (GRPO's num_kept, a masked mean's num_valid, a
// sequence's length), so the count's pass must run first; the loss terms' sums, computed
// there by default, read every input a second time (or, in a row-local pair, compute every
// term twice). Sunk into the gradient pass, they leave the first pass reading only what the
// count needs (the mask, 1 byte a token). Build keeps a sunk plan only when it is cheaper.

// sinkable returns the choices of results to sink, each a map from node ID to the level it
// moves to: all of them, only the reductions, only the stores (moving a result may make its
// new pass read more than its old one saves, so Build compares). A result may sink when it is
// a barrier reduction or a stored result (not a scan's) and a pass over the same domain runs
// at a higher level, but before every pass over a domain as large that reads it; it moves to
// the latest such pass. (A per-row sum read by the pass after next moves to the pass in
// between, which then runs row by row with its reader: see RowLocal.)
func sinkable(p *Plan) []map[int]int {
	readers := map[int][]*Pass{}
	for _, ps := range p.Passes {
		for _, n := range ps.Loads {
			readers[n.ID] = append(readers[n.ID], ps)
		}
	}
	all, reduces, stores := map[int]int{}, map[int]int{}, map[int]int{}
	for _, ps := range p.Passes {
		// target is the latest level of a pass over ps's domain that runs before limit.
		target := func(limit int) int {
			t := ps.Level
			for _, other := range p.Passes {
				if other.Domain.Equal(ps.Domain) && other.Level > t && other.Level < limit {
					t = other.Level
				}
			}
			return t
		}
		level := func(n *ir.Node) int {
			if n.Op.Class() == ir.Scan {
				return ps.Level // runs where its scan runs
			}
			limit := math.MaxInt
			for _, rd := range readers[n.ID] {
				if rd.Domain.Numel() >= ps.Domain.Numel() {
					limit = min(limit, rd.Level)
				}
			}
			return target(limit)
		}
		for _, n := range ps.Reduces {
			if l := level(n); l > ps.Level {
				all[n.ID], reduces[n.ID] = l, l
			}
		}
		for _, n := range ps.Stores {
			if l := level(n); l > ps.Level {
				all[n.ID], stores[n.ID] = l, l
			}
		}
	}
	var out []map[int]int
	for _, m := range []map[int]int{all, reduces, stores} {
		if len(m) > 0 && (len(out) == 0 || len(m) < len(all)) {
			out = append(out, m)
		}
	}
	return out
}

// cheaper reports whether plan q beats p: no more passes over batch data, and fewer bytes
// streamed, or as many and less arithmetic (a row-local pair whose first sweep only counts).
func cheaper(q, p *Plan) bool {
	if bigPasses(q) > bigPasses(p) {
		return false
	}
	bq, bp := q.Bytes(), p.Bytes()
	return bq < bp || bq == bp && work(q) < work(p)
}

// work is the plan's arithmetic: the nodes each pass computes, times its domain's size.
func work(p *Plan) int {
	n := 0
	for _, ps := range p.Passes {
		n += len(ps.Compute) * ps.Domain.Numel()
	}
	return n
}

// bigPasses is how many passes of p run over a domain of more than one element.
func bigPasses(p *Plan) int {
	n := 0
	for _, ps := range p.Passes {
		if ps.Domain.Numel() > 1 {
			n++
		}
	}
	return n
}

// Bytes is how many bytes a run of the plan streams: every pass's loads and stores, once per
// pass (constants not counted), except that the second pass of a row-local pair reads for free
// what its first read or wrote (the row is in cache).
func (p *Plan) Bytes() int {
	n := 0
	for _, ps := range p.Passes {
		var cached map[int]bool
		if rl := ps.Row; rl != nil && ps == rl.Second {
			cached = map[int]bool{}
			for _, x := range rl.First.Loads {
				cached[x.ID] = true
			}
			for _, x := range rl.First.Stores {
				cached[x.ID] = true
			}
		}
		for _, x := range ps.Loads {
			if !cached[x.ID] {
				n += p.elemBytes(x) * x.Shape.Numel()
			}
		}
		for _, x := range ps.Stores {
			n += p.elemBytes(x) * x.Shape.Numel() * max(1, len(p.Buffers(x)))
		}
	}
	return n
}

// elemBytes is the size of one element of x in memory: 1 for a bool input, 8 for an index
// input, the graph's float size otherwise; 0 for a constant or iota (baked into the kernel).
func (p *Plan) elemBytes(x *ir.Node) int {
	switch {
	case x.Op == ir.OpConst || x.Op == ir.OpIota:
		return 0
	case x.Op == ir.OpInput && x.Input.Kind == ir.Bool:
		return 1
	case x.Op == ir.OpInput && x.Input.Kind == ir.Index:
		return 8
	case p.Graph.DType == ir.F64:
		return 8
	}
	return 4
}
