package asmgen

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// bulkFuncs are the vector math functions exposed for the accuracy tests, by IR op name.
var bulkFuncs = []struct {
	name string
	fn   func(a *asm, x reg.VecVirtual) reg.VecVirtual
}{
	{"exp", (*asm).expf},
	{"log", (*asm).logf},
	{"log1p", (*asm).log1pf},
}

// bulkName is the Go name of the bulk function for op ("expAVX2").
func bulkName(op string) string { return op + "AVX2" }

// emitBulk emits func <op>AVX2(dst, src *T, n int): dst[i] = op(src[i]) for n a multiple of
// the lane count. The generated tests sweep the input range through it.
func (a *asm) emitBulk(name string, fn func(a *asm, x reg.VecVirtual) reg.VecVirtual) {
	c := a.c
	elem := "float32"
	if a.f64 {
		elem = "float64"
	}
	c.Function(bulkName(name))
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.SignatureExpr(fmt.Sprintf("func(dst, src *%s, n int)", elem))
	c.Doc(fmt.Sprintf("%s computes dst[i] = %s(src[i]) for i < n, n a multiple of %d (the AVX2 kernels' %s).", bulkName(name), name, a.lanes(), name))
	dst := c.Load(c.Param("dst"), a.gp())
	src := c.Load(c.Param("src"), a.gp())
	n := c.Load(c.Param("n"), a.gp())
	size := 4
	if a.f64 {
		size = 8
	}
	i := a.gp()
	c.XORQ(i, i)
	loop, done := a.newLabel("bulk"), a.newLabel("bulkdone")
	c.Label(loop)
	c.CMPQ(i, n)
	c.JGE(operand.LabelRef(done))
	x := a.ymm()
	a.mov(operand.Mem{Base: src, Index: i, Scale: uint8(size)}, x)
	y := fn(a, x)
	a.mov(y, operand.Mem{Base: dst, Index: i, Scale: uint8(size)})
	c.ADDQ(operand.I32(int32(a.lanes())), i)
	c.JMP(operand.LabelRef(loop))
	c.Label(done)
	c.VZEROUPPER()
	c.RET()
}
