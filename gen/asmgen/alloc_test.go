package asmgen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"
	"github.com/stretchr/testify/require"
)

// goAsm assembles src (one TEXT symbol's body after the header) with the Go toolchain's
// assembler, the one that builds the generated packages, and returns its error output.
func goAsm(t *testing.T, src string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.s")
	require.NoError(t, os.WriteFile(path, []byte("#include \"textflag.h\"\n"+src), 0o644))
	out, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	goroot := strings.TrimSpace(string(out))
	cmd := exec.Command("go", "tool", "asm", "-I", filepath.Join(goroot, "pkg", "include"), "-p", "p", "-o", filepath.Join(dir, "a.o"), path)
	cmd.Env = append(os.Environ(), "GOARCH=amd64")
	out, err = cmd.CombinedOutput()
	return string(out), err
}

// Every mnemonic evexForm lets reach registers 16–31 assembles with them (the Go assembler
// picks its EVEX form); a VEX-only one (VBLENDVPS) does not, which is what allocate keeps
// from happening.
func TestEVEXMnemonicsTakeHighRegisters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go tool asm")
	}
	operands := func(op string) string {
		switch op {
		case "VMOVUPS", "VMOVUPD", "VMOVAPS", "VMOVAPD", "VSQRTPS", "VSQRTPD", "VCVTPS2DQ", "VCVTTPS2DQ", "VCVTDQ2PS":
			return "Y16, Y17"
		case "VBROADCASTSS", "VBROADCASTSD", "VPBROADCASTD", "VCVTPS2PD":
			return "X16, Y17"
		case "VPSLLD", "VPSRLD", "VPSRAD":
			return "$1, Y16, Y17"
		case "VSHUFPS":
			return "$0, Y16, Y17, Y18"
		}
		return "Y16, Y17, Y18"
	}
	var ops []string
	for op := range evexMnemonics {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	ops = append(ops, "VFMADD231PS", "VFMADD213PS", "VFNMADD231PS", "VFMADD231PD")
	var b strings.Builder
	b.WriteString("TEXT ·f(SB), NOSPLIT, $0\n")
	for _, op := range ops {
		fmt.Fprintf(&b, "\t%s %s\n", op, operands(op))
	}
	b.WriteString("\tRET\n")
	out, err := goAsm(t, b.String())
	require.NoError(t, err, out)

	out, err = goAsm(t, "TEXT ·g(SB), NOSPLIT, $0\n\tVBLENDVPS Y3, Y16, Y1, Y2\n\tRET\n")
	require.Error(t, err)
	require.Contains(t, out, "invalid instruction")
}

// allocate gives a 16-lane function's values all 32 registers but keeps the registers of a
// VEX-only instruction (VBLENDVPS) in the low 16, and gives an AVX2 function only the low
// 16: 24 values live at once need the high ones in 16-lane code, and fail to allocate in
// AVX2 code rather than come out unencodable.
func TestAllocateKeepsVEXLow(t *testing.T) {
	emit := func(zmm bool) (string, error) {
		c := build.NewContext()
		c.Function("f")
		c.SignatureExpr("func(x *float32)")
		p := c.GP64()
		c.MOVQ(operand.NewParamAddr("x", 0), p)
		var zs []reg.VecVirtual
		for k := range 24 {
			z := c.ZMM()
			if !zmm {
				z = c.YMM()
			}
			c.VMOVUPS(operand.Mem{Base: p, Disp: 64 * k}, z)
			zs = append(zs, z)
		}
		// A VEX-only blend of two 8-lane halves, while all 24 are live.
		lo, hi, m := c.YMM(), c.YMM(), c.YMM()
		c.VMOVUPS(operand.Mem{Base: p}, lo)
		c.VMOVUPS(operand.Mem{Base: p, Disp: 32}, hi)
		c.VMOVUPS(operand.Mem{Base: p, Disp: 64}, m)
		c.VBLENDVPS(m, hi, lo, lo)
		c.VMOVUPS(lo, operand.Mem{Base: p})
		for k, z := range zs {
			c.VMOVUPS(z, operand.Mem{Base: p, Disp: 64 * k})
		}
		c.RET()
		f, err := c.Result()
		require.NoError(t, err)
		if err := compile(zmm).Execute(f); err != nil {
			return "", err
		}
		src, err := printer.NewGoAsm(printer.Config{Name: "test", Pkg: "p"}).Print(f)
		require.NoError(t, err)
		return string(src), nil
	}
	src, err := emit(true)
	require.NoError(t, err)
	require.Regexp(t, `\bZ(1[6-9]|2[0-9]|3[01])\b`, src, "24 live values use the high registers")
	blend := regexp.MustCompile(`VBLENDVPS\s+(.*)`).FindStringSubmatch(src)
	require.NotNil(t, blend, src)
	require.NotRegexp(t, highVector, blend[1], "a VEX-only instruction got a high register")

	_, err = emit(false)
	require.ErrorContains(t, err, "failed to allocate registers")
}
