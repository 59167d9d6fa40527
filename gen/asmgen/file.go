package asmgen

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/reg"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/buildtags"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
)

// assemble runs body on a fresh avo context and returns the assembly and the Go stub
// declarations, each starting with header (avo's own first line is replaced).
func assemble(pkg, header string, f64, zmm bool, body func(a *asm)) (asmSrc, stubs []byte, err error) {
	// The budget's estimates of the registers an op needs are heuristics (temps): where a pass
	// still ends up needing more registers than the allocator has (16 in an AVX2 file; 32 in
	// 16-lane code, of which its 8-lane parts' VEX-only instructions reach the low 16, see
	// allocate), emit the file again with a smaller budget.
	start := numYMM
	if zmm {
		start = 2 * numYMM
	}
	for budget := start; ; budget-- {
		asmSrc, stubs, err = assembleWith(pkg, header, f64, zmm, budget, body)
		if err == nil && !zmm && highVector.Match(asmSrc) {
			return nil, nil, fmt.Errorf("asmgen: AVX2 code got a vector register above 15: %s", highVector.Find(asmSrc)) // allocate rules it out
		}
		if err == nil || !strings.Contains(err.Error(), "failed to allocate registers") {
			return asmSrc, stubs, err
		}
		if budget <= minBudget {
			return nil, nil, fmt.Errorf("asmgen: a pass needs more vector registers than the CPU has even with %d node values live", budget)
		}
	}
}

// minBudget is the smallest register budget assemble tries.
const minBudget = 6

// highVector matches a vector register AVX2 cannot encode (X16–X31, Y16–Y31).
var highVector = regexp.MustCompile(`\b[XY](1[6-9]|2[0-9]|3[01])\b`)

// assembleWith is one attempt of assemble, with the given register budget.
func assembleWith(pkg, header string, f64, zmm bool, budget int, body func(a *asm)) (asmSrc, stubs []byte, err error) {
	c := build.NewContext()
	c.Constraints(buildtags.Term("!purego").ToConstraints())
	a := newAsm(c, f64, budget)
	a.zmm = zmm
	body(a)
	f, err := c.Result()
	if err != nil {
		var list build.ErrorList
		if errors.As(err, &list) {
			var msgs []string
			for _, e := range list {
				msgs = append(msgs, e.Error())
			}
			return nil, nil, fmt.Errorf("asmgen: %s", strings.Join(msgs, "; "))
		}
		return nil, nil, fmt.Errorf("asmgen: %w", err)
	}
	if err := compile(zmm).Execute(f); err != nil {
		return nil, nil, fmt.Errorf("asmgen: %w", err)
	}
	cfg := printer.Config{Name: "lossgen", Pkg: pkg}
	asmSrc, err = printer.NewGoAsm(cfg).Print(f)
	if err != nil {
		return nil, nil, err
	}
	stubs, err = printer.NewStubs(cfg).Print(f)
	if err != nil {
		return nil, nil, err
	}
	return retitle(asmSrc, header), retitle(stubs, header), nil
}

// retitle replaces the first line (avo's "Code generated" comment) with header.
func retitle(src []byte, header string) []byte {
	if i := bytes.IndexByte(src, '\n'); i >= 0 {
		src = src[i:]
	}
	return append([]byte("// "+header), src...)
}

// compile is avo v0.6.0's pass.Compile with a peephole pass first, one check added after the
// liveness analysis (entryReads), its register allocation constrained to what the file's
// instructions encode (allocate) and vector self-moves pruned after allocation.
func compile(zmm bool) pass.Interface {
	return pass.Concat(
		pass.Verify,
		pass.FunctionPass(peephole),
		pass.FunctionPass(broadcastConsts),
		pass.FunctionPass(pass.PruneJumpToFollowingLabel),
		pass.FunctionPass(pass.PruneDanglingLabels),
		pass.FunctionPass(pass.LabelTarget),
		pass.FunctionPass(pass.CFG),
		pass.InstructionPass(pass.ZeroExtend32BitOutputs),
		pass.FunctionPass(pass.Liveness),
		pass.FunctionPass(entryReads),
		pass.FunctionPass(allocate(zmm)),
		pass.FunctionPass(pass.BindRegisters),
		pass.FunctionPass(pass.VerifyAllocation),
		pass.FunctionPass(pass.EnsureBasePointerCalleeSaved),
		pass.Func(pass.IncludeTextFlagHeader),
		pass.FunctionPass(pass.PruneSelfMoves),
		pass.FunctionPass(pruneVectorSelfMoves),
		pass.FunctionPass(pass.RequiredISAExtensions),
	)
}

// entryReads rejects a vector register live at a function's entry: one read before the
// emitter wrote it (a zeroing idiom, or a YMM read after only its X half was written). avo
// would keep it allocated from the entry on and, in a long function, run out of the 16 AVX2
// registers. It is an emitter bug, caught here rather than as unencodable assembly.
func entryReads(fn *avoir.Function) error {
	ins := fn.Instructions()
	if len(ins) == 0 {
		return nil
	}
	for id := range ins[0].LiveIn {
		if id.Kind() != reg.KindVector {
			continue
		}
		for k, i := range ins {
			for _, r := range i.InputRegisters() {
				if r.ID() == id {
					return fmt.Errorf("%s: instruction %d (%s) reads a vector register no earlier instruction wrote", fn.Name, k, i.Opcode)
				}
			}
		}
	}
	return nil
}
