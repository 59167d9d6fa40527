// Package asmgen is the AVX2 backend: with avo (used as a library, in memory), it emits every
// pass of the fusion plan as a Go-assembly function working on 8 float32 lanes (4 float64
// lanes), with FMA where the math allows, and the Go glue that calls it, finishes its
// reductions and registers the kernels for run-time dispatch. It is generic over the IR: each
// op has one vector expansion here, so no loss needs assembly of its own. It emits what the
// plan's schedule (plan.Schedule) says: a pass the plan cuts into chunks takes its chunk's
// range (rows, or whole blocks of a flat batch) as arguments, and the glue runs the plan's
// fixed number of chunks on goroutines and merges their states in chunk order; buffers the
// schedule stores non-temporally get a variant of the pass with such stores.
package asmgen

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// asm wraps an avo build context with the element type and a pool of 32-byte constants
// (one-dword ones read by broadcast in 16-lane code: data).
type asm struct {
	c      *build.Context
	f64    bool // float64 lanes (4 per YMM) instead of float32 (8 per YMM)
	zmm    bool // 16 float32 lanes in ZMM registers: an AVX-512 variant's blocks (wide.go)
	consts map[string]operand.Mem
	label  *int
	budget int // vector registers the emitter lets node values hold at once (regs.makeRoom)
}

func newAsm(c *build.Context, f64 bool, budget int) *asm {
	return &asm{c: c, f64: f64, consts: map[string]operand.Mem{}, label: new(int), budget: budget}
}

// as64 is a view of the same context that emits float64 (PD) instructions, for the float64
// reduction states of float32 kernels.
func (a *asm) as64() *asm {
	n := a.narrow()
	n.f64 = true
	return n
}

// as64x8 is as64 on ZMM registers, 8 float64 lanes: the two YMM halves of as64 side by side,
// for the float64 states of a 16-lane variant's flushes (flushHalves). Its arithmetic and
// moves take ZMM operands; its compares and selects are 16-lane float32 code's, not for it,
// and so are its constants (cf64 would ask the 16-lane pool for a qword: as64's, broadcast).
func (a *asm) as64x8() *asm {
	n := a.as64()
	n.zmm = true
	return n
}

// narrow is a view of the same context that emits YMM instructions of a's element type: for
// the parts of a 16-lane block that work on 8-lane states (wide.go).
func (a *asm) narrow() *asm {
	return &asm{c: a.c, f64: a.f64, consts: a.consts, label: a.label, budget: a.budget}
}

// lanes is the number of elements in a vector register (YMM, or ZMM for 16-lane code).
func (a *asm) lanes() int {
	switch {
	case a.zmm && a.f64:
		return 8
	case a.zmm:
		return 16
	case a.f64:
		return 4
	}
	return 8
}

// newLabel returns a fresh label name.
func (a *asm) newLabel(what string) string {
	*a.label++
	return fmt.Sprintf("%s_%d", what, *a.label)
}

// data returns a 32-byte read-only constant holding the given 8 dwords or 4 qwords; in
// 16-lane code, the one dword of a constant with the same value in every lane, which its
// instructions read as a broadcast (broadcastConsts: 64-byte data would be 32-byte aligned,
// the linker's most, and half its loads would cross a cache line), or 16 lane-indexed dwords
// (a gather's lane offsets, once per block).
func (a *asm) data(key string, vals []operand.Constant) operand.Mem {
	name := "lgc%d"
	if a.zmm {
		for _, v := range vals {
			if _, dword := v.(operand.U32); !dword || len(vals) != 16 && v != vals[0] {
				panic("asmgen: 16-lane code asks for the constant " + key + ", which is not one dword in every lane")
			}
		}
		if len(vals) == 16 { // lane-indexed (lane offsets): all 64 bytes, read whole
			key = "z16" + key
		} else {
			key, vals, name = "z"+key, vals[:1], bcstPrefix+"%d"
		}
	}
	if m, ok := a.consts[key]; ok {
		return m
	}
	m := a.c.StaticGlobal(fmt.Sprintf(name, len(a.consts)))
	a.c.DataAttributes(attr.RODATA | attr.NOPTR)
	for _, v := range vals {
		a.c.AppendDatum(v)
	}
	a.consts[key] = m
	return m
}

// cf is the float constant v in every lane, in the kernel's element type.
func (a *asm) cf(v float64) operand.Mem {
	if a.f64 {
		return a.cq(int64(math.Float64bits(v)))
	}
	return a.cd(int32(math.Float32bits(float32(v))))
}

// cf32 is the float32 constant v in 8 lanes (for float32 work inside float64 kernels too).
func (a *asm) cf32(v float32) operand.Mem { return a.cd(int32(math.Float32bits(v))) }

// cf64 is the float64 constant v in 4 lanes.
func (a *asm) cf64(v float64) operand.Mem { return a.cq(int64(math.Float64bits(v))) }

// cd is the int32 v in 8 lanes.
func (a *asm) cd(v int32) operand.Mem {
	vals := make([]operand.Constant, 8)
	for i := range vals {
		vals[i] = operand.U32(uint32(v))
	}
	return a.data(fmt.Sprintf("d%08x", uint32(v)), vals)
}

// cq is the int64 v in 4 lanes.
func (a *asm) cq(v int64) operand.Mem {
	vals := make([]operand.Constant, 4)
	for i := range vals {
		vals[i] = operand.U64(uint64(v))
	}
	return a.data(fmt.Sprintf("q%016x", uint64(v)), vals)
}

// iota32 is 0, 1, ..., 7 as int32 lanes; iota64 is 0..3 as int64 lanes.
func (a *asm) iota32() operand.Mem {
	vals := make([]operand.Constant, 8)
	for i := range vals {
		vals[i] = operand.U32(uint32(i))
	}
	return a.data("iota32", vals)
}

func (a *asm) iota64() operand.Mem {
	vals := make([]operand.Constant, 4)
	for i := range vals {
		vals[i] = operand.U64(uint64(i))
	}
	return a.data("iota64", vals)
}

// perm32 is a VPERMPS index vector.
func (a *asm) perm32(idx [8]int) operand.Mem {
	vals := make([]operand.Constant, 8)
	key := "perm"
	for i, v := range idx {
		vals[i] = operand.U32(uint32(v))
		key += fmt.Sprint(v)
	}
	return a.data(key, vals)
}

// ymm is a new vector register: a YMM, or a ZMM in 16-lane code.
func (a *asm) ymm() reg.VecVirtual {
	if a.zmm {
		return a.c.ZMM()
	}
	return a.c.YMM()
}
func (a *asm) gp() reg.GPVirtual { return a.c.GP64() }

// The element-type-generic instructions. Operand order is Go assembly's: sources first,
// destination last; for VSUB/VDIV the result is (second − first) and (second / first).

func (a *asm) add(x, y, z operand.Op) {
	if a.f64 {
		a.c.VADDPD(x, y, z)
	} else {
		a.c.VADDPS(x, y, z)
	}
}

func (a *asm) sub(x, y, z operand.Op) {
	if a.f64 {
		a.c.VSUBPD(x, y, z)
	} else {
		a.c.VSUBPS(x, y, z)
	}
}

func (a *asm) mul(x, y, z operand.Op) {
	if a.f64 {
		a.c.VMULPD(x, y, z)
	} else {
		a.c.VMULPS(x, y, z)
	}
}

func (a *asm) div(x, y, z operand.Op) {
	if a.f64 {
		a.c.VDIVPD(x, y, z)
	} else {
		a.c.VDIVPS(x, y, z)
	}
}

// fmadd231: z = x·y + z.
func (a *asm) fmadd231(x, y, z operand.Op) {
	if a.f64 {
		a.c.VFMADD231PD(x, y, z)
	} else {
		a.c.VFMADD231PS(x, y, z)
	}
}

// fmadd213: z = y·z + x.
func (a *asm) fmadd213(x, y, z operand.Op) {
	if a.f64 {
		a.c.VFMADD213PD(x, y, z)
	} else {
		a.c.VFMADD213PS(x, y, z)
	}
}

// fnmadd231: z = −(x·y) + z.
func (a *asm) fnmadd231(x, y, z operand.Op) {
	if a.f64 {
		a.c.VFNMADD231PD(x, y, z)
	} else {
		a.c.VFNMADD231PS(x, y, z)
	}
}

func (a *asm) and(x, y, z operand.Op) {
	if a.f64 {
		a.c.VANDPD(x, y, z)
	} else {
		a.c.VANDPS(x, y, z)
	}
}

// andn: z = ^y & x (VANDNPS x, y, z computes (NOT y) AND x).
func (a *asm) andn(x, y, z operand.Op) {
	if a.f64 {
		a.c.VANDNPD(x, y, z)
	} else {
		a.c.VANDNPS(x, y, z)
	}
}

func (a *asm) or(x, y, z operand.Op) {
	if a.f64 {
		a.c.VORPD(x, y, z)
	} else {
		a.c.VORPS(x, y, z)
	}
}

func (a *asm) xor(x, y, z operand.Op) {
	if a.f64 {
		a.c.VXORPD(x, y, z)
	} else {
		a.c.VXORPS(x, y, z)
	}
}

// cmp: z = (y PRED x) ? all ones : 0, with an AVX comparison predicate. AVX-512 compares
// into a mask register, which VPMOVM2D spreads back into lanes of all ones or zeros.
func (a *asm) cmp(pred uint8, x, y, z operand.Op) {
	if a.zmm {
		k := a.c.K()
		a.c.VCMPPS(operand.Imm(uint64(pred)), x, y, k)
		a.c.VPMOVM2D(k, z)
		return
	}
	if a.f64 {
		a.c.VCMPPD(operand.Imm(uint64(pred)), x, y, z)
	} else {
		a.c.VCMPPS(operand.Imm(uint64(pred)), x, y, z)
	}
}

// blend: z = mask ? x : y (VBLENDVPS mask, x, y, z takes x where the mask's sign bit is set;
// 16-lane code selects bitwise, the masks being compares' all ones or zeros: selectBits).
func (a *asm) blend(mask, x, y, z operand.Op) {
	if a.zmm {
		a.selectBits(mask, x, y, z)
		return
	}
	if a.f64 {
		a.c.VBLENDVPD(mask, x, y, z)
	} else {
		a.c.VBLENDVPS(mask, x, y, z)
	}
}

func (a *asm) mov(x, z operand.Op) {
	if a.f64 {
		a.c.VMOVUPD(x, z)
	} else {
		a.c.VMOVUPS(x, z)
	}
}

func (a *asm) sqrt(x, z operand.Op) {
	if a.f64 {
		a.c.VSQRTPD(x, z)
	} else {
		a.c.VSQRTPS(x, z)
	}
}

// AVX comparison predicates (Intel SDM, VCMPPS imm8).
const (
	cmpEQ_OQ  = 0x00
	cmpLT_OQ  = 0x11
	cmpLE_OQ  = 0x12
	cmpUNORD  = 0x03
	cmpNEQ_UQ = 0x04
	cmpNEQ_OQ = 0x0C
	cmpGE_OQ  = 0x1D
	cmpGT_OQ  = 0x1E
	cmpNLT_UQ = 0x15
	cmpNGT_UQ = 0x1A
)

// zero returns a register of zeros.
func (a *asm) zero() reg.VecVirtual {
	z := a.ymm()
	a.mov(a.cf(0), z) // not xor z, z, z: avo counts its inputs as reads (see defineOnly)
	return z
}

// zeroX is a new XMM register holding 0, defined by a load (see defineOnly).
func (a *asm) zeroX() reg.VecVirtual {
	x := a.c.XMM()
	a.c.VMOVUPS(a.cd(0), x)
	return x
}

// defineOnly: avo's liveness reads every input operand, zeroing and all-ones idioms
// (VXORPS z, z, z; VPCMPEQD m, m, m) included, so their register would count as live from
// the function's entry and crowd out every other in a long function (past 16, avo hands
// out AVX-512 registers that AVX2 cannot encode). Registers are therefore defined by loads
// of constants, which read nothing.

// minNaN: z = min(x, y) with Go's semantics: NaN if either is NaN, −0 < +0.
// VMINPS returns its second source when the operands are unordered or equal, so the OR of
// both operand orders is the NaN (exponent bits all set, mantissa non-zero) or the negative
// zero when one is present, and the plain minimum otherwise.
func (a *asm) minNaN(x, y operand.Op, z reg.VecVirtual) {
	t := a.ymm()
	if a.f64 {
		a.c.VMINPD(x, y, t)
		a.c.VMINPD(y, x, z)
	} else {
		a.c.VMINPS(x, y, t)
		a.c.VMINPS(y, x, z)
	}
	a.or(t, z, z)
}

// maxNaN: z = max(x, y) = −min(−x, −y), NaN-propagating, +0 > −0.
func (a *asm) maxNaN(x, y operand.Op, z reg.VecVirtual) {
	sign := a.cf(math.Copysign(0, -1))
	nx, ny := a.ymm(), a.ymm()
	a.xor(sign, x, nx)
	a.xor(sign, y, ny)
	a.minNaN(nx, ny, z)
	a.xor(sign, z, z)
}
