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
	require.NoError(t, compile.Execute(f))
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
