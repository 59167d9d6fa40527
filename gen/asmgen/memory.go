package asmgen

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// Memory access of one block. A block's lanes are consecutive indices of the vector axis;
// a tensor holds them contiguously (the axis innermost: plain vector loads and stores), at a
// fixed stride (a non-batch dim inside it, e.g. logits [B, A]: a full block goes through a
// transposed tile, tile.go; a tail block gathers, and stores lane by lane), or not at all (it
// is broadcast).

// nodePtr loads a pointer to the memory holding node n (an input, a constant tensor, or a
// stored buffer: the first, for a read).
func (pg *passGen) nodePtr(n *ir.Node) reg.GPVirtual {
	switch n.Op {
	case ir.OpInput:
		t := pg.elemGo()
		switch n.Input.Kind {
		case ir.Bool:
			t = "bool"
		case ir.Index:
			t = "int64"
		}
		return pg.ptr("in:"+n.Input.Name, "*"+t, "&in."+pg.e.inField[n.Input.Name]+"[0]")
	case ir.OpConst:
		return pg.ptr(fmt.Sprintf("const:%d", n.ID), "*"+pg.elemGo(), "&"+gogen.ConstName(pg.e.k, n)+"[0]")
	}
	return pg.bufPtr(n, 0)
}

// bufPtr loads the address of stored node n's i-th buffer.
func (pg *passGen) bufPtr(n *ir.Node, i int) reg.GPVirtual {
	return pg.ptr(fmt.Sprintf("buf:%d:%d", n.ID, i), "*"+pg.elemGo(), pg.e.bufAddrs(n)[i])
}

// laneStride is the distance in elements between the lanes of a block in a tensor of shape s
// (0: s does not have the vector axis, every lane reads the same element).
func (pg *passGen) laneStride(s ir.Shape) int {
	i := s.Index(pg.vaxis())
	if i < 0 {
		return 0
	}
	return s.Strides()[i]
}

// off returns a register holding the element offset, within a tensor of shape s, of the
// current block's first lane: the loop counters times s's strides, plus the block's offset
// along the vector axis times its stride.
func (pg *passGen) off(s ir.Shape) reg.GPVirtual {
	key := s.String()
	if r, ok := pg.offs[key]; ok {
		return r
	}
	var terms []term
	st := s.Strides()
	for i, d := range s {
		if d.Name == pg.vaxis() {
			switch {
			case pg.jReg != nil:
				terms = append(terms, term{pg.jReg, st[i]})
			case pg.jImm != 0:
				terms = append(terms, term{nil, pg.jImm * st[i]})
			}
			continue
		}
		cnt, ok := pg.counters[d.Name]
		if !ok {
			panic("asmgen: no loop binds " + d.Name + " for " + s.String())
		}
		terms = append(terms, term{cnt, st[i]})
	}
	r := pg.linear(terms)
	pg.offs[key] = r
	return r
}

// term is a register times a scale, or (nil register) the constant scale.
type term struct {
	r     reg.GPVirtual
	scale int
}

// linear returns a new register holding the sum of terms: the first register term moved or
// multiplied into it, the others added, the constants folded into one.
func (pg *passGen) linear(terms []term) reg.GPVirtual {
	c := pg.c
	r, imm, first := pg.gp(), 0, true
	for _, t := range terms {
		switch {
		case t.r == nil:
			imm += t.scale
			continue
		case first && t.scale == 1:
			c.MOVQ(t.r, r)
		case first:
			c.IMUL3Q(operand.I32(int32(t.scale)), t.r, r)
		case t.scale == 1:
			c.ADDQ(t.r, r)
		default:
			x := pg.gp()
			c.IMUL3Q(operand.I32(int32(t.scale)), t.r, x)
			c.ADDQ(x, r)
		}
		first = false
	}
	switch {
	case first && imm == 0:
		c.XORQ(r, r)
	case first:
		c.MOVQ(operand.I32(int32(imm)), r)
	case imm != 0:
		c.ADDQ(operand.I32(int32(imm)), r)
	}
	return r
}

// elemMem addresses element off (+disp elements) of the array at base.
// A nil off is offset 0.
func elemMem(base, off reg.GPVirtual, size, disp int) operand.Mem {
	if off == nil {
		return operand.Mem{Base: base, Disp: disp * size}
	}
	return operand.Mem{Base: base, Index: off, Scale: uint8(size), Disp: disp * size}
}

// tailMask is a register of all-ones in the block's valid lanes (kernel element width).
func (pg *passGen) tailMask() reg.VecVirtual {
	m := pg.ymm()
	pg.mov(pg.laneMask(pg.rem, pg.f64), m)
	return m
}

// validLanes is how many lanes of the block hold elements.
func (pg *passGen) validLanes() int {
	if pg.rem > 0 {
		return pg.rem
	}
	return pg.lanes()
}

// laneMask is a constant with the first k lanes set (dword lanes, or qword lanes for wide).
func (pg *passGen) laneMask(k int, wide bool) operand.Mem {
	if wide {
		vals := make([]operand.Constant, 4)
		for i := range vals {
			if i < k {
				vals[i] = operand.U64(math.MaxUint64)
			} else {
				vals[i] = operand.U64(0)
			}
		}
		return pg.data(fmt.Sprintf("mask64_%d", k), vals)
	}
	vals := make([]operand.Constant, 8)
	for i := range vals {
		if i < k {
			vals[i] = operand.U32(math.MaxUint32)
		} else {
			vals[i] = operand.U32(0)
		}
	}
	return pg.data(fmt.Sprintf("mask32_%d", k), vals)
}

// laneOffsets is a constant of dword lanes 0, s, 2s, ..., the gather indices of stride s.
func (pg *passGen) laneOffsets(s int) operand.Mem {
	vals := make([]operand.Constant, max(8, pg.lanes()))
	for i := range vals {
		vals[i] = operand.U32(uint32(i * s))
	}
	return pg.data(fmt.Sprintf("lanestride%d", s), vals)
}

// gatherAt reads lanes base[off + i·stride] (i < valid lanes) into x with VGATHERDPS/PD.
func (pg *passGen) gatherAt(base, off reg.GPVirtual, stride int, x reg.VecVirtual) {
	c := pg.c
	ptr := pg.gp()
	c.LEAQ(elemMem(base, off, pg.esz(), 0), ptr)
	ix := pg.ymm()
	pg.mov(pg.laneOffsets(stride), ix)
	if pg.zmm {
		pg.mov(pg.cf(0), x)
		pg.gatherAll(operand.Mem{Base: ptr, Index: ix, Scale: 4}, x)
		return
	}
	m := pg.ymm()
	if pg.rem > 0 {
		pg.mov(pg.laneMask(pg.rem, pg.f64), m)
	} else {
		pg.mov(pg.laneMask(pg.lanes(), pg.f64), m) // all lanes (a load: see defineOnly)
	}
	pg.mov(pg.cf(0), x)
	if pg.f64 {
		c.VGATHERDPD(m, operand.Mem{Base: ptr, Index: ix.AsX(), Scale: 8}, x)
	} else {
		c.VGATHERDPS(m, operand.Mem{Base: ptr, Index: ix, Scale: 4}, x)
	}
}

// load reads node n (not computed by this pass) at the current block.
func (pg *passGen) load(n *ir.Node) reg.VecVirtual {
	c := pg.c
	x := pg.ymm()
	if n.IsScalarConst() {
		pg.mov(pg.cf(n.Value[0]), x)
		return x
	}
	if n.Op == ir.OpIota {
		pg.iota(n, x)
		return x
	}
	if t := pg.tiles[n.ID]; t != nil && !t.store {
		pg.mov(pg.tileAt(t), x)
		return x
	}
	base := pg.nodePtr(n)
	off := pg.off(n.Shape)
	kind := ir.Float
	if n.Op == ir.OpInput {
		kind = n.Input.Kind
	}
	stride := pg.laneStride(n.Shape)
	switch kind {
	case ir.Float:
		m := elemMem(base, off, pg.esz(), 0)
		switch {
		case stride == 0 && pg.f64:
			c.VBROADCASTSD(m, x)
		case stride == 0:
			c.VBROADCASTSS(m, x)
		case stride != 1:
			pg.gatherAt(base, off, stride, x)
		case pg.rem > 0:
			if pg.f64 {
				c.VMASKMOVPD(m, pg.tailMask(), x)
			} else {
				c.VMASKMOVPS(m, pg.tailMask(), x)
			}
		default:
			pg.prefetch(base, off, pg.esz())
			pg.mov(m, x)
		}
	case ir.Bool:
		pg.loadBool(base, off, stride, x)
	case ir.Index:
		pg.loadIndex(base, off, stride, x)
	}
	return x
}

// iota computes an iota's lanes: the index along its axis of the block's first lane (its
// offset in its one-dim shape), plus 0, 1, ... where the axis is the vector axis; reversed,
// |axis|−1 minus those.
func (pg *passGen) iota(n *ir.Node, x reg.VecVirtual) {
	c := pg.c
	off := pg.off(n.Shape)
	if n.Reverse {
		t := pg.gp()
		c.MOVQ(operand.I32(int32(n.Shape.Numel()-1)), t)
		c.SUBQ(off, t)
		off = t
	}
	c.VMOVD(off.As32(), x.AsX())
	c.VPBROADCASTD(x.AsX(), x)
	switch {
	case pg.laneStride(n.Shape) == 0:
	case n.Reverse:
		c.VPSUBD(pg.laneOffsets(1), x, x)
	default:
		c.VPADDD(pg.laneOffsets(1), x, x)
	}
	pg.dwordsToFloats(x)
}

// loadBool reads bools as 0/1 floats. A tail block, or lanes that are not adjacent, copy
// their bytes to a zeroed stack slot first, so nothing past the array is read.
func (pg *passGen) loadBool(base, off reg.GPVirtual, stride int, x reg.VecVirtual) {
	c := pg.c
	if stride == 0 {
		t := pg.c.GP32()
		c.MOVBLZX(elemMem(base, off, 1, 0), t)
		c.VMOVD(t, x.AsX())
		c.VPBROADCASTD(x.AsX(), x)
	} else {
		src := elemMem(base, off, 1, 0)
		if pg.rem > 0 || stride != 1 {
			slot := pg.c.AllocLocal(8)
			c.MOVQ(operand.I32(int32(0)), slot)
			t := pg.c.GP8()
			for i := 0; i < pg.validLanes(); i++ {
				c.MOVB(elemMem(base, off, 1, i*stride), t)
				c.MOVB(t, slot.Offset(i))
			}
			src = slot
		} else {
			pg.prefetch(base, off, 1)
		}
		pg.boolsToFloats(src, x)
		return
	}
	pg.dwordsToFloats(x)
}

// boolsToFloats widens the lanes' bytes at src (0 or 1) into x as floats.
func (pg *passGen) boolsToFloats(src operand.Op, x reg.VecVirtual) {
	if !pg.f64 {
		pg.c.VPMOVZXBD(src, x)
	} else {
		pg.c.VPMOVZXBD(src, x.AsX())
	}
	pg.dwordsToFloats(x)
}

// dwordsToFloats converts x's dword integer lanes to the dtype's floats.
func (pg *passGen) dwordsToFloats(x reg.VecVirtual) {
	if pg.f64 {
		pg.c.VCVTDQ2PD(x.AsX(), x)
	} else {
		pg.c.VCVTDQ2PS(x, x)
	}
}

// indexToSlot converts the int64 in t to the dtype into lane i of slot (f is a scratch XMM
// register, zeroed once: the VEX conversions merge into it).
func (pg *passGen) indexToSlot(t reg.GPVirtual, f reg.VecVirtual, slot operand.Mem, i int) {
	if pg.f64 {
		pg.c.VCVTSI2SDQ(t, f, f)
		pg.c.VMOVSD(f, slot.Offset(8*i))
	} else {
		pg.c.VCVTSI2SSQ(t, f, f)
		pg.c.VMOVSS(f, slot.Offset(4*i))
	}
}

// loadIndex reads int64 indices as floats. AVX2 has no packed int64-to-float conversion:
// a full block of adjacent indices goes through int32 (loadIndexPacked), anything else one
// lane at a time (loadIndexLanes); tails read only their valid lanes.
func (pg *passGen) loadIndex(base, off reg.GPVirtual, stride int, x reg.VecVirtual) {
	if pg.zmm {
		pg.loadIndexWide(base, off, stride, x)
		return
	}
	if stride == 1 && pg.rem == 0 && pg.lanes() == 32/pg.esz() {
		pg.loadIndexPacked(base, off, x)
		return
	}
	pg.loadIndexLanes(base, off, stride, x)
}

// loadIndexPacked reads a full block of adjacent int64 indices: their low dwords packed
// and converted with VCVTDQ2PS/PD (which round as CVTSI2SSQ/SDQ do), when every high dword
// is its low dword's sign, i.e. every index fits in int32 (any action or class id);
// otherwise (garbage in an unused slot, a huge id) the block takes loadIndexLanes. It
// replaces eight scalar conversions stored to a slot and reloaded whole, a load that
// store forwarding cannot serve (10% of a categorical ClipPPO's Forward).
func (pg *passGen) loadIndexPacked(base, off reg.GPVirtual, x reg.VecVirtual) {
	c := pg.c
	wide, done := pg.newLabel("wideindex"), pg.newLabel("indexdone")
	pg.prefetch(base, off, 8)
	ay, by, loy, hiy := pg.ymm(), pg.ymm(), pg.ymm(), pg.ymm()
	c.VMOVDQU(elemMem(base, off, 8, 0), ay)
	var a, b, lo, hi reg.Register = ay, by, loy, hiy
	all := uint64(0xff)
	if pg.f64 {
		a, b, lo, hi, all = ay.AsX(), by.AsX(), loy.AsX(), hiy.AsX(), 0xf
		c.VEXTRACTI128(operand.Imm(1), ay, b)
	} else {
		c.VMOVDQU(elemMem(base, off, 8, 4), b)
	}
	// Per 128-bit half: the low (high) dwords of a's two indices, then b's: lanes 0 1 2 3
	// in order for float64's XMM, 0 1 4 5 | 2 3 6 7 for float32.
	c.VSHUFPS(operand.Imm(0x88), b, a, lo)
	c.VSHUFPS(operand.Imm(0xDD), b, a, hi)
	c.VPSRAD(operand.Imm(31), lo, a)
	c.VPCMPEQD(hi, a, a)
	m := c.GP32()
	c.VMOVMSKPS(a, m)
	c.CMPL(m, operand.U8(all))
	c.JNE(operand.LabelRef(wide))
	if pg.f64 {
		c.VCVTDQ2PD(lo, x)
	} else {
		c.VPERMQ(operand.Imm(0xD8), loy, loy)
		c.VCVTDQ2PS(loy, x)
	}
	c.JMP(operand.LabelRef(done))
	c.Label(wide)
	pg.loadIndexLanes(base, off, 1, x)
	c.Label(done)
}

// loadIndexLanes reads int64 indices as floats one lane at a time.
func (pg *passGen) loadIndexLanes(base, off reg.GPVirtual, stride int, x reg.VecVirtual) {
	c := pg.c
	n := 1
	if stride != 0 {
		n = pg.validLanes()
	}
	slot := c.AllocLocal(32)
	pg.mov(pg.cf(0), x) // loads, not zeroing idioms (see defineOnly)
	pg.mov(x, slot)
	t := pg.gp()
	f := pg.zeroX() // the VEX conversions merge into f: start from zero, not a stale value
	for i := 0; i < n; i++ {
		c.MOVQ(elemMem(base, off, 8, i*stride), t)
		pg.indexToSlot(t, f, slot, i)
	}
	if stride != 0 {
		pg.mov(slot, x)
	} else if pg.f64 {
		c.VBROADCASTSD(slot, x)
	} else {
		c.VBROADCASTSS(slot, x)
	}
}

// store writes v (node n's value at the current block) to each of n's buffers.
func (pg *passGen) store(n *ir.Node, v reg.VecVirtual) {
	if t := pg.tiles[n.ID]; t != nil && t.store {
		pg.mov(v, pg.tileAt(t)) // every buffer gets it after the block (flushTiles)
		return
	}
	for i := range pg.e.bufAddrs(n) {
		pg.storeTo(n, pg.bufPtr(n, i), v)
	}
}

func (pg *passGen) storeTo(n *ir.Node, base reg.GPVirtual, v reg.VecVirtual) {
	off := pg.off(n.Shape)
	m := elemMem(base, off, pg.esz(), 0)
	stride := pg.laneStride(n.Shape)
	switch {
	case len(pg.dom) == 0:
		if pg.f64 {
			pg.c.VMOVSD(v.AsX(), m)
		} else {
			pg.c.VMOVSS(v.AsX(), m)
		}
	case stride != 1:
		pg.scatter(base, off, stride, v)
	case pg.rem > 0:
		if pg.f64 {
			pg.c.VMASKMOVPD(v, pg.tailMask(), m)
		} else {
			pg.c.VMASKMOVPS(v, pg.tailMask(), m)
		}
	case pg.nonTemporal(n):
		pg.storeNT(v, m)
	default:
		pg.mov(v, m)
	}
}

// nonTemporal reports whether this variant of the pass stores n's full blocks
// non-temporally: the output bypasses the caches, and no read-for-ownership of its lines is
// needed (the wrapper checked the 32-byte alignment of its buffers).
func (pg *passGen) nonTemporal(n *ir.Node) bool {
	return pg.nt && pg.ps.Schedule.Stores[n.ID] == plan.NonTemporal
}

// storeNT stores v at the 32-byte aligned m with a non-temporal store.
func (pg *passGen) storeNT(v reg.VecVirtual, m operand.Mem) {
	if pg.f64 {
		pg.c.VMOVNTPD(v, m)
	} else {
		pg.c.VMOVNTPS(v, m)
	}
}

// scatter stores the block's valid lanes of v at base[off + i·stride] one by one (AVX2 has
// no scatter), through a stack slot.
func (pg *passGen) scatter(base, off reg.GPVirtual, stride int, v reg.VecVirtual) {
	c := pg.c
	slot := pg.vecSlots(1)
	pg.mov(v, slot)
	if pg.f64 {
		t := pg.gp()
		for i := 0; i < pg.validLanes(); i++ {
			c.MOVQ(slot.Offset(8*i), t)
			c.MOVQ(t, elemMem(base, off, 8, i*stride))
		}
		return
	}
	t := c.GP32()
	for i := 0; i < pg.validLanes(); i++ {
		c.MOVL(slot.Offset(4*i), t)
		c.MOVL(t, elemMem(base, off, 4, i*stride))
	}
}

// prefetch asks for the stream at base+off a fixed distance ahead of the walk (behind it,
// for a reverse walk), so many concurrent streams do not outrun the hardware prefetchers.
func (pg *passGen) prefetch(base, off reg.GPVirtual, size int) {
	if !pg.large || pg.rem > 0 || len(pg.loopLabels) > 0 {
		return
	}
	d := prefetchElems
	if pg.reverse(pg.vaxis()) {
		d = -d
	}
	pg.c.PREFETCHT0(elemMem(base, off, size, d))
}
