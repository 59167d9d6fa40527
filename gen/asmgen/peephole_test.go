package asmgen

import (
	"strings"
	"testing"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/printer"
	"github.com/stretchr/testify/require"
)

// TestPeephole checks that a multiplication by 1 becomes a move, or nothing in place, and
// that another stays.
func TestPeephole(t *testing.T) {
	c := build.NewContext()
	c.Function("f")
	c.SignatureExpr("func(n int) int")
	x, y := c.GP64(), c.GP64()
	c.MOVQ(operand.NewParamAddr("n", 0), x)
	c.IMUL3Q(operand.I32(1), x, y)
	c.IMUL3Q(operand.I32(1), y, y)
	c.IMUL3Q(operand.I32(3), y, y)
	c.ADDQ(x, y)
	c.MOVQ(y, operand.NewParamAddr("ret", 8))
	c.RET()
	f, err := c.Result()
	require.NoError(t, err)
	require.NoError(t, compile(true).Execute(f))
	src, err := printer.NewGoAsm(printer.Config{Name: "test", Pkg: "p"}).Print(f)
	require.NoError(t, err)
	var ops []string
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "\t") {
			ops = append(ops, strings.Fields(l)[0])
		}
	}
	require.Equal(t, []string{"MOVQ", "MOVQ", "IMUL3Q", "ADDQ", "MOVQ", "RET"}, ops, string(src))
	require.Contains(t, string(src), "IMUL3Q $+3")
}

// TestPruneVectorSelfMoves checks that a YMM self-move goes and an XMM one, which zeroes the
// upper half, stays.
func TestPruneVectorSelfMoves(t *testing.T) {
	c := build.NewContext()
	c.Function("f")
	c.SignatureExpr("func(p *float32)")
	p := c.GP64()
	c.MOVQ(operand.NewParamAddr("p", 0), p)
	y, x := c.YMM(), c.XMM()
	c.VMOVUPS(operand.Mem{Base: p}, y)
	c.VMOVUPS(y, y)
	c.VMOVUPS(operand.Mem{Base: p}, x)
	c.VMOVUPS(x, x)
	c.VMOVUPS(y, operand.Mem{Base: p})
	c.VMOVUPS(x, operand.Mem{Base: p, Disp: 32})
	c.RET()
	f, err := c.Result()
	require.NoError(t, err)
	require.NoError(t, compile(true).Execute(f))
	src, err := printer.NewGoAsm(printer.Config{Name: "test", Pkg: "p"}).Print(f)
	require.NoError(t, err)
	var self []string
	for _, l := range strings.Split(string(src), "\n") {
		if f := strings.Fields(strings.ReplaceAll(l, ",", " ")); len(f) == 3 && f[0] == "VMOVUPS" && f[1] == f[2] {
			self = append(self, f[1][:1])
		}
	}
	require.Equal(t, []string{"X"}, self, string(src))
	require.Equal(t, 5, strings.Count(string(src), "VMOVUPS"), string(src))
}
