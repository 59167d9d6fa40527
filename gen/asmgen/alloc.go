package asmgen

import (
	"strings"

	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/reg"
)

// Register allocation is avo's (pass.AllocateRegisters) with one constraint added: a vector
// register that an instruction without an EVEX form reads or writes is kept to X/Y/Z0–15
// (VEX encodes four bits of register number), and in an AVX2 file every vector register is
// (an AVX2 CPU has no others). avo itself would hand a virtual register any of the 32, so
// 16-lane code whose 8-lane parts use VEX-only instructions (VBLENDVPS, a compare into a
// vector) could come out unencodable; with the constraint, its 16-lane values use all 32
// while those parts stay low.

// allocate is pass.AllocateRegisters with the low-register constraint: every vector register
// in a file that is not zmm, or in an instruction for which evexForm is false, interferes
// with the vector registers 16–31.
func allocate(zmm bool) func(*avoir.Function) error {
	return func(fn *avoir.Function) error {
		as := map[reg.Kind]*pass.Allocator{}
		for _, i := range fn.Instructions() {
			for _, r := range i.Registers() {
				if _, ok := as[r.Kind()]; !ok {
					a, err := pass.NewAllocatorForKind(r.Kind())
					if err != nil {
						return err
					}
					as[r.Kind()] = a
				}
			}
		}
		for k, a := range as { // avo's own: the base pointer last
			for _, r := range reg.FamilyOfKind(k).Registers() {
				if r.Info()&reg.BasePointer != 0 {
					a.SetPriority(r.ID(), -1)
				}
			}
		}
		for _, i := range fn.Instructions() {
			for _, r := range i.Registers() {
				as[r.Kind()].Add(r.ID())
			}
		}
		for _, i := range fn.Instructions() {
			for _, d := range i.OutputRegisters() {
				out := i.LiveOut.OfKind(d.Kind())
				out.DiscardRegister(d)
				as[d.Kind()].AddInterferenceSet(d, out)
			}
			if zmm && evexForm(i) {
				continue
			}
			for _, r := range i.Registers() {
				if r.Kind() == reg.KindVector && r.ID().IsVirtual() {
					as[reg.KindVector].AddInterferenceSet(r, highVectors)
				}
			}
		}
		fn.Allocation = reg.NewEmptyAllocation()
		for _, a := range as {
			al, err := a.Allocate()
			if err != nil {
				return err
			}
			if err := fn.Allocation.Merge(al); err != nil {
				return err
			}
		}
		return nil
	}
}

// highVectors are the vector registers 16–31.
var highVectors = func() reg.MaskSet {
	s := reg.NewEmptyMaskSet()
	for _, r := range reg.Vector.Registers() {
		if r.PhysicalIndex() >= numYMM {
			s.AddRegister(r)
		}
	}
	return s
}()

// evexForm reports whether instruction i, as written, has an EVEX encoding, which reaches
// vector registers 16–31: it has a ZMM or mask register operand or an EVEX-only suffix, or
// it is one of the instructions whose VEX and EVEX forms share the mnemonic (AVX512F and VL,
// the logic of VANDPS and VXORPS through AVX512DQ, which the 16-lane variants require).
func evexForm(i *avoir.Instruction) bool {
	for _, s := range i.Suffixes {
		if s == "BCST" || s == "Z" {
			return true
		}
	}
	for _, op := range i.Operands {
		if operand.IsZMM(op) || operand.IsK(op) {
			return true
		}
	}
	if strings.HasPrefix(i.Opcode, "VFMADD") || strings.HasPrefix(i.Opcode, "VFNMADD") ||
		strings.HasPrefix(i.Opcode, "VFMSUB") || strings.HasPrefix(i.Opcode, "VFNMSUB") {
		return true
	}
	return evexMnemonics[i.Opcode]
}

// evexMnemonics are the VEX mnemonics lossgen emits that also name an EVEX form with the
// same operands (a compare into a vector, VBLENDVPS, VPAND, VEXTRACTF128 are not among them).
var evexMnemonics = map[string]bool{
	"VADDPS": true, "VADDPD": true, "VSUBPS": true, "VSUBPD": true, "VMULPS": true, "VMULPD": true,
	"VDIVPS": true, "VDIVPD": true, "VMAXPS": true, "VMAXPD": true, "VMINPS": true, "VMINPD": true,
	"VSQRTPS": true, "VSQRTPD": true,
	"VANDPS": true, "VANDPD": true, "VANDNPS": true, "VANDNPD": true, "VORPS": true, "VORPD": true,
	"VXORPS": true, "VXORPD": true,
	"VMOVUPS": true, "VMOVUPD": true, "VMOVAPS": true, "VMOVAPD": true,
	"VBROADCASTSS": true, "VBROADCASTSD": true, "VPBROADCASTD": true,
	"VCVTPS2PD": true, "VCVTPS2DQ": true, "VCVTTPS2DQ": true, "VCVTDQ2PS": true,
	"VPADDD": true, "VPSUBD": true, "VPSLLD": true, "VPSRLD": true, "VPSRAD": true, "VPMULLD": true,
	"VPMAXSD": true, "VPMINSD": true,
	"VSHUFPS": true, "VUNPCKLPS": true, "VUNPCKHPS": true, "VPERMPS": true,
}
