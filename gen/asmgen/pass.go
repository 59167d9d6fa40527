package asmgen

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// param is one pointer argument of a pass's assembly function and the Go expression the
// wrapper passes for it.
type param struct {
	name, goType, goExpr string
}

// redLayout says how a reduction's states are laid out: slots (result elements), each with
// lps lane states. When the pass's vector axis is kept by the reduction, lanes are slots
// (lps = 1); when it is reduced, each slot has one state per lane (lps = lanes).
type redLayout struct {
	slots, lps int
}

// largePass is the working set (bytes a pass streams) above which it prefetches ahead and
// gets a variant with non-temporal stores: well beyond the caches of current x86 servers'
// cores, so the data comes from memory anyway.
const largePass = 32 << 20

// prefetchElems is how far ahead a large pass prefetches: 256 elements (32 float32 blocks).
const prefetchElems = 256

// passGen emits one pass.
type passGen struct {
	*asm
	a64    *asm // float64 instructions, for reduction states
	e      *emitter
	ps     *plan.Pass
	dom    ir.Shape
	params []param
	pidx   map[string]int

	counters []reg.GPVirtual // outer loop counters
	carries  map[int]reg.VecVirtual

	invSlots map[string]operand.Mem // 1/n of known-count variances, per reduced axes (rowSetup)
	twins    map[int]*ir.Node       // logsumexp of 2·x → the logsumexp of x in the same pass (see twinOf)
	large    bool                   // the pass streams more than largePass bytes: prefetch ahead
	nt       bool                   // this variant stores full blocks non-temporally
	chunked  bool                   // the pass runs on a chunk of rows (see chunkable)

	// per block
	jReg  reg.GPVirtual // inner offset register (full blocks), nil in tails
	jImm  int           // inner offset (tails)
	rem   int           // valid lanes in a tail block, 0 in full blocks
	offs  map[string]reg.GPVirtual
	stReg reg.GPVirtual // the state buffer's address, loaded on first use in a block
	regs  *regs
	slots []operand.Mem
}

func (pg *passGen) esz() int {
	if pg.f64 {
		return 8
	}
	return 4
}

// inner is the pass's vector axis (the last domain dim), or "" for a scalar pass.
func (pg *passGen) inner() string {
	if len(pg.dom) == 0 {
		return ""
	}
	return pg.dom[len(pg.dom)-1].Name
}

func (pg *passGen) layout(r *ir.Node) redLayout {
	if r.Shape.Has(pg.inner()) {
		return redLayout{slots: r.Shape.Numel(), lps: 1}
	}
	return redLayout{slots: r.Shape.Numel(), lps: pg.lanes()}
}

// param is the argument for key, registered on first use. Every argument is a pointer or
// an int, so argument i is at 8·i(FP).
func (pg *passGen) param(key, goType, goExpr string) operand.Mem {
	i, ok := pg.pidx[key]
	if !ok {
		i = len(pg.params)
		pg.pidx[key] = i
		pg.params = append(pg.params, param{name: fmt.Sprintf("p%d", i), goType: goType, goExpr: goExpr})
	}
	return operand.NewParamAddr(pg.params[i].name, 8*i)
}

// ptr loads the pointer argument for key into a fresh register.
func (pg *passGen) ptr(key, goType, goExpr string) reg.GPVirtual {
	r := pg.gp()
	pg.c.MOVQ(pg.param(key, goType, goExpr), r)
	return r
}

// rowLo and rowHi are a chunked pass's arguments: its chunk is rows [rowLo, rowHi) of the
// first domain dim.
func (pg *passGen) rowLo() operand.Mem { return pg.param("rows:lo", "int", "lo") }
func (pg *passGen) rowHi() operand.Mem { return pg.param("rows:hi", "int", "hi") }

// elemGo is the Go element type of the kernel.
func (pg *passGen) elemGo() string {
	if pg.f64 {
		return "float64"
	}
	return "float32"
}

// nodePtr loads a pointer to the memory holding node n (an input, a constant tensor, or a
// stored buffer).
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
		return pg.ptr(fmt.Sprintf("const:%d", n.ID), "*"+pg.elemGo(), fmt.Sprintf("&const%d[0]", n.ID))
	}
	return pg.ptr(fmt.Sprintf("buf:%d", n.ID), "*"+pg.elemGo(), pg.e.bufAddr(n))
}

// off returns a register holding the element offset, within a tensor of shape s, of the
// current block's first element: the outer counters times s's strides, plus the inner
// offset when s has the vector axis.
func (pg *passGen) off(s ir.Shape) reg.GPVirtual {
	key := s.String()
	if r, ok := pg.offs[key]; ok {
		return r
	}
	r := pg.gp()
	pg.c.XORQ(r, r)
	st := s.Strides()
	for i, d := range s {
		if d.Name == pg.inner() {
			if st[i] != 1 {
				panic("asmgen: the vector axis must be innermost in " + s.String())
			}
			if pg.jReg != nil {
				pg.c.ADDQ(pg.jReg, r)
			} else if pg.jImm != 0 {
				pg.c.ADDQ(operand.I32(int32(pg.jImm)), r)
			}
			continue
		}
		k := pg.dom.Index(d.Name)
		t := pg.gp()
		pg.c.IMUL3Q(operand.I32(int32(st[i])), pg.counters[k], t)
		pg.c.ADDQ(t, r)
	}
	pg.offs[key] = r
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

// load reads node n (not computed by this pass) at the current block.
func (pg *passGen) load(n *ir.Node) reg.VecVirtual {
	c := pg.c
	x := pg.ymm()
	if n.IsScalarConst() {
		pg.mov(pg.cf(n.Value[0]), x)
		return x
	}
	base := pg.nodePtr(n)
	off := pg.off(n.Shape)
	kind := ir.Float
	if n.Op == ir.OpInput {
		kind = n.Input.Kind
	}
	vector := n.Shape.Has(pg.inner())
	switch kind {
	case ir.Float:
		m := elemMem(base, off, pg.esz(), 0)
		switch {
		case !vector && pg.f64:
			c.VBROADCASTSD(m, x)
		case !vector:
			c.VBROADCASTSS(m, x)
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
		pg.loadBool(base, off, vector, x)
	case ir.Index:
		pg.loadIndex(base, off, vector, x)
	}
	return x
}

// loadBool reads bools as 0/1 floats. A tail block copies its valid bytes to a zeroed stack
// slot first, so nothing past the array is read.
func (pg *passGen) loadBool(base, off reg.GPVirtual, vector bool, x reg.VecVirtual) {
	c := pg.c
	n := pg.lanes()
	if !vector {
		t := pg.c.GP32()
		c.MOVBLZX(elemMem(base, off, 1, 0), t)
		c.VMOVD(t, x.AsX())
		c.VPBROADCASTD(x.AsX(), x)
	} else {
		src := elemMem(base, off, 1, 0)
		if pg.rem > 0 {
			slot := pg.c.AllocLocal(8)
			c.MOVQ(operand.I32(int32(0)), slot)
			t := pg.c.GP8()
			for i := 0; i < pg.rem; i++ {
				c.MOVB(elemMem(base, off, 1, i), t)
				c.MOVB(t, slot.Offset(i))
			}
			src = slot
		}
		pg.prefetch(base, off, 1)
		if n == 8 {
			c.VPMOVZXBD(src, x)
		} else {
			c.VPMOVZXBD(src, x.AsX())
		}
	}
	if pg.f64 {
		c.VCVTDQ2PD(x.AsX(), x)
	} else {
		c.VCVTDQ2PS(x, x)
	}
}

// loadIndex reads int64 indices as floats, one lane at a time (AVX2 has no packed
// int64-to-float conversion); tails read only their valid lanes.
func (pg *passGen) loadIndex(base, off reg.GPVirtual, vector bool, x reg.VecVirtual) {
	c := pg.c
	n := 1
	if vector {
		n = pg.lanes()
		if pg.rem > 0 {
			n = pg.rem
		}
	}
	slot := c.AllocLocal(32)
	c.VXORPS(x, x, x)
	pg.mov(x, slot)
	t := pg.gp()
	f := c.XMM()
	c.VXORPS(f, f, f) // the VEX conversions merge into f: start from zero, not a stale value
	for i := 0; i < n; i++ {
		c.MOVQ(elemMem(base, off, 8, i), t)
		if pg.f64 {
			c.VCVTSI2SDQ(t, f, f)
			c.VMOVSD(f, slot.Offset(8*i))
		} else {
			c.VCVTSI2SSQ(t, f, f)
			c.VMOVSS(f, slot.Offset(4*i))
		}
	}
	if vector {
		pg.mov(slot, x)
	} else if pg.f64 {
		c.VBROADCASTSD(slot, x)
	} else {
		c.VBROADCASTSS(slot, x)
	}
}

// store writes v (node n's value at the current block) to n's buffer.
func (pg *passGen) store(n *ir.Node, v reg.VecVirtual) {
	base := pg.nodePtr(n)
	off := pg.off(n.Shape)
	m := elemMem(base, off, pg.esz(), 0)
	switch {
	case len(pg.dom) == 0:
		if pg.f64 {
			pg.c.VMOVSD(v.AsX(), m)
		} else {
			pg.c.VMOVSS(v.AsX(), m)
		}
	case pg.rem > 0:
		if pg.f64 {
			pg.c.VMASKMOVPD(v, pg.tailMask(), m)
		} else {
			pg.c.VMASKMOVPS(v, pg.tailMask(), m)
		}
	case pg.nt:
		// Non-temporal: a large output bypasses the caches, and no read-for-ownership of
		// its lines is needed (the wrapper checked the 32-byte alignment).
		if pg.f64 {
			pg.c.VMOVNTPD(v, m)
		} else {
			pg.c.VMOVNTPS(v, m)
		}
	default:
		pg.mov(v, m)
	}
}

// prefetch asks for the stream at base+off a fixed distance ahead of the walk (behind it,
// for a reverse scan), so many concurrent streams do not outrun the hardware prefetchers.
func (pg *passGen) prefetch(base, off reg.GPVirtual, size int) {
	if !pg.large || pg.rem > 0 {
		return
	}
	d := prefetchElems
	if pg.ps.Scan {
		d = -d
	}
	pg.c.PREFETCHT0(elemMem(base, off, size, d))
}

// item is one step of a block: compute a node, or accumulate a reduction.
type bitem struct {
	n      *ir.Node
	reduce bool
	store  bool // write n's value to its buffer
	key    float64
}

// emitPass emits the assembly function for ps.
func (e *emitter) emitPass(ps *plan.Pass, nt bool) *passGen {
	pg := &passGen{asm: e.a, a64: e.a.as64(), e: e, ps: ps, dom: ps.Domain, pidx: map[string]int{}, carries: map[int]reg.VecVirtual{}}
	pg.large = e.passBytes(ps) > largePass
	pg.nt = nt
	pg.chunked = chunkable(ps)
	pg.twins = twinsOf(ps)
	pg.invSlots = map[string]operand.Mem{}
	c := pg.c
	name := fmt.Sprintf("pass%dAVX2", ps.Index)
	if nt {
		name += "NT"
	}
	c.Function(name)
	// Not NOSPLIT: a pass with many live values spills past the nosplit stack limit, and the
	// stack check costs a few instructions per call, not per block.
	c.Pragma("noescape")
	// The signature is known only once the body has asked for its pointers: emit the body
	// into the function first, then set the signature (avo reads it when it compiles).
	pg.body()
	if nt {
		c.SFENCE() // order the non-temporal stores before the caller reads the outputs
	}
	c.VZEROUPPER()
	c.RET()
	sig := "func("
	for i, p := range pg.params {
		if i > 0 {
			sig += ", "
		}
		sig += p.name + " " + p.goType
	}
	c.SignatureExpr(sig + ")")
	doc := fmt.Sprintf("%s is pass %d (%s) on %d %s lanes; see pass%dGo for the same loop in Go.", name, ps.Index, describePass(ps), pg.lanes(), pg.elemGo(), ps.Index)
	if nt {
		doc += " Its full blocks store non-temporally: every stored buffer must be 32-byte aligned."
	}
	c.Doc(doc)
	return pg
}

// twinsOf pairs each logsumexp of 2·x with a logsumexp of x over the same axes in the same
// pass (ClipPPO's ESS has both): e^(2x) = (e^x)², and 2x lies in the guard range when x does
// (the float64 sums carry the squares), so the twin needs no exp and no guard of its own.
func twinsOf(ps *plan.Pass) map[int]*ir.Node {
	out := map[int]*ir.Node{}
	for _, r2 := range ps.Reduces {
		if r2.Op != ir.OpLogSumExp || r2.Args[0].Op != ir.OpMul {
			continue
		}
		m := r2.Args[0]
		for i, k := range m.Args {
			if !k.IsScalarConst() || k.Value[0] != 2 {
				continue
			}
			x := m.Args[1-i]
			for _, r1 := range ps.Reduces {
				if r1 != r2 && r1.Op == ir.OpLogSumExp && r1.Args[0] == x && fmt.Sprint(r1.Axes) == fmt.Sprint(r2.Axes) && out[r1.ID] == nil {
					out[r2.ID] = r1
				}
			}
		}
	}
	return out
}

// twinOf returns the logsumexp whose 2·x twin r1 is, or nil.
func (pg *passGen) twinOf(r1 *ir.Node) *ir.Node {
	for id, base := range pg.twins {
		if base == r1 {
			for _, r := range pg.ps.Reduces {
				if r.ID == id {
					return r
				}
			}
		}
	}
	return nil
}

// passBytes is how many bytes a pass streams: every array it loads or stores, once.
func (e *emitter) passBytes(ps *plan.Pass) int {
	size := 4
	if e.g.DType == ir.F64 {
		size = 8
	}
	n := 0
	for _, x := range ps.Loads {
		if x.Op == ir.OpConst {
			continue
		}
		k := size
		if x.Op == ir.OpInput && x.Input.Kind == ir.Bool {
			k = 1
		}
		n += k * x.Shape.Numel()
	}
	for _, x := range ps.Stores {
		n += size * x.Shape.Numel()
	}
	return n
}

// wantsNT reports whether a pass gets a non-temporal-store variant: it is large, stores at
// least one buffer, and every row of its vector axis is a whole number of blocks (so full
// blocks stay 32-byte aligned when the buffers are).
func (e *emitter) wantsNT(ps *plan.Pass) bool {
	if len(ps.Domain) == 0 || len(ps.Stores) == 0 || e.passBytes(ps) <= largePass {
		return false
	}
	return ps.Domain[len(ps.Domain)-1].Size%e.a.lanes() == 0
}

// maxChunks is how many row chunks a large chunkable pass runs as, or its first dim's
// extent if smaller. It is fixed, not the machine's core count, so results are the same bits
// on every machine; 8 chunks keep 8 cores busy and cost 7 state merges.
const maxChunks = 8

// chunkElems is the smallest pass (in elements) that runs in chunks: about 0.25 ms of a
// ClipPPO+GAE pass on one core, against a few µs to start goroutines and merge states.
const chunkElems = 1 << 16

// chunkable reports whether pass ps can run as chunks of rows of its first domain dim, each
// with its own reduction states, merged afterwards: it has an outer dim, and every reduction
// is a sum, mean, variance or logsumexp over that dim (states that merge by addition or
// Chan's update), and every buffer it stores has that dim (chunks write disjoint rows).
// Such a pass takes the chunk's rows as arguments.
func chunkable(ps *plan.Pass) bool {
	if len(ps.Domain) < 2 {
		return false
	}
	for _, n := range ps.Stores {
		if !n.Shape.Has(ps.Domain[0].Name) {
			return false
		}
	}
	for _, r := range ps.Reduces {
		switch r.Op {
		case ir.OpSum, ir.OpMean, ir.OpVar, ir.OpLogSumExp:
		default:
			return false
		}
		if !slices.Contains(r.Axes, ps.Domain[0].Name) {
			return false
		}
	}
	return true
}

// ChunkVars lists the variables of the generated AVX2 glue that hold the chunk counts of
// p's chunkable passes (tests set them to run the chunked form on small batches).
func ChunkVars(p *plan.Plan) []string {
	var out []string
	for _, ps := range p.Passes {
		if chunkable(ps) {
			out = append(out, chunkVar(ps))
		}
	}
	return out
}

// chunks is how many row chunks pass ps runs as by default: maxChunks for a large chunkable
// pass (smaller ones are not worth the goroutines and merges), else 1.
func (e *emitter) chunks(ps *plan.Pass) int {
	if !chunkable(ps) || ps.Domain.Numel() < chunkElems {
		return 1
	}
	return min(ps.Domain[0].Size, maxChunks)
}

func describePass(ps *plan.Pass) string {
	if ps.Scan {
		return "reverse scan over " + ps.Domain.String()
	}
	return "elementwise over " + ps.Domain.String()
}

// body emits the loop nest.
func (pg *passGen) body() {
	c := pg.c
	rank := len(pg.dom)
	if rank == 0 {
		pg.rem = 1
		pg.block()
		return
	}
	for d := 0; d < rank-1; d++ {
		r := pg.gp()
		if d == 0 && pg.chunked {
			c.MOVQ(pg.rowLo(), r)
		} else {
			c.XORQ(r, r)
		}
		pg.counters = append(pg.counters, r)
	}
	pg.counters = append(pg.counters, nil) // the vector axis uses jReg/jImm
	var labels []string
	for d := 0; d < rank-1; d++ {
		l := pg.newLabel(fmt.Sprintf("outer%d", d))
		c.Label(l)
		labels = append(labels, l)
	}
	pg.innerLoop()
	for d := rank - 2; d >= 0; d-- {
		c.INCQ(pg.counters[d])
		if d == 0 && pg.chunked {
			c.CMPQ(pg.counters[d], pg.rowHi())
		} else {
			c.CMPQ(pg.counters[d], operand.I32(int32(pg.dom[d].Size)))
		}
		c.JL(operand.LabelRef(labels[d]))
		if d > 0 {
			c.XORQ(pg.counters[d], pg.counters[d])
		}
	}
}

// innerLoop walks the vector axis in blocks of lanes: full blocks, then a masked tail; a
// scan pass walks it backwards, tail first.
func (pg *passGen) innerLoop() {
	c := pg.c
	E := pg.dom[len(pg.dom)-1].Size
	L := pg.lanes()
	full, rem := E/L, E%L
	for _, n := range pg.ps.Compute {
		if n.Op == ir.OpScanRev {
			z := pg.ymm()
			pg.xor(z, z, z)
			pg.carries[n.ID] = z
		}
	}
	partials := pg.hasPartials()
	pg.rowSetup()
	fullLoop := func() {
		if full == 0 {
			return
		}
		j := pg.gp()
		var k reg.GPVirtual
		if partials {
			k = pg.gp()
			c.MOVQ(operand.I32(partialBlocks), k)
		}
		l := pg.newLabel("blocks")
		if pg.ps.Scan {
			c.MOVQ(operand.I32(int32((full-1)*L)), j)
		} else {
			c.XORQ(j, j)
		}
		c.Label(l)
		pg.jReg, pg.rem = j, 0
		pg.block()
		if partials {
			skip := pg.newLabel("noflush")
			c.DECQ(k)
			c.JNZ(operand.LabelRef(skip))
			pg.offs, pg.stReg = map[string]reg.GPVirtual{}, nil
			pg.flushPartials()
			c.MOVQ(operand.I32(partialBlocks), k)
			c.Label(skip)
		}
		if pg.ps.Scan {
			c.SUBQ(operand.I32(int32(L)), j)
			c.JGE(operand.LabelRef(l))
		} else {
			c.ADDQ(operand.I32(int32(L)), j)
			c.CMPQ(j, operand.I32(int32(full*L)))
			c.JL(operand.LabelRef(l))
		}
		pg.jReg = nil
	}
	tail := func() {
		if rem == 0 {
			return
		}
		pg.jReg, pg.jImm, pg.rem = nil, full*L, rem
		pg.block()
		pg.rem = 0
	}
	if pg.ps.Scan {
		tail()
		fullLoop()
	} else {
		fullLoop()
		tail()
	}
	if partials {
		pg.offs, pg.stReg = map[string]reg.GPVirtual{}, nil
		pg.jReg, pg.jImm = nil, 0
		pg.flushPartials()
	}
}

// block emits the work for one vector of lanes.
func (pg *passGen) block() {
	pg.offs, pg.stReg = map[string]reg.GPVirtual{}, nil
	ps := pg.ps
	// Order: nodes by ID; each reduction right after its argument.
	pos := map[int]float64{}
	var items []bitem
	for _, n := range ps.Compute {
		items = append(items, bitem{n: n, key: float64(n.ID)})
		pos[n.ID] = float64(n.ID)
	}
	for _, r := range ps.Reduces {
		if pg.twins[r.ID] != nil {
			continue // accumulated with its twin
		}
		k, ok := pos[r.Args[0].ID]
		if !ok {
			k = -1
		}
		if r.Op == ir.OpLogSumExp {
			if e := pg.sharedExp(r); e != nil {
				k = pos[e.ID] // after the exp it reuses
			}
		}
		items = append(items, bitem{n: r, reduce: true, key: k + 0.5})
	}
	// Stores come last, after every load of the block: buffers that make allocates are
	// page-aligned, so an output element and the same element of an input share their low 12
	// address bits, and a load issued after such a store waits on it (4K aliasing).
	for _, n := range ps.Stores {
		items = append(items, bitem{n: n, store: true, key: math.Inf(1)})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].key < items[j].key })

	pg.regs = &regs{vals: map[int]*value{}, pinned: len(pg.carries), a: pg.asm, alloc: pg.spillSlot}
	pg.slots = nil
	// Uses of every value, by item position.
	addUse := func(n *ir.Node, k int) {
		v, ok := pg.regs.vals[n.ID]
		if !ok {
			v = &value{node: n}
			pg.regs.vals[n.ID] = v
		}
		v.uses = append(v.uses, k)
	}
	computed := map[int]bool{}
	for _, n := range ps.Compute {
		computed[n.ID] = true
	}
	for k, it := range items {
		for _, a := range pg.reads(it) {
			addUse(a, k)
		}
	}
	for _, v := range pg.regs.vals {
		if !computed[v.node.ID] {
			n := v.node
			v.reload = func() reg.VecVirtual { return pg.load(n) }
		}
	}
	for k, it := range items {
		args := pg.reads(it)
		keep := map[int]bool{}
		for _, a := range args {
			keep[a.ID] = true
		}
		pg.regs.makeRoom(k, len(args)+temps(it, pg.f64), keep)
		regsIn := make([]reg.VecVirtual, len(args))
		for i, a := range args {
			regsIn[i] = pg.regs.get(pg.regs.vals[a.ID])
		}
		switch {
		case it.store:
			pg.c.Comment(fmt.Sprintf("store v%d", it.n.ID))
			pg.store(it.n, regsIn[0])
		case it.reduce:
			pg.c.Comment(fmt.Sprintf("%s(v%d) over %v", it.n.Op, it.n.Args[0].ID, it.n.Axes))
			pg.accumulate(it.n, regsIn[0])
		default:
			pg.c.Comment(it.n.String())
			out := pg.compute(it.n, regsIn)
			if v, ok := pg.regs.vals[it.n.ID]; ok {
				v.reg = out
			}
		}
		pg.regs.release(k)
	}
}

func (pg *passGen) spillSlot() operand.Mem { return pg.c.AllocLocal(32) }

// reads lists the values an item reads at the current block (shifts and gathers read their
// operand arrays from memory instead).
func (pg *passGen) reads(it bitem) []*ir.Node {
	n := it.n
	switch {
	case it.store:
		return []*ir.Node{n}
	case it.reduce && n.Op == ir.OpLogSumExp && pg.sharedExp(n) != nil:
		return []*ir.Node{n.Args[0], pg.sharedExp(n)}
	case it.reduce:
		return []*ir.Node{n.Args[0]}
	case n.Op == ir.OpShiftNext:
		return nil
	case n.Op == ir.OpGather:
		return []*ir.Node{n.Args[1]}
	}
	return foldedArgs(n)
}

// temps estimates the vector registers an item's expansion uses besides its arguments.
func temps(it bitem, f64 bool) int {
	if it.store {
		return 1 // a tail's mask
	}
	if it.reduce {
		switch it.n.Op {
		case ir.OpLogSumExp:
			return 13
		case ir.OpVar, ir.OpArgMax:
			return 9
		}
		return 6
	}
	switch it.n.Op {
	case ir.OpExp:
		return 8
	case ir.OpLog:
		return 10
	case ir.OpLog1p:
		return 13
	case ir.OpScanRev:
		return 6
	case ir.OpMin, ir.OpMax, ir.OpShiftNext, ir.OpGather:
		return 4
	}
	return 2
}
