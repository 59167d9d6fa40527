package ptxgen

import (
	"fmt"
	"math"
	"strings"
)

// kernel is one PTX entry: its parameters (all .u64 device pointers, named after buffers),
// register counts, shared memory and instruction lines. templates/ptx/kernel.ptx.tmpl frames it.
type kernel struct {
	Name   string
	Params []string // buffer names, in argument order
	Regs   []regDecl
	Shared int // bytes of the reduction scratch in shared memory
	Body   []string

	n      map[string]int
	labels int
	f64    bool
	// truth maps a float64 register that holds a comparison's 0 or 1 (ptxOps.cmp on float64
	// registers) to the predicate it came from, so a select or a logical and/or of it uses
	// the predicate: a reduction's description computes with float64 truth values. Such a
	// register is set (lazy) only where it is used as a number (ptxOps.use).
	truth map[string]string
	lazy  map[string]bool
}

type regDecl struct {
	Type, Prefix string
	Count        int
}

// register classes: PTX type, name prefix.
var regClasses = [][2]string{{"pred", "p"}, {"b16", "rs"}, {"b32", "r"}, {"b64", "rd"}, {"f32", "f"}, {"f64", "fd"}}

func newKernel(name string, f64 bool) *kernel {
	return &kernel{Name: name, n: map[string]int{}, f64: f64, truth: map[string]string{}, lazy: map[string]bool{}}
}

func (k *kernel) reg(prefix string) string {
	i := k.n[prefix]
	k.n[prefix] = i + 1
	return fmt.Sprintf("%%%s%d", prefix, i)
}

func (k *kernel) pred() string { return k.reg("p") }
func (k *kernel) r32() string  { return k.reg("r") }
func (k *kernel) r64() string  { return k.reg("rd") }
func (k *kernel) f32() string  { return k.reg("f") }
func (k *kernel) fd() string   { return k.reg("fd") }

// el is a register of the kernel's element type.
func (k *kernel) el() string {
	if k.f64 {
		return k.fd()
	}
	return k.f32()
}

// t is the element type suffix: f32 or f64.
func (k *kernel) t() string {
	if k.f64 {
		return "f64"
	}
	return "f32"
}

func (k *kernel) op(format string, args ...any) {
	k.Body = append(k.Body, "\t"+fmt.Sprintf(format, args...)+";")
}

func (k *kernel) comment(format string, args ...any) {
	k.Body = append(k.Body, "\t// "+fmt.Sprintf(format, args...))
}

func (k *kernel) label(l string) { k.Body = append(k.Body, l+":") }

func (k *kernel) newLabel(what string) string {
	k.labels++
	return fmt.Sprintf("$L_%s_%d", what, k.labels)
}

// param returns the register holding buffer name's global address, loading it at first use.
func (k *kernel) param(name string) string {
	for i, p := range k.Params {
		if p == name {
			return fmt.Sprintf("%%rdp%d", i)
		}
	}
	k.Params = append(k.Params, name)
	return fmt.Sprintf("%%rdp%d", len(k.Params)-1)
}

// finish fills in register counts (view adds the parameter loads: the body asked for
// parameters as it went).
func (k *kernel) finish() {
	for _, c := range regClasses {
		if k.n[c[1]] > 0 {
			k.Regs = append(k.Regs, regDecl{Type: c[0], Prefix: c[1], Count: k.n[c[1]]})
		}
	}
	if len(k.Params) > 0 {
		k.Regs = append(k.Regs, regDecl{Type: "b64", Prefix: "rdp", Count: len(k.Params)})
	}
}

// imm formats a float constant of the element type in PTX's exact hex form.
func (k *kernel) imm(v float64) string {
	if k.f64 {
		return immF64(v)
	}
	return immF32(float32(v))
}

func immF32(v float32) string { return fmt.Sprintf("0f%08X", math.Float32bits(v)) }
func immF64(v float64) string { return fmt.Sprintf("0d%016X", math.Float64bits(v)) }

// constReg loads a constant of the element type into a fresh register.
func (k *kernel) constReg(v float64) string {
	r := k.el()
	k.op("mov.%s %s, %s", k.t(), r, k.imm(v))
	return r
}

// addr computes base + index·size into a fresh 64-bit register (index a 32-bit register).
func (k *kernel) addr(base, index string, size int) string {
	a := k.r64()
	k.op("mad.wide.u32 %s, %s, %d, %s", a, index, size, base)
	return a
}

// text is the kernel body, one instruction or label a line, for the kernel template.
// text is the kernel's body: the loads of its parameters, named idents, then its code.
func (k *kernel) text(idents []string) string {
	var head []string
	for i, id := range idents {
		head = append(head, fmt.Sprintf("\tld.param.u64 %%rdp%d, [%s];", i, id),
			fmt.Sprintf("\tcvta.to.global.u64 %%rdp%d, %%rdp%d;", i, i))
	}
	return strings.Join(append(head, k.Body...), "\n")
}
