// Package ptxsim executes the PTX that lossgen's ptxgen emits, without a GPU, so tests can
// check what the kernels compute and not only that the text parses. It implements exactly
// the subset ptxgen writes — integer and float arithmetic with PTX's rounding and NaN rules,
// predicates and branches, global and shared memory, integer red atomics (index faults),
// warps with shfl.sync.down, and bar.sync — and rejects anything else. Threads of a block run one at a time up to their
// next synchronisation point (a barrier, or a shuffle their whole warp must reach), so a
// launch is deterministic; inconsistent synchronisation (a warp split across a shuffle, a
// barrier some threads skip) is an error, as it would hang or misbehave on a GPU.
//
// Float32 add, sub, mul, div and sqrt are computed in float64 and rounded once (exact for
// these ops); fma.rn.f32 is rounded exactly from the float64 sum and its error term.
package ptxsim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Module is a parsed PTX module.
type Module struct {
	Kernels map[string]*Kernel
	Globals map[string][]byte // initialised .global arrays
}

// Kernel is one .entry.
type Kernel struct {
	Name   string
	Params []string // parameter names, in order
	Shared map[string]int
	Insts  []*Inst
	Labels map[string]int
	// ReqNtid is the block size the kernel's .reqntid directive requires (0: none): a launch
	// with another block fails, as the CUDA driver fails it.
	ReqNtid int
	nregs   int
	npreds  int
	// batchLoop marks the labels of the loops over batch dims (BatchLoopLabel): a partial
	// simulation counts their back edges.
	batchLoop map[string]bool
}

// BatchLoopLabel starts the label of every loop of ptxgen's kernels over batch elements
// ($L_loop_<n>); the loops over non-batch dims ($L_inner_) and over block partials in the
// merge kernels ($L_blocks_) have other labels.
const BatchLoopLabel = "$L_loop"

// regWidth is the bit width of each declared register type.
var regWidth = map[string]int{"pred": 1, "b16": 16, "b32": 32, "b64": 64, "u32": 32, "s32": 32, "u64": 64, "f32": 32, "f64": 64}

// typeWidth is the bit width of an instruction type suffix.
var typeWidth = map[string]int{"pred": 1, "u8": 8, "u16": 16, "b16": 16, "s32": 32, "u32": 32, "b32": 32, "f32": 32, "s64": 64, "u64": 64, "b64": 64, "f64": 64}

// checkRegs verifies, as ptxas would, that every register an instruction names is declared
// (.reg .T %prefix<N> covers %prefix0 … %prefix(N−1)) with the width the instruction's type
// needs.
func checkRegs(in *Inst, names []string, decl map[string]string, declN map[string]int) error {
	width := func(name string) (int, error) {
		i := len(name)
		for i > 1 && name[i-1] >= '0' && name[i-1] <= '9' {
			i--
		}
		n, err := strconv.Atoi(name[i:])
		t, ok := decl[name[:i]]
		if err != nil || !ok || n >= declN[name[:i]] {
			return 0, fmt.Errorf("register %s is not declared", name)
		}
		return regWidth[t], nil
	}
	op := in.Op
	typ := op[len(op)-1]
	want := func(i int) int { // the width operand i must have; 0 for no check
		switch {
		case in.Args[i].Kind == opMem:
			return 64
		case op[0] == "cvt" && i == 0:
			return typeWidth[op[len(op)-2]]
		case op[0] == "mad" && op[1] == "wide":
			return map[bool]int{true: 64, false: 32}[i == 0 || i == 3]
		case (op[0] == "shl" || op[0] == "shr") && i == 2:
			return 32
		case (op[0] == "ld" || op[0] == "st") && typ == "u8":
			return 16
		case op[0] == "setp" && i == 0, op[0] == "selp" && i == 3:
			return 1
		}
		return typeWidth[typ]
	}
	for i, a := range in.Args {
		var regs []string
		ww := want(i)
		switch a.Kind {
		case opReg, opPred:
			regs = []string{names[i]}
		case opMem:
			if a.Reg >= 0 && a.Sym == "" {
				regs = []string{names[i]}
			}
		case opVec: // {lo, hi} of a mov.b64
			for _, r := range strings.Split(strings.Trim(names[i], "{}"), ",") {
				regs = append(regs, strings.TrimSpace(r))
			}
			ww /= len(regs)
		}
		for _, r := range regs {
			w, err := width(r)
			if err != nil {
				return err
			}
			if ww != 0 && w != ww {
				return fmt.Errorf("register %s (%d bits) used as a %d-bit operand", r, w, ww)
			}
		}
	}
	for _, p := range names[len(in.Args):] { // guard and shfl predicates
		if w, err := width(p); err != nil || w != 1 {
			return fmt.Errorf("%s is not a declared predicate", p)
		}
	}
	return nil
}

// operand kinds
const (
	opReg = iota
	opPred
	opImm     // integer immediate (Int) or float immediate (Bits, with Float set)
	opMem     // [base+off]: a register or a symbol, plus an offset
	opVec     // {%r1, %r2}
	opSpecial // %tid.x, %ctaid.x, %ntid.x
	opSym     // a symbol (a .global or .shared name, or a parameter)
	opLabel
)

// Operand is one instruction operand.
type Operand struct {
	Kind    int
	Reg     int   // register index (opReg, opMem with a register base)
	Pred    int   // predicate index (opPred), or the |p of a shfl destination (-1 if none)
	Int     int64 // integer immediate, or memory offset
	Bits    uint64
	Float   bool
	Sym     string // symbol name (opSym, opMem with a symbol base, opSpecial, opLabel)
	Regs    []int  // opVec
	Negated bool   // !%p
}

// Inst is one instruction: guard predicate, opcode parts, operands.
type Inst struct {
	Guard    int // predicate index, -1 for none
	GuardNeg bool
	Op       []string // "add", "rn", "f32"
	Args     []Operand
	Line     int
	Text     string

	fast fastInst  // the compiled form, nil when exec.step runs it
	ti   taintInfo // its operands, for taint tracking
}

// Parse reads a module.
func Parse(src string) (*Module, error) {
	m := &Module{Kernels: map[string]*Kernel{}, Globals: map[string][]byte{}}
	lines := strings.Split(src, "\n")
	var k *Kernel
	regs := map[string]int{}
	preds := map[string]int{}
	decl, declN := map[string]string{}, map[string]int{} // register prefix: type, count
	inParams := false
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if c := strings.Index(line, "//"); c >= 0 {
			line = strings.TrimSpace(line[:c])
		}
		if line == "" {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("ptx line %d: %s: %s", i+1, fmt.Sprintf(format, args...), line)
		}
		switch {
		case strings.HasPrefix(line, ".version"), strings.HasPrefix(line, ".target"), strings.HasPrefix(line, ".address_size"):
		case strings.HasPrefix(line, ".global"):
			name, data, err := parseGlobal(line)
			if err != nil {
				return nil, fail("%v", err)
			}
			m.Globals[name] = data
		case strings.HasPrefix(line, ".visible .entry"):
			name := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, ".visible .entry")), "(")
			k = &Kernel{Name: name, Shared: map[string]int{}, Labels: map[string]int{}, batchLoop: map[string]bool{}}
			m.Kernels[name] = k
			regs, preds = map[string]int{}, map[string]int{}
			decl, declN = map[string]string{}, map[string]int{}
			inParams = true
		case inParams && strings.HasPrefix(line, ".param .u64"):
			k.Params = append(k.Params, strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, ".param .u64")), ","))
		case inParams && line == ")":
			inParams = false
		case k != nil && strings.HasPrefix(line, ".reqntid"):
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, ".reqntid")))
			if err != nil || n <= 0 {
				return nil, fail("bad .reqntid (one dimension, > 0)")
			}
			k.ReqNtid = n
		case line == "{":
		case line == "}":
			if k == nil {
				return nil, fail("unmatched }")
			}
			for _, in := range k.Insts {
				for _, a := range in.Args {
					if a.Kind == opLabel {
						if _, ok := k.Labels[a.Sym]; !ok {
							return nil, fail("undefined label %s", a.Sym)
						}
					}
				}
			}
			k.nregs, k.npreds = len(regs), len(preds)
			k = nil
		case strings.HasPrefix(line, ".reg"):
			// .reg .T %prefix<N>;
			f := strings.Fields(strings.TrimSuffix(line, ";"))
			open := strings.Index(f[len(f)-1], "<")
			n, err := strconv.Atoi(strings.TrimSuffix(f[len(f)-1][open+1:], ">"))
			if len(f) != 3 || open < 0 || err != nil || regWidth[strings.TrimPrefix(f[1], ".")] == 0 {
				return nil, fail("bad .reg declaration")
			}
			decl[f[2][:open]], declN[f[2][:open]] = strings.TrimPrefix(f[1], "."), n
		case strings.HasPrefix(line, ".shared"):
			// .shared .align 8 .b8 name[size];
			f := strings.Fields(strings.TrimSuffix(line, ";"))
			decl := f[len(f)-1]
			open := strings.Index(decl, "[")
			n, err := strconv.Atoi(strings.TrimSuffix(decl[open+1:], "]"))
			if open < 0 || err != nil {
				return nil, fail("bad .shared")
			}
			k.Shared[decl[:open]] = n
		case strings.HasSuffix(line, ":"):
			label := strings.TrimSuffix(line, ":")
			k.Labels[label] = len(k.Insts)
			if strings.HasPrefix(label, BatchLoopLabel) {
				k.batchLoop[label] = true
			}
		default:
			if k == nil {
				return nil, fail("instruction outside a kernel")
			}
			in, names, err := parseInst(strings.TrimSuffix(line, ";"), regs, preds)
			if err == nil {
				err = checkRegs(in, names, decl, declN)
			}
			if err != nil {
				return nil, fail("%v", err)
			}
			in.Line, in.Text = i+1, line
			k.Insts = append(k.Insts, in)
		}
	}
	return m, nil
}

func parseGlobal(line string) (string, []byte, error) {
	// .global .align 8 .f32 name[n] = { 0f..., ... };
	eq := strings.Index(line, "=")
	if eq < 0 {
		return "", nil, fmt.Errorf("uninitialised .global")
	}
	f := strings.Fields(line[:eq])
	typ, decl := f[len(f)-2], f[len(f)-1]
	name := decl[:strings.Index(decl, "[")]
	body := strings.Trim(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line[eq+1:]), ";")), "{} ")
	var data []byte
	for _, v := range strings.Split(body, ",") {
		op, err := parseImm(strings.TrimSpace(v))
		if err != nil {
			return "", nil, err
		}
		switch typ {
		case ".f32":
			data = append(data, le32(uint32(op.Bits))...)
		case ".f64":
			data = append(data, le64(op.Bits)...)
		default:
			return "", nil, fmt.Errorf("unsupported .global type %s", typ)
		}
	}
	return name, data, nil
}

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }
func le64(v uint64) []byte { return append(le32(uint32(v)), le32(uint32(v>>32))...) }

func parseInst(line string, regs, preds map[string]int) (*Inst, []string, error) {
	in := &Inst{Guard: -1}
	var names []string
	if strings.HasPrefix(line, "@") {
		sp := strings.IndexByte(line, ' ')
		g := line[1:sp]
		if strings.HasPrefix(g, "!") {
			in.GuardNeg = true
			g = g[1:]
		}
		in.Guard = index(preds, g)
		names = append(names, g)
		line = strings.TrimSpace(line[sp:])
	}
	opcode, rest, _ := strings.Cut(line, " ")
	in.Op = strings.Split(opcode, ".")
	rest = strings.TrimSpace(rest)
	var opNames []string
	for _, a := range splitArgs(rest) {
		op, err := parseOperand(a, in.Op[0], regs, preds)
		if err != nil {
			return nil, nil, err
		}
		in.Args = append(in.Args, op)
		name := strings.TrimPrefix(strings.Trim(a, "[]"), "!")
		name, _, _ = strings.Cut(name, "+")
		if reg, pred, ok := strings.Cut(name, "|"); ok { // shfl's d|p
			name = reg
			names = append(names, pred)
		}
		opNames = append(opNames, name)
	}
	in.fast, in.ti = compileFast(in), taintOf(in)
	// names: one per operand, then the guard and shfl predicates.
	return in, append(opNames, names...), nil
}

// splitArgs splits on top-level commas (not inside [] or {}).
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

func index(m map[string]int, name string) int {
	if i, ok := m[name]; ok {
		return i
	}
	m[name] = len(m)
	return m[name]
}

func parseOperand(a, op string, regs, preds map[string]int) (Operand, error) {
	switch {
	case strings.HasPrefix(a, "["):
		inner := strings.Trim(a, "[]")
		base, off := inner, int64(0)
		if plus := strings.LastIndex(inner, "+"); plus > 0 {
			base = inner[:plus]
			v, err := strconv.ParseInt(inner[plus+1:], 10, 64)
			if err != nil {
				return Operand{}, fmt.Errorf("bad offset in %s", a)
			}
			off = v
		}
		if strings.HasPrefix(base, "%") {
			return Operand{Kind: opMem, Reg: index(regs, base), Int: off}, nil
		}
		return Operand{Kind: opMem, Reg: -1, Sym: base, Int: off}, nil
	case strings.HasPrefix(a, "{"):
		var v []int
		for _, r := range strings.Split(strings.Trim(a, "{}"), ",") {
			v = append(v, index(regs, strings.TrimSpace(r)))
		}
		return Operand{Kind: opVec, Regs: v}, nil
	case a == "%tid.x" || a == "%ctaid.x" || a == "%ntid.x":
		return Operand{Kind: opSpecial, Sym: a}, nil
	case strings.HasPrefix(a, "!%p"):
		return Operand{Kind: opPred, Pred: index(preds, a[1:]), Negated: true}, nil
	case strings.HasPrefix(a, "%p"):
		return Operand{Kind: opPred, Pred: index(preds, a)}, nil
	case strings.HasPrefix(a, "%"):
		if bar := strings.IndexByte(a, '|'); bar > 0 { // shfl's d|p
			return Operand{Kind: opReg, Reg: index(regs, a[:bar]), Pred: index(preds, a[bar+1:])}, nil
		}
		return Operand{Kind: opReg, Reg: index(regs, a), Pred: -1}, nil
	case op == "bra":
		return Operand{Kind: opLabel, Sym: a}, nil
	case (a[0] >= 'a' && a[0] <= 'z' || a[0] >= 'A' && a[0] <= 'Z' || a[0] == '_') && !strings.HasPrefix(a, "0f") && !strings.HasPrefix(a, "0d") && !strings.HasPrefix(a, "0x"):
		return Operand{Kind: opSym, Sym: a}, nil
	}
	return parseImm(a)
}

func parseImm(a string) (Operand, error) {
	switch {
	case strings.HasPrefix(a, "0f") && len(a) == 10:
		v, err := strconv.ParseUint(a[2:], 16, 32)
		return Operand{Kind: opImm, Bits: v, Float: true}, err
	case strings.HasPrefix(a, "0d") && len(a) == 18:
		v, err := strconv.ParseUint(a[2:], 16, 64)
		return Operand{Kind: opImm, Bits: v, Float: true}, err
	}
	v, err := strconv.ParseInt(a, 0, 64)
	if err != nil {
		u, err2 := strconv.ParseUint(a, 0, 64)
		if err2 != nil {
			return Operand{}, fmt.Errorf("bad operand %q", a)
		}
		v = int64(u)
	}
	return Operand{Kind: opImm, Int: v, Bits: uint64(v)}, nil
}

// immFloat is the value of a float immediate for a type, or of an integer immediate.
func immFloat(o Operand, f64 bool) float64 {
	if !o.Float {
		return float64(o.Int)
	}
	if f64 {
		return math.Float64frombits(o.Bits)
	}
	return float64(math.Float32frombits(uint32(o.Bits)))
}
