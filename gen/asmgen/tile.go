package asmgen

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// Tiles: inner dims without gathers. A block's lanes are consecutive indices of the vector
// axis; a tensor whose inner dims follow that axis (logits [B, A], atoms [B, K, A]) holds each
// lane's row of s = |inner dims| elements contiguously, s apart, so the block's lanes at one
// inner index are s apart in memory. Rather than gather them at every iteration of the inner
// loops (and scatter a result written inside one, one lane at a time), a full block reads its
// 8 rows (4 for float64) once with contiguous vector loads (masked at a row's end), transposes
// them in registers, L×L at a time, into a tile on the stack whose vector k is the block's
// lanes at inner offset k, and the loops read the tile with plain loads; a result written in
// a loop goes to a tile of its own, transposed back and stored row by row, contiguously,
// after the block. Every lane computes what it did with gathers, so results are bit-identical.
// Tail blocks keep the gathers (their rows past the tensor's end must not be read).

// maxTileStride bounds the inner elements of one tile (its stack slot is 32 bytes each), and
// maxTileBytes the stack a block's tiles take together; past them, a tensor is gathered.
const (
	maxTileStride = 512
	maxTileBytes  = 32 << 10
)

// tile is one tensor's transposed rows for the current block.
type tile struct {
	n     *ir.Node
	s     int         // elements per lane's row: the lane stride
	pre   []ir.Dim    // inner dims before the vector axis ([Q, B, A]'s Q): a row per index
	size  int         // vectors in the tile: s times the pre dims' sizes
	slot  operand.Mem // size vectors of 32 bytes, the inner dims in the tensor's order
	store bool        // a result: written by the block's stores, flushed after it
}

// newTile describes n's tile in a full block, or returns nil when n cannot have one: n is a
// float tensor without its lanes contiguous, every dim after the vector axis is an inner dim
// (so each lane's row is contiguous), and every batch dim before it an outer counter.
func (pg *passGen) newTile(n *ir.Node) *tile {
	if pg.rem > 0 || pg.jReg == nil || n.IsScalarConst() || n.Op == ir.OpIota {
		return nil
	}
	if n.Op == ir.OpInput && n.Input.Kind != ir.Float {
		return nil
	}
	t := &tile{n: n, s: pg.laneStride(n.Shape)}
	if t.s <= 1 {
		return nil
	}
	v := n.Shape.Index(pg.vaxis())
	for _, d := range n.Shape[v+1:] {
		if pg.e.g.IsBatch(d.Name) {
			return nil
		}
	}
	t.size = t.s
	for _, d := range n.Shape[:v] {
		switch {
		case !pg.e.g.IsBatch(d.Name):
			t.pre = append(t.pre, d)
			t.size *= d.Size
		case pg.counters[d.Name] == nil:
			return nil
		}
	}
	if t.size > maxTileStride {
		return nil
	}
	return t
}

// planTiles picks the tiles of a full block: the loads (read into registers) and stores of
// tensors with a tile (newTile) inside its inner loops, within maxTileBytes; it reads the
// loads' rows into their tiles at once, before the block's first item.
func (pg *passGen) planTiles(items []bitem) {
	pg.tiles = map[int]*tile{}
	if pg.tileSlots == nil {
		pg.tileSlots = map[int]operand.Mem{}
	}
	bytes := 0
	steps(items, func(k, depth int) {
		it := items[k]
		isLoad := it.kind == plan.Load && !it.kept && pg.regs.vals[it.n.ID] != nil // read into registers
		isStore := it.kind == plan.Store
		if depth == 0 || pg.tiles[it.n.ID] != nil || !isLoad && !isStore {
			return
		}
		t := pg.newTile(it.n)
		vb := pg.vecBytes()
		if t == nil || bytes+vb*t.size > maxTileBytes {
			return
		}
		bytes += vb * t.size
		slot, ok := pg.tileSlots[it.n.ID]
		if !ok {
			slot = pg.vecSlots(t.size)
			pg.tileSlots[it.n.ID] = slot
		}
		t.slot, t.store = slot, isStore
		pg.tiles[it.n.ID] = t
		if isLoad {
			pg.fillTile(t)
		}
	})
}

// rowOff is the element offset, in a tensor of shape s, of the block's first lane's row: the
// outer counters and the block's offset along the vector axis, the inner dims at 0.
func (pg *passGen) rowOff(s ir.Shape) reg.GPVirtual {
	key := "row:" + s.String()
	if r, ok := pg.offs[key]; ok {
		return r
	}
	var terms []term
	st := s.Strides()
	v := s.Index(pg.vaxis())
	for i, d := range s[:v] {
		if pg.e.g.IsBatch(d.Name) {
			terms = append(terms, term{pg.counters[d.Name], st[i]})
		}
	}
	r := pg.linear(append(terms, term{pg.jReg, st[v]}))
	pg.offs[key] = r
	return r
}

// rows calls f for every row of a lane in t's tensor: the vector offset in the tile of its
// first element, and the element offset in the tensor from the lane's first row.
func (t *tile) rows(f func(vec, elem int)) {
	st := t.n.Shape.Strides()
	var walk func(i, vec, elem int)
	walk = func(i, vec, elem int) {
		if i == len(t.pre) {
			f(vec*t.s, elem)
			return
		}
		stride := st[t.n.Shape.Index(t.pre[i].Name)]
		for k := 0; k < t.pre[i].Size; k++ {
			walk(i+1, vec*t.pre[i].Size+k, elem+k*stride)
		}
	}
	walk(0, 0, 0)
}

// tileAt addresses the tile's vector at the current inner indices: each inner counter times
// its stride in the tile, 32 bytes a vector.
func (pg *passGen) tileAt(t *tile) operand.Mem {
	s := t.n.Shape
	key := "tile:" + s.String()
	r, ok := pg.offs[key]
	if !ok {
		var terms []term
		stride := pg.vecBytes()
		for i := len(s) - 1; i >= 0; i-- {
			if pg.e.g.IsBatch(s[i].Name) {
				continue
			}
			cnt, ok := pg.counters[s[i].Name]
			if !ok {
				panic("asmgen: no loop binds " + s[i].Name + " for a tile of " + s.String())
			}
			terms = append(terms, term{cnt, stride})
			stride *= s[i].Size
		}
		r = pg.linear(terms)
		pg.offs[key] = r
	}
	m := t.slot
	m.Index, m.Scale = r, 1
	return m
}

// fillTile reads the block's rows of t's tensor and transposes them into its tile, L
// elements of every row at a time (the last group masked to the row's end).
func (pg *passGen) fillTile(t *tile) {
	c, L := pg.c, pg.lanes()
	pg.c.Comment("tile " + pg.e.names[t.n.ID])
	base := pg.nodePtr(t.n)
	off := pg.rowOff(t.n.Shape)
	t.rows(func(vec, elem int) {
		for k0 := 0; k0 < t.s; k0 += L {
			w := min(L, t.s-k0)
			rows := make([]reg.VecVirtual, L)
			var mask reg.VecVirtual
			var k reg.Register
			switch {
			case w < L && pg.zmm:
				k = pg.firstLanesK(w)
			case w < L:
				mask = pg.ymm()
				pg.mov(pg.laneMask(w, pg.f64), mask)
			}
			for l := range rows {
				rows[l] = pg.ymm()
				m := elemMem(base, off, pg.esz(), elem+l*t.s+k0)
				switch {
				case k != nil:
					c.VMOVUPS_Z(m, k, rows[l])
				case mask == nil:
					pg.mov(m, rows[l])
				case pg.f64:
					c.VMASKMOVPD(m, mask, rows[l])
				default:
					c.VMASKMOVPS(m, mask, rows[l])
				}
			}
			for k, v := range pg.transpose(rows)[:w] {
				pg.mov(v, t.slot.Offset(pg.vecBytes()*(vec+k0+k)))
			}
		}
		pg.prefetchRows(base, off, elem, L*t.s)
	})
}

// prefetchRows asks for the lines of a tile's rows (n elements from elem) a fixed number of
// lanes ahead, as prefetch does for a lane-contiguous stream: one block's rows span many lines
// (8 rows of 16 logits, 8 lines), more than the hardware prefetchers run ahead of on their own.
func (pg *passGen) prefetchRows(base, off reg.GPVirtual, elem, n int) {
	if !pg.large || pg.rem > 0 || len(pg.loopLabels) > 0 {
		return
	}
	esz := pg.esz()
	ahead := prefetchElems * n / pg.lanes()
	if pg.reverse(pg.vaxis()) {
		ahead = -ahead
	}
	for b := 0; b < n*esz; b += 64 {
		pg.c.PREFETCHT0(elemMem(base, off, esz, elem+ahead+b/esz))
	}
}

// flushTiles writes the block's result tiles back to their buffers, row by row.
func (pg *passGen) flushTiles() {
	c, L := pg.c, pg.lanes()
	for _, n := range pg.ps.Stores {
		t := pg.tiles[n.ID]
		if t == nil || !t.store {
			continue
		}
		pg.c.Comment("flush the tile of " + pg.e.names[n.ID])
		off := pg.rowOff(n.Shape)
		bases := make([]reg.GPVirtual, len(pg.e.bufAddrs(n)))
		for i := range bases {
			bases[i] = pg.bufPtr(n, i)
		}
		t.rows(func(vec, elem int) {
			for k0 := 0; k0 < t.s; k0 += L {
				w := min(L, t.s-k0)
				cols := make([]reg.VecVirtual, L)
				for k := range cols {
					cols[k] = pg.ymm()
					if k < w {
						pg.mov(t.slot.Offset(pg.vecBytes()*(vec+k0+k)), cols[k])
					} else {
						pg.mov(pg.cf(0), cols[k])
					}
				}
				var mask reg.VecVirtual
				var kw reg.Register
				switch {
				case w < L && pg.zmm:
					kw = pg.firstLanesK(w)
				case w < L:
					mask = pg.ymm()
					pg.mov(pg.laneMask(w, pg.f64), mask)
				}
				for l, row := range pg.transpose(cols) {
					for _, base := range bases {
						m := elemMem(base, off, pg.esz(), elem+l*t.s+k0)
						switch {
						case kw != nil:
							c.VMOVUPS(row, kw, m)
						case mask == nil && t.s%L == 0 && pg.nonTemporal(n):
							pg.storeNT(row, m) // whole vectors at multiples of L elements: aligned
						case mask == nil:
							pg.mov(row, m)
						case pg.f64:
							c.VMASKMOVPD(row, mask, m)
						default:
							c.VMASKMOVPS(row, mask, m)
						}
					}
				}
			}
		})
	}
}

// transpose returns the L×L transpose of L vectors (float32: 8×8 in 24 shuffles, 16×16 in
// 64; float64: 4×4 in 8): out[k] lane l is in[l] lane k.
func (pg *passGen) transpose(in []reg.VecVirtual) []reg.VecVirtual {
	c := pg.c
	if pg.zmm {
		return pg.transpose16(in)
	}
	if pg.f64 {
		t := make([]reg.VecVirtual, 4)
		for i := 0; i < 4; i += 2 {
			t[i], t[i+1] = pg.ymm(), pg.ymm()
			c.VUNPCKLPD(in[i+1], in[i], t[i])   // a0 b0 a2 b2
			c.VUNPCKHPD(in[i+1], in[i], t[i+1]) // a1 b1 a3 b3
		}
		out := make([]reg.VecVirtual, 4)
		for k := range out {
			out[k] = pg.ymm()
		}
		c.VPERM2F128(operand.Imm(0x20), t[2], t[0], out[0])
		c.VPERM2F128(operand.Imm(0x20), t[3], t[1], out[1])
		c.VPERM2F128(operand.Imm(0x31), t[2], t[0], out[2])
		c.VPERM2F128(operand.Imm(0x31), t[3], t[1], out[3])
		return out
	}
	// Rows r0..r7 → pairs interleaved (unpck), quads (shufps), then 128-bit halves swapped.
	t := make([]reg.VecVirtual, 8)
	for i := 0; i < 8; i += 2 {
		t[i], t[i+1] = pg.ymm(), pg.ymm()
		c.VUNPCKLPS(in[i+1], in[i], t[i])   // a0 b0 a1 b1 | a4 b4 a5 b5
		c.VUNPCKHPS(in[i+1], in[i], t[i+1]) // a2 b2 a3 b3 | a6 b6 a7 b7
	}
	q := make([]reg.VecVirtual, 8)
	for i := 0; i < 8; i += 4 {
		for j := 0; j < 2; j++ {
			q[i+2*j], q[i+2*j+1] = pg.ymm(), pg.ymm()
			c.VSHUFPS(operand.Imm(0x44), t[i+2+j], t[i+j], q[i+2*j])   // a0 b0 c0 d0 | a4 b4 c4 d4 (j=0)
			c.VSHUFPS(operand.Imm(0xEE), t[i+2+j], t[i+j], q[i+2*j+1]) // a1 b1 c1 d1 | a5 b5 c5 d5
		}
	}
	out := make([]reg.VecVirtual, 8)
	for k := 0; k < 4; k++ {
		out[k], out[k+4] = pg.ymm(), pg.ymm()
		c.VPERM2F128(operand.Imm(0x20), q[4+k], q[k], out[k])
		c.VPERM2F128(operand.Imm(0x31), q[4+k], q[k], out[k+4])
	}
	return out
}

// tileReduce emits, in place of the loop starting at items[k], maxima and minima over a tile:
// the loop's body being only the tile's load and maxima or minima of it into states held in
// registers (a softmax's max over a categorical's actions, a DQN's max over its actions).
// Rather than fold the tile's vectors into a state one after the other, a chain of
// dependent instructions as long as the row, it folds them pairwise, a tree of depth
// log₂ s. max and min as maxNaN and minNaN compute them are commutative and associative
// (−0 below +0, any NaN giving a NaN), so the values are the loop's. It returns the loop
// end's position, or −1 when the loop is not of that form.
func (pg *passGen) tileReduce(k int, items []bitem) int {
	end := pg.ends[k]
	if len(items[k].loop.Dims) != 1 || end < k+3 {
		return -1
	}
	ld := items[k+1]
	if ld.kind != plan.Load {
		return -1
	}
	t := pg.tiles[ld.n.ID]
	if t == nil || t.store || len(t.pre) > 0 {
		return -1
	}
	var inner []ir.Dim
	for _, d := range ld.n.Shape {
		if !pg.e.g.IsBatch(d.Name) {
			inner = append(inner, d)
		}
	}
	if len(inner) != 1 || inner[0].Name != items[k].loop.Dims[0].Name || t.s != inner[0].Size {
		return -1
	}
	for _, acc := range items[k+2 : end] {
		r := acc.n
		if acc.kind != plan.Accumulate || r.Args[0] != ld.n || r.Op != ir.OpRMax && r.Op != ir.OpRMin || pg.stateReg(r, "m", 0) == nil {
			return -1
		}
	}
	for _, acc := range items[k+2 : end] {
		pg.treeReduce(k, acc.n, t)
	}
	return end
}

// foldTree is p = fold(q, p) on treeReduce's operands: their minimum (of the negated
// values, for a max), or a stabiliser's maximum.
func (pg *passGen) foldTree(r *ir.Node, q, p reg.VecVirtual) {
	if r.Op == ir.OpRMax && r.Stabiliser {
		pg.fold(r, q, p, p)
		return
	}
	pg.minNaN(q, p, p)
}

// treeReduce folds the vectors of tile t into r's state register pairwise (tileReduce).
func (pg *passGen) treeReduce(k int, r *ir.Node, t *tile) {
	pg.c.Comment(fmt.Sprintf("%s(%s) over %v, pairwise", r.Op, pg.e.names[t.n.ID], r.Axes))
	pg.regs.makeRoom(k, 6, nil)
	m := pg.stateReg(r, "m", 0)
	// max(x, y) = −min(−x, −y): negate every vector once, take the minimum, negate back
	// (a stabiliser's plain maximum needs neither, see fold).
	var sign reg.VecVirtual
	if r.Op == ir.OpRMax && !r.Stabiliser {
		sign = pg.ymm()
		pg.mov(pg.cf(math.Copysign(0, -1)), sign)
	}
	get := func(i int) reg.VecVirtual {
		x := pg.ymm()
		var src operand.Op = m // the state is the last leaf
		if i < t.s {
			src = t.slot.Offset(pg.vecBytes() * i)
		}
		if sign != nil {
			pg.xor(src, sign, x)
		} else {
			pg.mov(src, x)
		}
		return x
	}
	// A stack of partial minima of sizes 2^j, merged as equal sizes meet (a binary counter):
	// at most log₂(s+1)+1 registers live at once.
	type part struct {
		v    reg.VecVirtual
		size int
	}
	var st []part
	for i := 0; i <= t.s; i++ {
		p := part{get(i), 1}
		for len(st) > 0 && st[len(st)-1].size == p.size {
			q := st[len(st)-1]
			st = st[:len(st)-1]
			pg.foldTree(r, q.v, p.v)
			p.size += q.size
		}
		st = append(st, p)
	}
	for len(st) > 1 {
		q, p := st[len(st)-2], st[len(st)-1]
		st = st[:len(st)-2]
		pg.foldTree(r, q.v, p.v)
		st = append(st, part{p.v, p.size + q.size})
	}
	if sign != nil {
		pg.xor(sign, st[0].v, m)
	} else {
		pg.mov(st[0].v, m)
	}
}
