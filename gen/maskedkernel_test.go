package gen_test

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
)

// masked builds the shapes of a masked token loss's second pass (GRPO's gradient pass): a
// count finished by the first pass, whose 1/max(count, 1) and 0.5/max(count, 1) every block
// reads alike (computed once, before the loops: asmgen/hoist.go); wheres with a +0 branch
// on both sides (an and, an andn of the mask); a clamp-like or of two comparisons (one
// VORPS of their masks); a logsumexp over the kept elements that shares exp(x)
// (passes.MaskedArg); the mask read as a lane mask from its bytes.
func masked(dt ir.DType) *ir.Graph {
	dims := []ir.Dim{{Name: "B", Size: 3}, {Name: "L", Size: 21}}
	b := ir.NewBuilder(dt, dims, []string{"B", "L"})
	m := b.Input(ir.Input{Key: "m", Name: "m", Kind: ir.Bool, Shape: b.Shape("B", "L")})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "L")})
	out := func(name string, n *ir.Node) { b.Output(name, n, ir.Metric, "", "") }
	zero := b.Const(0)
	n := b.Sum(b.Where(m, b.Const(1), zero), "B", "L")
	inv := b.Div(b.Const(1), b.Max(n, b.Const(1)))
	half := b.Div(b.Const(0.5), b.Max(n, b.Const(1)))
	out("kept_x", b.Mul(b.Where(m, x, zero), inv))
	out("dropped_x", b.Mul(b.Where(m, zero, x), half))
	pass := b.Max(b.Ge(x, b.Const(0.25)), b.Ne(x, x)) // x ≥ 0.25 or NaN
	out("passed", b.Where(pass, b.Mul(x, inv), zero))
	out("ratio", b.Exp(x))
	out("lse_kept", b.LogSumExp(b.Where(m, x, b.Const(math.Inf(-1))), "B", "L"))
	return b.Graph()
}

func TestMaskedKernelShapes(t *testing.T) {
	eachDType(t, func(t *testing.T, dt ir.DType) {
		s := graphAsm(t, masked(dt), "masked")
		require.Contains(t, s, "// values every block reads alike, computed once\n")
		// The second pass's full blocks: no division, one blend (the -inf where; exp keeps
		// a NaN through its clamps), and the logsumexp takes e^x from the ratio's exp (one
		// exp polynomial, VROUNDP*).
		loop := regexp.MustCompile(`(?s)TEXT ·pass1AVX2.*?\nblocks_\d+:(.*?)\n\tJL +blocks`).FindStringSubmatch(s)
		require.NotNil(t, loop, "the second pass's block loop")
		body := loop[1]
		require.NotContains(t, body, "VDIVP")
		require.Equal(t, 1, strings.Count(body, "VBLENDVP"), body)
		require.Equal(t, 1, strings.Count(body, "VROUNDP"), body)
		// The token mask, read only as a mask, comes straight from its bytes (zero-extended,
		// compared with 0), never widened to floats.
		require.NotContains(t, body, "VCVTDQ2P")
		require.Contains(t, body, "VPCMPGT")
		// x ≥ 0.25 or NaN is the or of the two compares' masks.
		require.Regexp(t, `(?s)VCMPP. +\$0x1d.{0,80}VCMPP. +\$0x04.{0,80}VORP`, body)
		zooRun(t, masked(dt), "default")
		zooRun(t, masked(dt), "go")
	})
}

// rowInvariants builds a pass over [B, L] tokens whose per-sequence values ([B]: a division
// and an exp of a sequence's input, the sign of its advantage) every block of a row reads
// alike: each row computes them once, before its blocks (asmgen rowHoist).
func rowInvariants(dt ir.DType) *ir.Graph {
	dims := []ir.Dim{{Name: "B", Size: 3}, {Name: "L", Size: 21}}
	b := ir.NewBuilder(dt, dims, []string{"B", "L"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "L")})
	a := b.Input(ir.Input{Key: "a", Name: "a", Kind: ir.Float, Shape: b.Shape("B")})
	s := b.Exp(b.Div(a, b.Const(3)))
	b.Output("scaled", b.Mul(x, s), ir.Metric, "", "")
	b.Output("kept", b.Where(b.Ge(a, b.Const(0)), x, b.Const(0)), ir.Metric, "", "")
	return b.Graph()
}

func TestRowInvariants(t *testing.T) {
	eachDType(t, func(t *testing.T, dt ir.DType) {
		s := graphAsm(t, rowInvariants(dt), "rowinv")
		pass := regexp.MustCompile(`(?s)TEXT ·pass0AVX2.*?\nTEXT`).FindString(s)
		require.Contains(t, pass, "// values every block of the row reads alike, computed once a row\n")
		loop := regexp.MustCompile(`(?s)\nblocks_\d+:(.*?)\n\tJL +blocks`).FindStringSubmatch(pass)
		require.NotNil(t, loop, "the block loop")
		require.NotContains(t, loop[1], "VDIVP")
		require.NotContains(t, loop[1], "VROUNDP")
		zooRun(t, rowInvariants(dt), "default")
		zooRun(t, rowInvariants(dt), "go")
	})
}
