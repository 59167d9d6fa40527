package asmgen

import (
	"strings"

	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/x86"
)

// peephole rewrites instructions the emitter writes for the general case where a special
// one is shorter: a multiplication by 1 (the stride of an index's last dim) becomes a move,
// and disappears when it multiplies a register into itself. It runs before liveness and
// register allocation, on virtual registers. No rewritten instruction's flags are read:
// the emitter compares before it branches.
func peephole(fn *avoir.Function) error {
	out := fn.Nodes[:0]
	for _, n := range fn.Nodes {
		i, ok := n.(*avoir.Instruction)
		if !ok || i.Opcode != "IMUL3Q" || !isImm(i.Operands[0], 1) {
			out = append(out, n)
			continue
		}
		src, dst := i.Operands[1], i.Operands[2]
		if src == dst {
			continue
		}
		mov, err := x86.MOVQ(src, dst)
		if err != nil {
			return err
		}
		out = append(out, mov)
	}
	fn.Nodes = out
	return nil
}

// isImm reports an immediate operand of value v.
func isImm(op operand.Op, v int64) bool {
	switch x := op.(type) {
	case operand.I8:
		return int64(x) == v
	case operand.I32:
		return int64(x) == v
	case operand.U8:
		return int64(x) == v
	case operand.U32:
		return int64(x) == v
	}
	return false
}

// pruneVectorSelfMoves removes a full-width move of a YMM or ZMM register to itself, which register
// allocation leaves where a value's register is the one it was copied to (avo's
// PruneSelfMoves handles general-purpose moves only). An XMM self-move stays: VEX encoding
// zeroes the upper half, so it is not a no-op.
func pruneVectorSelfMoves(fn *avoir.Function) error {
	out := fn.Nodes[:0]
	for _, n := range fn.Nodes {
		if i, ok := n.(*avoir.Instruction); ok && vectorMoves[i.Opcode] && len(i.Operands) == 2 &&
			(operand.IsYMM(i.Operands[0]) || operand.IsZMM(i.Operands[0])) && i.Operands[0] == i.Operands[1] {
			continue
		}
		out = append(out, n)
	}
	fn.Nodes = out
	return nil
}

// vectorMoves are the full-register vector moves.
var vectorMoves = map[string]bool{"VMOVUPS": true, "VMOVAPS": true, "VMOVUPD": true, "VMOVAPD": true, "VMOVDQU": true, "VMOVDQA": true}

// bcstPrefix names the one-dword constants of 16-lane code (asm.data).
const bcstPrefix = "lgb"

// broadcastConsts makes every instruction of 16-lane code that reads a one-dword constant
// read it broadcast to all 16 lanes: a load into a register becomes VBROADCASTSS, any other
// instruction takes the .BCST suffix (EVEX embedded broadcast, {1to16}). The emitter wrote
// them as full-width memory operands, the forms avo checks.
func broadcastConsts(fn *avoir.Function) error {
	for _, n := range fn.Nodes {
		i, ok := n.(*avoir.Instruction)
		if !ok {
			continue
		}
		for _, op := range i.Operands {
			if !isBcstConst(op) {
				continue
			}
			if vectorMoves[i.Opcode] {
				i.Opcode = "VBROADCASTSS"
			} else {
				i.Suffixes = append(i.Suffixes, "BCST")
			}
			break
		}
	}
	return nil
}

// isBcstConst reports whether op is one of 16-lane code's one-dword constants: a file-static
// symbol named bcstPrefix and a number (an argument named lgb… is not: its symbol is not
// static).
func isBcstConst(op operand.Op) bool {
	m, ok := op.(operand.Mem)
	if !ok || !m.Symbol.Static {
		return false
	}
	n, ok := strings.CutPrefix(m.Symbol.Name, bcstPrefix)
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
