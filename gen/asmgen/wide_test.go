package asmgen

import (
	"strings"
	"testing"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/printer"
	"github.com/stretchr/testify/require"
)

// selectImm's tables against the select they stand for, computed bit by bit from VPTERNLOGD's
// definition for every placement of m, x and y (0xCA is Intel's own example: A ? B : C).
func TestSelectImm(t *testing.T) {
	require.Equal(t, uint8(0xCA), selectImm(0, 1, 2))
	perms := [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for _, p := range perms {
		imm := selectImm(p[0], p[1], p[2])
		for a := range 2 {
			for b := range 2 {
				for c := range 2 {
					in := [3]int{a, b, c} // A, B, C
					m, x, y := in[p[0]], in[p[1]], in[p[2]]
					want := y
					if m == 1 {
						want = x
					}
					got := int(imm >> (a<<2 | b<<1 | c) & 1)
					require.Equal(t, want, got, "m, x, y at %v: A=%d B=%d C=%d", p, a, b, c)
				}
			}
		}
	}
}

// broadcastConsts gives .BCST (or VBROADCASTSS) to the instructions that read a one-dword
// constant, and to nothing else: not an argument whose name starts like one.
func TestBroadcastConsts(t *testing.T) {
	c := build.NewContext()
	c.Function("f")
	c.SignatureExpr("func(lgbX *float32)")
	k := c.StaticGlobal(bcstPrefix + "0")
	c.DataAttributes(attr.RODATA | attr.NOPTR)
	c.AppendDatum(operand.U32(0x3f800000))
	p := c.GP64()
	c.MOVQ(operand.NewParamAddr("lgbX", 0), p)
	z, w := c.ZMM(), c.ZMM()
	c.VMOVUPS(operand.Mem{Base: p}, z)
	c.VMOVUPS(k, w)
	c.VADDPS(k, z, z)
	c.VMULPS(w, z, z)
	c.VMOVUPS(z, operand.Mem{Base: p})
	c.RET()
	f, err := c.Result()
	require.NoError(t, err)
	require.NoError(t, compile(true).Execute(f))
	src, err := printer.NewGoAsm(printer.Config{Name: "test", Pkg: "p"}).Print(f)
	require.NoError(t, err)
	var ops []string
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "\tDATA") {
			ops = append(ops, strings.Fields(l)[0])
		}
	}
	require.Equal(t, []string{"MOVQ", "VMOVUPS", "VBROADCASTSS", "VADDPS.BCST", "VMULPS", "VMOVUPS", "RET"}, ops, string(src))
}
