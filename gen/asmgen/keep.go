package asmgen

import (
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// Values kept across a block's inner loops. The plan recomputes an elementwise value in
// every loop that reads it: a categorical gradient's second loop over the actions computes
// e^(z − max z) again after the softmax's sum has. Where the value costs a polynomial (exp,
// log, log1p: 20–30 instructions), the first loop that computes it also stores each
// iteration's vector into a stack tile, one vector per inner index, and the later loops read
// the tile instead: one store and one load for the polynomial, the same bits.

// maxKeptBytes bounds the stack the kept tiles of one pass take.
const maxKeptBytes = 16 << 10

// keepsWorth lists the ops whose value a later loop reads from a tile rather than recomputes.
func keepsWorth(op ir.Op) bool {
	return op == ir.OpExp || op == ir.OpLog || op == ir.OpLog1p || op == ir.OpExpM1MinusX
}

// keepAcrossLoops marks, within a block's items, the first computation inside a loop of each
// such value that a later loop computes again (keep: store it into its tile) and turns the
// later ones into reads of the tile (kept).
func (pg *passGen) keepAcrossLoops(items []bitem) []bitem {
	if pg.keptTiles == nil {
		pg.keptTiles = map[int]*tile{}
	}
	first := map[int]int{} // node → position of its first computation inside a loop
	bytes := 0
	for _, t := range pg.keptTiles {
		bytes += pg.vecBytes() * t.size
	}
	out := append([]bitem(nil), items...)
	steps(items, func(k, depth int) {
		it := items[k]
		if depth == 0 || it.kind != plan.Compute || !keepsWorth(it.n.Op) {
			return
		}
		j, seen := first[it.n.ID]
		if !seen {
			first[it.n.ID] = k
			return
		}
		t := pg.keptTiles[it.n.ID]
		if t == nil {
			size := pg.e.g.InnerPart(it.n.Shape).Numel()
			if bytes+pg.vecBytes()*size > maxKeptBytes {
				return
			}
			bytes += pg.vecBytes() * size
			t = &tile{n: it.n, s: size, size: size, slot: pg.vecSlots(size)}
			pg.keptTiles[it.n.ID] = t
		}
		out[j].keep = true
		out[k] = bitem{kind: plan.Load, n: it.n, kept: true}
	})
	return out
}

// keepValue stores a kept value's vector into its tile at the current inner indices.
func (pg *passGen) keepValue(n *ir.Node, r reg.VecVirtual) {
	pg.mov(r, pg.tileAt(pg.keptTiles[n.ID]))
}

// keptReload reads a kept value from its tile at the current inner indices.
func (pg *passGen) keptReload(n *ir.Node) func() reg.VecVirtual {
	return func() reg.VecVirtual {
		x := pg.ymm()
		pg.mov(pg.tileAt(pg.keptTiles[n.ID]), x)
		return x
	}
}
