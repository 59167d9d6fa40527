package ptxsim

import "math"

// The hot instructions — float and integer arithmetic, moves, comparisons and selects on
// registers and immediates — are compiled once, when the module is parsed, into closures that
// read their operands directly (exec.step decodes the opcode's strings and operand kinds on
// every execution). Each closure computes exactly what step does for the instruction;
// TestFastPathSameBits runs every example package's kernels both ways and compares every
// output bit. Anything else (memory, conversions, shuffles, barriers, branches) stays with
// step.

// fastInst is a compiled instruction: it sets its destination register or predicate.
type fastInst func(t *thread)

// noFast disables the compiled instructions (tests compare both paths).
var noFast bool

// getBits reads an operand's raw bits (a register or an integer or float immediate).
func getBits(o Operand) (func(t *thread) uint64, bool) {
	switch o.Kind {
	case opReg:
		r := o.Reg
		return func(t *thread) uint64 { return t.regs[r] }, true
	case opImm:
		b := o.Bits
		return func(*thread) uint64 { return b }, true
	}
	return nil, false
}

// getFloat reads an operand as a float64 (exec.f64), or with f32 as a float32 widened to
// float64 (exec.f32).
func getFloat(o Operand, f32 bool) (func(t *thread) float64, bool) {
	switch {
	case o.Kind == opReg && f32:
		r := o.Reg
		return func(t *thread) float64 { return float64(math.Float32frombits(uint32(t.regs[r]))) }, true
	case o.Kind == opReg:
		r := o.Reg
		return func(t *thread) float64 { return math.Float64frombits(t.regs[r]) }, true
	case o.Kind == opImm && f32:
		v := float64(float32(immFloat(o, false)))
		return func(*thread) float64 { return v }, true
	case o.Kind == opImm:
		v := immFloat(o, true)
		return func(*thread) float64 { return v }, true
	}
	return nil, false
}

func getF64(o Operand) (func(t *thread) float64, bool) { return getFloat(o, false) }
func getF32(o Operand) (func(t *thread) float64, bool) { return getFloat(o, true) }

// compileFast returns the compiled form of in, or nil when step must run it.
func compileFast(in *Inst) fastInst {
	op, a := in.Op, in.Args
	if len(a) == 0 || a[0].Kind != opReg && a[0].Kind != opPred {
		return nil
	}
	typ := op[len(op)-1]
	d := a[0].Reg
	switch op[0] {
	case "add", "sub", "mul", "div", "min", "max":
		if len(a) != 3 {
			return nil
		}
		nan := len(op) > 2 && op[1] == "NaN"
		switch typ {
		case "f32", "f64":
			get := getF64
			if typ == "f32" {
				get = getF32
			}
			x, ok1 := get(a[1])
			y, ok2 := get(a[2])
			if !ok1 || !ok2 {
				return nil
			}
			f32 := typ == "f32"
			store := func(t *thread, r float64) {
				if f32 {
					t.regs[d] = uint64(math.Float32bits(float32(r)))
				} else {
					t.regs[d] = math.Float64bits(r)
				}
			}
			switch op[0] {
			case "add":
				return func(t *thread) { store(t, x(t)+y(t)) }
			case "sub":
				return func(t *thread) { store(t, x(t)-y(t)) }
			case "mul":
				return func(t *thread) { store(t, x(t)*y(t)) }
			case "div":
				return func(t *thread) { store(t, x(t)/y(t)) }
			}
			name := op[0]
			return func(t *thread) {
				r, _ := farith(name, x(t), y(t), nan)
				store(t, r)
			}
		case "s32", "u32":
			x, ok1 := getBits(a[1])
			y, ok2 := getBits(a[2])
			if !ok1 || !ok2 || op[0] == "div" {
				return nil
			}
			signed := typ == "s32"
			ext := func(v uint64) int64 {
				if signed {
					return int64(int32(v))
				}
				return int64(uint32(v))
			}
			var f func(x, y int64) int64
			switch op[0] {
			case "add":
				f = func(x, y int64) int64 { return x + y }
			case "sub":
				f = func(x, y int64) int64 { return x - y }
			case "mul":
				f = func(x, y int64) int64 { return x * y }
			case "min":
				f = func(x, y int64) int64 { return min(x, y) }
			case "max":
				f = func(x, y int64) int64 { return max(x, y) }
			}
			return func(t *thread) { t.regs[d] = uint64(uint32(f(ext(x(t)), ext(y(t))))) }
		}
	case "fma":
		if len(a) != 4 {
			return nil
		}
		if typ == "f64" {
			x, ok1 := getF64(a[1])
			y, ok2 := getF64(a[2])
			z, ok3 := getF64(a[3])
			if !ok1 || !ok2 || !ok3 {
				return nil
			}
			return func(t *thread) { t.regs[d] = math.Float64bits(math.FMA(x(t), y(t), z(t))) }
		}
		if typ == "f32" {
			x, ok1 := getF32(a[1])
			y, ok2 := getF32(a[2])
			z, ok3 := getF32(a[3])
			if !ok1 || !ok2 || !ok3 {
				return nil
			}
			return func(t *thread) {
				t.regs[d] = uint64(math.Float32bits(fma32(float32(x(t)), float32(y(t)), float32(z(t)))))
			}
		}
	case "mov":
		if len(a) != 2 || a[0].Kind != opReg {
			return nil
		}
		x, ok := getBits(a[1])
		if !ok {
			return nil
		}
		if (typ == "u32" || typ == "b32") && !(a[1].Kind == opImm && a[1].Float) {
			return func(t *thread) { t.regs[d] = uint64(uint32(x(t))) }
		}
		return func(t *thread) { t.regs[d] = x(t) }
	case "mad":
		if len(a) != 4 || op[1] != "lo" || typ != "s32" {
			return nil
		}
		x, ok1 := getBits(a[1])
		y, ok2 := getBits(a[2])
		z, ok3 := getBits(a[3])
		if !ok1 || !ok2 || !ok3 {
			return nil
		}
		return func(t *thread) { t.regs[d] = uint64(uint32(int32(x(t))*int32(y(t)) + int32(z(t)))) }
	case "setp":
		if len(a) != 3 || a[0].Kind != opPred {
			return nil
		}
		p := a[0].Pred
		cmp := op[1]
		switch typ {
		case "f32", "f64":
			get := getF64
			if typ == "f32" {
				get = getF32
			}
			x, ok1 := get(a[1])
			y, ok2 := get(a[2])
			if !ok1 || !ok2 {
				return nil
			}
			switch cmp {
			case "nan":
				return func(t *thread) { xv, yv := x(t), y(t); t.preds[p] = xv != xv || yv != yv }
			case "neu":
				return func(t *thread) { t.preds[p] = x(t) != y(t) }
			}
			if _, ok := ordered(cmp, 0.0, 0.0); !ok {
				return nil
			}
			return func(t *thread) {
				xv, yv := x(t), y(t)
				r, _ := ordered(cmp, xv, yv)
				t.preds[p] = r && xv == xv && yv == yv
			}
		case "s32", "u32":
			x, ok1 := getBits(a[1])
			y, ok2 := getBits(a[2])
			if !ok1 || !ok2 {
				return nil
			}
			if _, ok := ordered(cmp, int32(0), int32(0)); !ok {
				return nil
			}
			if typ == "s32" {
				return func(t *thread) { t.preds[p], _ = ordered(cmp, int32(x(t)), int32(y(t))) }
			}
			return func(t *thread) { t.preds[p], _ = ordered(cmp, uint32(x(t)), uint32(y(t))) }
		}
	case "selp":
		if len(a) != 4 || a[3].Kind != opPred {
			return nil
		}
		x, ok1 := getBits(a[1])
		y, ok2 := getBits(a[2])
		if !ok1 || !ok2 {
			return nil
		}
		for _, o := range a[1:3] {
			if o.Kind == opImm && !o.Float && (typ == "f32" || typ == "f64") {
				return nil // step reports the error
			}
		}
		p, neg := a[3].Pred, a[3].Negated
		narrow := typ == "s32" || typ == "b32" || typ == "f32"
		return func(t *thread) {
			v := y(t)
			if t.preds[p] != neg {
				v = x(t)
			}
			if narrow {
				v = uint64(uint32(v))
			}
			t.regs[d] = v
		}
	case "cvt":
		if len(a) != 2 {
			return nil
		}
		switch {
		case len(op) == 3 && op[1] == "f64" && op[2] == "f32": // widen: exact
			x, ok := getF32(a[1])
			if !ok {
				return nil
			}
			return func(t *thread) { t.regs[d] = math.Float64bits(x(t)) }
		case len(op) == 4 && op[1] == "rn" && op[2] == "f32" && op[3] == "f64": // narrow, to nearest
			x, ok := getBits(a[1])
			if !ok {
				return nil
			}
			return func(t *thread) { t.regs[d] = uint64(math.Float32bits(float32(math.Float64frombits(x(t))))) }
		}
	case "neg", "abs", "sqrt":
		if len(a) != 2 || typ != "f32" && typ != "f64" {
			return nil
		}
		get := getF64
		if typ == "f32" {
			get = getF32
		}
		x, ok := get(a[1])
		if !ok {
			return nil
		}
		var f func(float64) float64
		switch op[0] {
		case "neg":
			f = func(v float64) float64 { return -v }
		case "abs":
			f = math.Abs
		default:
			f = math.Sqrt
		}
		if typ == "f32" {
			return func(t *thread) { t.regs[d] = uint64(math.Float32bits(float32(f(x(t))))) }
		}
		return func(t *thread) { t.regs[d] = math.Float64bits(f(x(t))) }
	}
	return nil
}

// taintInfo is an instruction's operands for the generic taint rule: the registers and
// predicates it reads and the ones it writes.
type taintInfo struct {
	srcRegs, srcPreds []int
	dstRegs, dstPreds []int
}

// taintOf collects the operands of in that the generic taint rule (exec.taint) uses.
func taintOf(in *Inst) taintInfo {
	var ti taintInfo
	for i, o := range in.Args {
		regs, preds := &ti.srcRegs, &ti.srcPreds
		if i == 0 {
			regs, preds = &ti.dstRegs, &ti.dstPreds
		}
		switch o.Kind {
		case opReg:
			*regs = append(*regs, o.Reg)
		case opPred:
			*preds = append(*preds, o.Pred)
		case opVec:
			*regs = append(*regs, o.Regs...)
		case opMem:
			if i > 0 && o.Reg >= 0 && o.Sym == "" {
				ti.srcRegs = append(ti.srcRegs, o.Reg)
			}
		}
	}
	return ti
}
