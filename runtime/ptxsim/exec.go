package ptxsim

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

const sharedTag = uint64(1) << 60 // addresses of shared memory carry this bit

// thread is one simulated thread.
type thread struct {
	pc      int
	regs    []uint64
	preds   []bool
	tid     int
	done    bool
	waiting bool // stopped at a bar.sync or shfl (at pc)

	// Taint tracking (a partial simulation): a register or predicate is tainted when its
	// value depends on memory no simulated thread wrote (a block or an iteration the part
	// skips), ctrl when the thread branched on a tainted predicate.
	rt    []bool
	pt    []bool
	ctrl  bool
	iters int // batch-loop iterations done (back edges to a $L_loop label)
}

// Stats counts what a launch executed.
type Stats struct {
	Instructions int64
	Barriers     int64
	Shuffles     int64
	Blocks       int64 // thread blocks run
	Cut          int64 // threads stopped at the part's iteration limit
}

// maxSteps bounds one thread's instructions in a launch (a runaway loop is an error).
const maxSteps = 1 << 30

// Launch runs kernel name over grid×block threads (1-D) with pointer arguments args.
func (d *Device) Launch(m *Module, name string, grid, block int, args []uint64) (Stats, error) {
	return d.launch(m, name, grid, block, args, nil, 0, false, 0)
}

// launch runs the listed blocks of a launch (all when blocks is nil), each thread stopping
// after maxIter batch-loop iterations (0: no limit), tracking taint when track is set, and
// stops with ErrBudget after limit instructions (0: no limit).
func (d *Device) launch(m *Module, name string, grid, block int, args []uint64, blocks []int, maxIter int, track bool, limit int64) (Stats, error) {
	var st Stats
	k, ok := m.Kernels[name]
	if !ok {
		return st, fmt.Errorf("no kernel %q", name)
	}
	if len(args) != len(k.Params) {
		return st, fmt.Errorf("%s takes %d arguments, got %d", name, len(k.Params), len(args))
	}
	if block%32 != 0 {
		return st, fmt.Errorf("%s: block of %d threads is not whole warps", name, block)
	}
	if k.ReqNtid != 0 && block != k.ReqNtid {
		return st, fmt.Errorf("%s: launched with a block of %d threads, but its .reqntid is %d (a GPU fails the launch)", name, block, k.ReqNtid)
	}
	if blocks == nil {
		blocks = make([]int, grid)
		for b := range blocks {
			blocks[b] = b
		}
	}
	shOff := map[string]uint64{}
	shSize := 0
	for _, s := range sortedKeys(k.Shared) {
		shOff[s] = uint64(shSize)
		shSize += (k.Shared[s] + 7) &^ 7
	}
	globalW := writers{} // the words of global memory this launch wrote: the writer's global id
	for _, b := range blocks {
		st.Blocks++
		shared := make([]byte, shSize)
		ts := make([]*thread, block)
		for i := range ts {
			ts[i] = &thread{regs: make([]uint64, k.nregs), preds: make([]bool, k.npreds), tid: i}
			if track {
				ts[i].rt, ts[i].pt = make([]bool, k.nregs), make([]bool, k.npreds)
				for r := range ts[i].rt {
					ts[i].rt[r] = true // never written: garbage
				}
			}
		}
		e := &exec{d: d, m: m, k: k, args: args, block: b, ntid: block, shared: shared, shOff: shOff, stats: &st,
			words: make([]wordUse, shSize/4), globalW: globalW, maxIter: maxIter, track: track, limit: limit}
		if track {
			e.sharedValid = make([]byte, shSize)
		}
		for {
			progress := false
			for _, t := range ts {
				if t.done || t.waiting {
					continue
				}
				if err := e.run(t); err != nil {
					if err == ErrBudget {
						return st, err
					}
					return st, fmt.Errorf("%s block %d thread %d: %w", name, b, t.tid, err)
				}
				progress = true
			}
			// Warps whose every lane waits at the same shuffle exchange.
			for w := 0; w < block; w += 32 {
				lanes := ts[w : w+32]
				if !lanes[0].waiting || lanes[0].done || k.Insts[lanes[0].pc].Op[0] != "shfl" {
					continue
				}
				for _, t := range lanes {
					if t.done || !t.waiting || t.pc != lanes[0].pc {
						return st, fmt.Errorf("%s block %d: warp %d split at the shuffle on line %d", name, b, w/32, k.Insts[lanes[0].pc].Line)
					}
				}
				e.shuffle(lanes)
				progress = true
			}
			// A barrier releases when every live thread waits at it.
			var live []*thread
			for _, t := range ts {
				if !t.done {
					live = append(live, t)
				}
			}
			if len(live) == 0 {
				break
			}
			if live[0].waiting && k.Insts[live[0].pc].Op[0] == "bar" {
				all := true
				for _, t := range live {
					all = all && t.waiting && t.pc == live[0].pc
				}
				if all {
					if len(live) != block {
						return st, fmt.Errorf("%s block %d: bar.sync on line %d reached after some threads returned", name, b, k.Insts[live[0].pc].Line)
					}
					for _, t := range live {
						t.waiting = false
						t.pc++
					}
					e.epoch++
					st.Barriers++
					progress = true
				}
			}
			if !progress {
				return st, fmt.Errorf("%s block %d: threads wait at different synchronisation points (deadlock)", name, b)
			}
		}
	}
	return st, nil
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// exec is the state shared by a block's threads.
type exec struct {
	d      *Device
	m      *Module
	k      *Kernel
	args   []uint64
	block  int
	ntid   int
	shared []byte
	shOff  map[string]uint64
	stats  *Stats

	// Race detection. Shared memory: per 4-byte word, its last writer and reader in the
	// current barrier interval (epoch); two threads touching a word between barriers, one of
	// them writing, is a race. Global memory: a word written by one thread and read or
	// written by another in the same launch is a race (a launch has no grid-wide barrier).
	epoch   int32
	words   []wordUse
	globalW writers
	ref     memRef // the memory the current instruction accessed

	maxIter     int    // a partial launch: threads stop after this many batch-loop iterations
	limit       int64  // stop with ErrBudget after this many instructions (0: no limit)
	track       bool   // taint tracking
	sharedValid []byte // taint of shared memory: 1 where written with an untainted value
}

// wordUse is how one word of shared memory was used in the current epoch (epoch fields are
// epoch+1, so the zero value means unused).
type wordUse struct {
	wTid, wEpoch int32
	rTid, rEpoch int32
	rMany        bool // read by two or more threads this epoch
}

// raceShared records a shared-memory access of n bytes at off by thread t.
func (e *exec) raceShared(t *thread, off uint64, n int, write bool) error {
	cur, tid := e.epoch+1, int32(t.tid)
	for w := off / 4; w < (off+uint64(n)+3)/4; w++ {
		u := &e.words[w]
		wrote := u.wEpoch == cur && u.wTid != tid
		read := u.rEpoch == cur && (u.rMany || u.rTid != tid)
		switch {
		case wrote:
			return fmt.Errorf("shared-memory race: word %d written by thread %d and accessed by thread %d with no bar.sync between", w, u.wTid, tid)
		case write && read:
			return fmt.Errorf("shared-memory race: word %d read by another thread and written by thread %d with no bar.sync between", w, tid)
		case write:
			u.wTid, u.wEpoch = tid, cur
		case u.rEpoch == cur && u.rTid != tid:
			u.rMany = true
		default:
			u.rTid, u.rEpoch, u.rMany = tid, cur, false
		}
	}
	return nil
}

func (e *exec) shuffle(lanes []*thread) {
	in := e.k.Insts[lanes[0].pc]
	src := make([]uint32, 32)
	var taint [32]bool
	for i, t := range lanes {
		src[i] = uint32(e.val(t, in.Args[1]))
		if e.track {
			taint[i] = e.srcTaint(t, in.Args[1]) || t.ctrl
		}
	}
	delta := int(in.Args[2].Int)
	clamp := int(in.Args[3].Int)
	for i, t := range lanes {
		j := i + delta
		ok := j <= clamp
		v := src[i]
		if ok {
			v = src[j]
		}
		t.regs[in.Args[0].Reg] = uint64(v)
		if in.Args[0].Pred >= 0 {
			t.preds[in.Args[0].Pred] = ok
		}
		if e.track {
			tt := taint[i]
			if ok {
				tt = taint[i+delta]
			}
			t.rt[in.Args[0].Reg] = tt || t.ctrl
			if in.Args[0].Pred >= 0 {
				t.pt[in.Args[0].Pred] = t.ctrl
			}
		}
		t.waiting = false
		t.pc++
	}
	e.stats.Shuffles++
}

// run executes t until it returns or stops at a synchronisation point.
func (e *exec) run(t *thread) error {
	for steps := 0; steps < maxSteps; steps++ {
		if t.pc >= len(e.k.Insts) {
			return fmt.Errorf("ran off the end of the kernel")
		}
		in := e.k.Insts[t.pc]
		e.stats.Instructions++
		if e.limit > 0 && e.stats.Instructions > e.limit {
			return ErrBudget
		}
		guardTaint := e.track && in.Guard >= 0 && t.pt[in.Guard]
		if in.Guard >= 0 && t.preds[in.Guard] == in.GuardNeg {
			if guardTaint {
				if err := e.taintSkipped(t, in); err != nil {
					return fmt.Errorf("line %d (%s): %w", in.Line, in.Text, err)
				}
			}
			t.pc++
			continue
		}
		if in.fast != nil && !noFast {
			in.fast(t)
			if e.track {
				e.taintGeneric(t, in, guardTaint)
			}
			t.pc++
			continue
		}
		switch in.Op[0] {
		case "ret":
			t.done = true
			return nil
		case "bar", "shfl":
			t.waiting = true
			return nil
		case "red":
			if err := e.red(t, in, guardTaint); err != nil {
				return fmt.Errorf("line %d (%s): %w", in.Line, in.Text, err)
			}
			t.pc++
			continue
		case "bra":
			if guardTaint {
				t.ctrl = true
			}
			to := e.k.Labels[in.Args[0].Sym]
			if e.maxIter > 0 && to <= t.pc && e.k.batchLoop[in.Args[0].Sym] {
				if t.iters++; t.iters >= e.maxIter {
					t.done = true
					e.stats.Cut++
					return nil
				}
			}
			t.pc = to
			continue
		}
		if err := e.step(t, in); err != nil {
			return fmt.Errorf("line %d (%s): %w", in.Line, in.Text, err)
		}
		if e.track {
			e.taint(t, in, guardTaint)
		}
		t.pc++
	}
	return fmt.Errorf("more than %d instructions: runaway loop", maxSteps)
}

// val reads an operand as raw bits (a register's, an immediate's, a special register's).
func (e *exec) val(t *thread, o Operand) uint64 {
	switch o.Kind {
	case opReg:
		return t.regs[o.Reg]
	case opImm:
		return o.Bits
	case opSpecial:
		switch o.Sym {
		case "%tid.x":
			return uint64(t.tid)
		case "%ctaid.x":
			return uint64(e.block)
		case "%ntid.x":
			return uint64(e.ntid)
		}
	case opSym:
		if off, ok := e.shOff[o.Sym]; ok {
			return sharedTag | off
		}
		if a, ok := e.d.syms[o.Sym]; ok {
			return a
		}
	}
	panic(fmt.Sprintf("ptxsim: cannot read operand %+v", o))
}

func (e *exec) f32(t *thread, o Operand) float32 {
	if o.Kind == opImm {
		return float32(immFloat(o, false))
	}
	return math.Float32frombits(uint32(e.val(t, o)))
}

func (e *exec) f64(t *thread, o Operand) float64 {
	if o.Kind == opImm {
		return immFloat(o, true)
	}
	return math.Float64frombits(e.val(t, o))
}

// address is the address an address operand refers to.
func (e *exec) address(t *thread, o Operand) uint64 {
	var addr uint64
	if o.Reg >= 0 && o.Sym == "" {
		addr = t.regs[o.Reg]
	} else {
		addr = e.val(t, Operand{Kind: opSym, Sym: o.Sym})
	}
	return addr + uint64(o.Int)
}

// memRef is the memory an instruction accessed (for taint tracking).
type memRef struct {
	shared bool
	buf    *devBuf
	off, n int
}

// mem returns the bytes an address operand refers to, and records them in e.ref.
func (e *exec) mem(t *thread, o Operand, space string, n int, write bool) ([]byte, error) {
	addr := e.address(t, o)
	if space == "shared" {
		if addr&sharedTag == 0 {
			return nil, fmt.Errorf("shared access to a non-shared address %#x", addr)
		}
		off := addr &^ sharedTag
		if off+uint64(n) > uint64(len(e.shared)) {
			return nil, fmt.Errorf("out-of-bounds shared access at %d", off)
		}
		if err := e.raceShared(t, off, n, write); err != nil {
			return nil, err
		}
		e.ref = memRef{shared: true, off: int(off), n: n}
		return e.shared[off : off+uint64(n)], nil
	}
	if addr&sharedTag != 0 {
		return nil, fmt.Errorf("global access to a shared address")
	}
	b, off, err := e.d.find(addr, n)
	if err != nil {
		return nil, err
	}
	e.ref = memRef{buf: b, off: off, n: n}
	return b.at(off, n), e.globalW.check(addr, n, e.block*e.ntid+t.tid, write)
}

// srcTaint reports whether operand o's value is tainted.
func (e *exec) srcTaint(t *thread, o Operand) bool {
	switch o.Kind {
	case opReg:
		return t.rt[o.Reg]
	case opPred:
		return t.pt[o.Pred]
	case opVec:
		for _, r := range o.Regs {
			if t.rt[r] {
				return true
			}
		}
	case opMem:
		return o.Reg >= 0 && o.Sym == "" && t.rt[o.Reg]
	}
	return false
}

// memTaint reports whether the memory e.ref holds any tainted byte.
func (e *exec) memTaint() bool {
	r := e.ref
	var v []byte
	switch {
	case r.shared:
		v = e.sharedValid[r.off : r.off+r.n]
	case r.buf.input:
		return false
	default:
		if v = r.buf.validAt(r.off, r.n, false); v == nil {
			return true
		}
	}
	for _, x := range v {
		if x == 0 {
			return true
		}
	}
	return false
}

// setMemTaint marks the memory e.ref holds tainted or valid.
func (e *exec) setMemTaint(tainted bool) {
	r := e.ref
	var v []byte
	switch {
	case r.shared:
		v = e.sharedValid[r.off : r.off+r.n]
	case r.buf.input && !tainted:
		return
	case r.buf.input: // a kernel overwrote an input with a tainted value: track it from now on
		b := r.buf
		b.input = false
		b.valid = make([][]byte, (b.size+pageSize-1)>>pageShift)
		for p := range b.valid {
			b.valid[p] = make([]byte, min(pageSize, b.size-p<<pageShift))
			for i := range b.valid[p] {
				b.valid[p][i] = 1
			}
		}
		v = b.validAt(r.off, r.n, true)
	default:
		v = r.buf.validAt(r.off, r.n, true)
	}
	x := byte(1)
	if tainted {
		x = 0
	}
	for i := range v {
		v[i] = x
	}
}

// taint propagates taint through an instruction step just executed.
func (e *exec) taint(t *thread, in *Inst, guard bool) {
	a := in.Args
	ctl := t.ctrl || guard
	switch in.Op[0] {
	case "st":
		e.setMemTaint(ctl || e.srcTaint(t, a[0]) || e.srcTaint(t, a[1]))
		return
	case "ld":
		if in.Op[1] == "param" {
			t.rt[a[0].Reg] = ctl
			return
		}
		t.rt[a[0].Reg] = ctl || e.srcTaint(t, a[1]) || e.memTaint()
		return
	}
	e.taintGeneric(t, in, guard)
}

// taintGeneric is the rule of every instruction but memory accesses and shuffles: what it
// writes is tainted when anything it reads is (or the thread's control is).
func (e *exec) taintGeneric(t *thread, in *Inst, guard bool) {
	ti := &in.ti
	tainted := t.ctrl || guard
	for _, r := range ti.srcRegs {
		tainted = tainted || t.rt[r]
	}
	for _, p := range ti.srcPreds {
		tainted = tainted || t.pt[p]
	}
	for _, r := range ti.dstRegs {
		t.rt[r] = tainted
	}
	for _, p := range ti.dstPreds {
		t.pt[p] = tainted
	}
}

// taintSkipped taints what an instruction skipped on a tainted guard would have written.
func (e *exec) taintSkipped(t *thread, in *Inst) error {
	a := in.Args
	switch in.Op[0] {
	case "bra":
		t.ctrl = true
	case "st":
		n := sizes[in.Op[len(in.Op)-1]]
		addr := e.address(t, a[0])
		if in.Op[1] == "shared" {
			e.ref = memRef{shared: true, off: int(addr &^ sharedTag), n: n}
			if e.ref.off+n > len(e.shared) {
				return fmt.Errorf("out-of-bounds shared access at %d", e.ref.off)
			}
		} else {
			b, off, err := e.d.find(addr, n)
			if err != nil {
				return err
			}
			e.ref = memRef{buf: b, off: off, n: n}
		}
		e.setMemTaint(true)
	default:
		if len(a) > 0 {
			switch a[0].Kind {
			case opReg:
				t.rt[a[0].Reg] = true
			case opPred:
				t.pt[a[0].Pred] = true
			case opVec:
				for _, r := range a[0].Regs {
					t.rt[r] = true
				}
			}
		}
	}
	return nil
}

var sizes = map[string]int{"u8": 1, "f32": 4, "f64": 8, "s64": 8, "u64": 8, "b64": 8, "u32": 4, "b32": 4}

func (e *exec) step(t *thread, in *Inst) error {
	op, a := in.Op, in.Args
	typ := op[len(op)-1]
	set := func(v uint64) { t.regs[a[0].Reg] = v }
	setF32 := func(v float32) { set(uint64(math.Float32bits(v))) }
	setF64 := func(v float64) { set(math.Float64bits(v)) }
	switch op[0] {
	case "ld":
		if op[1] == "param" {
			for i, p := range e.k.Params {
				if p == a[1].Sym {
					set(e.args[i])
					return nil
				}
			}
			return fmt.Errorf("no parameter %s", a[1].Sym)
		}
		n, ok := sizes[typ]
		if !ok {
			return fmt.Errorf("unsupported type %s", typ)
		}
		b, err := e.mem(t, a[1], op[1], n, false)
		if err != nil {
			return err
		}
		switch n {
		case 1:
			set(uint64(b[0]))
		case 4:
			set(uint64(binary.LittleEndian.Uint32(b)))
		default:
			set(binary.LittleEndian.Uint64(b))
		}
	case "st":
		n, ok := sizes[typ]
		if !ok {
			return fmt.Errorf("unsupported type %s", typ)
		}
		b, err := e.mem(t, a[0], op[1], n, true)
		if err != nil {
			return err
		}
		v := e.val(t, a[1])
		switch n {
		case 1:
			b[0] = byte(v)
		case 4:
			binary.LittleEndian.PutUint32(b, uint32(v))
		default:
			binary.LittleEndian.PutUint64(b, v)
		}
	case "cvta":
		set(e.val(t, a[1]))
	case "mov":
		switch {
		case a[0].Kind == opVec: // {lo, hi} = b64
			v := e.val(t, a[1])
			t.regs[a[0].Regs[0]], t.regs[a[0].Regs[1]] = uint64(uint32(v)), v>>32
		case a[1].Kind == opVec:
			set(uint64(uint32(t.regs[a[1].Regs[0]])) | t.regs[a[1].Regs[1]]<<32)
		case a[1].Kind == opImm && a[1].Float:
			set(a[1].Bits)
		case typ == "u32" || typ == "b32":
			set(uint64(uint32(e.val(t, a[1]))))
		default:
			set(e.val(t, a[1]))
		}
	case "mad":
		if op[1] == "wide" {
			set(uint64(uint32(e.val(t, a[1])))*uint64(uint32(e.val(t, a[2]))) + e.val(t, a[3]))
		} else {
			set(uint64(uint32(int32(e.val(t, a[1]))*int32(e.val(t, a[2])) + int32(e.val(t, a[3])))))
		}
	case "setp":
		p, err := e.compare(t, op[1], typ, a[1], a[2])
		if err != nil {
			return err
		}
		t.preds[a[0].Pred] = p
	case "selp":
		p := t.preds[a[3].Pred] != a[3].Negated
		src := a[2]
		if p {
			src = a[1]
		}
		v := e.val(t, src)
		if src.Kind == opImm && !src.Float && (typ == "f32" || typ == "f64") {
			return fmt.Errorf("integer immediate for %s", typ)
		}
		if typ == "s32" || typ == "b32" || typ == "f32" {
			v = uint64(uint32(v))
		}
		set(v)
	case "and", "or", "xor", "not":
		if typ == "pred" {
			x := t.preds[a[1].Pred] != a[1].Negated
			var r bool
			switch op[0] {
			case "not":
				r = !x
			case "and":
				r = x && (t.preds[a[2].Pred] != a[2].Negated)
			case "or":
				r = x || (t.preds[a[2].Pred] != a[2].Negated)
			default:
				r = x != (t.preds[a[2].Pred] != a[2].Negated)
			}
			t.preds[a[0].Pred] = r
			return nil
		}
		x, y := e.val(t, a[1]), e.val(t, a[2])
		var r uint64
		switch op[0] {
		case "and":
			r = x & y
		case "or":
			r = x | y
		default:
			r = x ^ y
		}
		if typ == "b32" {
			r = uint64(uint32(r))
		}
		set(r)
	case "shl", "shr":
		x, n := e.val(t, a[1]), uint(e.val(t, a[2]))
		switch typ {
		case "b32":
			set(uint64(uint32(x) << n))
		case "u32":
			set(uint64(uint32(x) >> n))
		case "b64":
			set(x << n)
		case "u64":
			set(x >> n)
		default:
			return fmt.Errorf("unsupported shift type")
		}
	case "add", "sub", "mul", "div", "rem", "min", "max":
		return e.arith(t, in)
	case "neg":
		if typ == "f32" {
			setF32(-e.f32(t, a[1]))
		} else {
			setF64(-e.f64(t, a[1]))
		}
	case "abs":
		if typ == "f32" {
			setF32(float32(math.Abs(float64(e.f32(t, a[1])))))
		} else {
			setF64(math.Abs(e.f64(t, a[1])))
		}
	case "sqrt":
		if typ == "f32" {
			setF32(float32(math.Sqrt(float64(e.f32(t, a[1])))))
		} else {
			setF64(math.Sqrt(e.f64(t, a[1])))
		}
	case "fma":
		if typ == "f32" {
			setF32(fma32(e.f32(t, a[1]), e.f32(t, a[2]), e.f32(t, a[3])))
		} else {
			setF64(math.FMA(e.f64(t, a[1]), e.f64(t, a[2]), e.f64(t, a[3])))
		}
	case "cvt":
		return e.cvt(t, in)
	default:
		return fmt.Errorf("unsupported instruction %s", in.Text)
	}
	return nil
}

func (e *exec) compare(t *thread, cmp, typ string, x, y Operand) (bool, error) {
	var r, ok bool
	switch typ {
	case "f32", "f64":
		var a, b float64
		if typ == "f32" {
			a, b = float64(e.f32(t, x)), float64(e.f32(t, y))
		} else {
			a, b = e.f64(t, x), e.f64(t, y)
		}
		unordered := a != a || b != b
		switch cmp {
		case "nan":
			return unordered, nil
		case "neu": // unordered not-equal: true on NaN
			return a != b, nil
		}
		r, ok = ordered(cmp, a, b)
		r = r && !unordered // PTX's ordered comparisons (ne included) are false on NaN
	case "u32":
		r, ok = ordered(cmp, uint32(e.val(t, x)), uint32(e.val(t, y)))
	case "s32":
		r, ok = ordered(cmp, int32(e.val(t, x)), int32(e.val(t, y)))
	}
	if !ok {
		return false, fmt.Errorf("unsupported comparison setp.%s.%s", cmp, typ)
	}
	return r, nil
}

// ordered evaluates setp's ordered comparisons lt, le, gt, ge, eq, ne.
func ordered[T int32 | uint32 | float64](cmp string, a, b T) (result, ok bool) {
	switch cmp {
	case "lt":
		return a < b, true
	case "le":
		return a <= b, true
	case "gt":
		return a > b, true
	case "ge":
		return a >= b, true
	case "eq":
		return a == b, true
	case "ne":
		return a != b, true
	}
	return false, false
}

func (e *exec) arith(t *thread, in *Inst) error {
	op, a := in.Op, in.Args
	typ := op[len(op)-1]
	nan := len(op) > 2 && op[1] == "NaN"
	switch typ {
	case "s32", "u32":
		x, y := int64(int32(e.val(t, a[1]))), int64(int32(e.val(t, a[2])))
		if typ == "u32" {
			x, y = int64(uint32(e.val(t, a[1]))), int64(uint32(e.val(t, a[2])))
		}
		var r int64
		switch op[0] {
		case "add":
			r = x + y
		case "sub":
			r = x - y
		case "mul":
			r = x * y
		case "div":
			r = x / y
		case "rem":
			r = x % y
		case "min":
			r = min(x, y)
		case "max":
			r = max(x, y)
		}
		t.regs[a[0].Reg] = uint64(uint32(r))
	case "s64":
		x, y := int64(e.val(t, a[1])), int64(e.val(t, a[2]))
		var r int64
		switch op[0] {
		case "add":
			r = x + y
		case "sub":
			r = x - y
		default:
			return fmt.Errorf("unsupported %s.s64", op[0])
		}
		t.regs[a[0].Reg] = uint64(r)
	case "f32":
		x, y := float64(e.f32(t, a[1])), float64(e.f32(t, a[2]))
		r, err := farith(op[0], x, y, nan)
		if err != nil {
			return err
		}
		t.regs[a[0].Reg] = uint64(math.Float32bits(float32(r)))
	case "f64":
		x, y := e.f64(t, a[1]), e.f64(t, a[2])
		r, err := farith(op[0], x, y, nan)
		if err != nil {
			return err
		}
		t.regs[a[0].Reg] = math.Float64bits(r)
	default:
		return fmt.Errorf("unsupported type %s", typ)
	}
	return nil
}

// farith is one float op in float64 (a float32 result is rounded once by the caller). min and
// max follow PTX: with .NaN a NaN operand gives NaN; without, the other operand (IEEE
// minNum); −0 orders below +0.
func farith(op string, x, y float64, nanProp bool) (float64, error) {
	switch op {
	case "add":
		return x + y, nil
	case "sub":
		return x - y, nil
	case "mul":
		return x * y, nil
	case "div":
		return x / y, nil
	case "min", "max":
		if x != x || y != y {
			switch {
			case nanProp, x != x && y != y:
				return math.NaN(), nil
			case x != x:
				return y, nil
			}
			return x, nil
		}
		if op == "min" {
			return min(x, y), nil
		}
		return max(x, y), nil
	}
	return 0, fmt.Errorf("unsupported float op %s", op)
}

func (e *exec) cvt(t *thread, in *Inst) error {
	op, a := in.Op, in.Args
	// cvt{.rnd}.dtype.stype
	rnd := ""
	parts := op[1:]
	if len(parts) == 3 {
		rnd, parts = parts[0], parts[1:]
	}
	dst, src := parts[0], parts[1]
	var x float64
	var xi int64
	isInt := false
	v := e.val(t, a[1])
	switch src {
	case "f32":
		x = float64(math.Float32frombits(uint32(v)))
	case "f64":
		x = math.Float64frombits(v)
	case "s32":
		xi, isInt = int64(int32(v)), true
	case "u32":
		xi, isInt = int64(uint32(v)), true
	case "u16":
		xi, isInt = int64(uint16(v)), true
	case "s64":
		xi, isInt = int64(v), true
	default:
		return fmt.Errorf("unsupported cvt source %s", src)
	}
	if isInt {
		x = float64(xi)
	}
	round := func(f float64) float64 {
		switch rnd {
		case "rni":
			return math.RoundToEven(f)
		case "rzi":
			return math.Trunc(f)
		}
		return f
	}
	switch dst {
	case "f32":
		if isInt && src == "s64" {
			t.regs[a[0].Reg] = uint64(math.Float32bits(float32(xi))) // one rounding
			return nil
		}
		t.regs[a[0].Reg] = uint64(math.Float32bits(float32(round(x))))
	case "f64":
		t.regs[a[0].Reg] = math.Float64bits(round(x))
	case "s32":
		if isInt {
			t.regs[a[0].Reg] = uint64(uint32(int32(xi)))
			return nil
		}
		f := round(x)
		var r int32
		switch {
		case f != f && src == "f64": // PTX ISA, cvt, Integer Notes: NaN → MININT from an .f64 source
			r = math.MinInt32
		case f != f:
			r = 0
		case f >= math.MaxInt32:
			r = math.MaxInt32
		case f <= math.MinInt32:
			r = math.MinInt32
		default:
			r = int32(f)
		}
		t.regs[a[0].Reg] = uint64(uint32(r))
	case "s64":
		if !isInt {
			return fmt.Errorf("unsupported cvt from %s to s64", src)
		}
		t.regs[a[0].Reg] = uint64(xi)
	default:
		return fmt.Errorf("unsupported cvt destination %s", dst)
	}
	return nil
}

// fma32 is a·b + c rounded once to float32: the product is exact in float64; the sum's
// rounding error is recovered (TwoSum) to break the one case where rounding the float64 sum
// to float32 would differ from rounding the exact sum: a float64 sum exactly halfway between
// two float32s.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	cc := float64(c)
	s := p + cc
	bv := s - p
	err := (p - (s - bv)) + (cc - bv)
	r := float32(s)
	if err == 0 || float64(r) == s || math.IsInf(s, 0) || s != s {
		return r
	}
	lo, hi := r, r
	if float64(r) < s {
		hi = math.Nextafter32(r, float32(math.Inf(1)))
	} else {
		lo = math.Nextafter32(r, float32(math.Inf(-1)))
	}
	// Past the largest float32 the next value up is 2^128 (an overflow to ±Inf), not Inf
	// itself: the midpoint that decides is MaxFloat32 + 2^103.
	loF, hiF := float64(lo), float64(hi)
	if math.IsInf(hiF, 1) {
		hiF = 0x1p128
	}
	if math.IsInf(loF, -1) {
		loF = -0x1p128
	}
	if mid := (loF + hiF) / 2; s == mid {
		if err > 0 {
			return hi
		}
		return lo
	}
	return r
}
