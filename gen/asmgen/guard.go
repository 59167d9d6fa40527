package asmgen

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// The overflow guard. Two things the AVX2 kernels compute in another order than the Go
// kernel can overflow where the Go kernel does not, or the other way round: the scan along
// the vector axis, which composes a block's steps (its partial sums are not the Go
// recursion's), and float32 partial sums, which the Go kernel adds in float64. So that NaN
// and ±Inf land on the same elements on every backend, such a pass keeps one mask per lane
// in its state buffer ("pN_ok"), set by the glue before the kernel runs and cleared in a lane
// whose values leave the range where both orders are provably finite; the glue then reruns
// the pass with the Go kernel, as it does for logsumexp's guard. Inside the range nothing
// overflows either way, so the only cost on ordinary data is the test.

// guardField names pass ps's overflow guard in the state buffer.
func guardField(ps *plan.Pass) string { return fmt.Sprintf("p%d_ok", ps.Index) }

// needsGuard reports whether pg's pass has a scan along its vector axis or float32 partial
// sums.
func (pg *passGen) needsGuard() bool {
	for _, n := range pg.ps.Compute {
		if n.Op == ir.OpScan && n.Axes[0] == pg.vaxis() {
			return true
		}
	}
	return pg.hasPartials()
}

// scanBound is the largest |x| of a scan along the vector axis, over rows of n steps, for
// which neither order can overflow while every |c| ≤ 1 (c ≤ 1 is what makes an error or a
// value grow at most linearly along the row). Each step of the Go recursion rounds twice, so
// its values stay within n·scanBound·(1+ε)^(2n); the AVX2 kernel's partial sums, with fewer
// roundings per step, within the same. The bound keeps that below 2^−3 of the largest
// finite value (2^128 in float32, 2^1024 in float64), with (1+ε)^(4n) ≤ 2^⌈4nε·log2 e⌉
// leaving room for coefficients one ulp above 1 in the Go kernel (the kernels' exp may
// differ by an ulp). Rows so long that no bound is left get 0: every nonzero x then runs the
// Go recursion.
func (pg *passGen) scanBound(n int) float64 {
	maxExp, minExp, eps := 128, -126, 0x1p-24
	if pg.f64 {
		maxExp, minExp, eps = 1024, -1022, 0x1p-53
	}
	e := maxExp - 3 - bits.Len(uint(n)) - int(math.Ceil(4*float64(n)*eps*math.Log2E))
	if e < minExp {
		return 0
	}
	return math.Ldexp(1, e)
}

// absMask is the constant that clears the sign bit of every lane.
func (pg *passGen) absMask() operand.Mem {
	if pg.f64 {
		return pg.cq(math.MaxInt64)
	}
	return pg.cd(math.MaxInt32)
}

// finiteWithin sets m to the lanes where |x| ≤ bound or x is not finite. A NaN or ±inf
// input reaches the same elements of a scan in the composed order as in the Go recursion:
// a product of coefficients that are 0 (a cut, ir.OpScan) or at least tinyCoef in
// magnitude is 0 exactly where one of them is, and the composed order only regroups the
// sums, so a NaN, an inf, or infs of both signs land alike; finite values are what the bound
// is for.
func (pg *passGen) finiteWithin(x reg.VecVirtual, bound float64, m reg.VecVirtual) {
	a, inf := pg.ymm(), pg.ymm()
	pg.and(pg.absMask(), x, a)
	pg.cmp(cmpNGT_UQ, pg.cf(bound), a, m)
	pg.cmp(cmpEQ_OQ, pg.cf(math.Inf(1)), a, inf)
	pg.or(inf, m, m)
}

// tinyCoef is the smallest nonzero |c| for which a block's product of coefficients cannot
// underflow to 0: tinyCoef^L is above the smallest subnormal (2^−149, 2^−1074).
func (pg *passGen) tinyCoef() float64 {
	if pg.f64 {
		return 0x1p-260
	}
	return 0x1p-18
}

// nonzeroFloor is a lower bound on the magnitude of n's nonzero values, by n's construction
// (constants, flags, 1 − flag, their products and selections): +inf when n is always 0, 0
// when unknown.
func nonzeroFloor(n *ir.Node) float64 {
	switch {
	case n.Op == ir.OpConst:
		lo := math.Inf(1)
		for _, v := range n.Value {
			if v != 0 {
				lo = min(lo, math.Abs(v)) // a NaN gives NaN, below any bound
			}
		}
		return lo
	case flag(n):
		return 1
	case n.Op == ir.OpSub && n.Args[0].Op == ir.OpConst && len(n.Args[0].Value) == 1 && n.Args[0].Value[0] == 1 && flag(n.Args[1]):
		return 1 // 1 − flag
	case n.Op == ir.OpMul:
		return nonzeroFloor(n.Args[0]) * nonzeroFloor(n.Args[1])
	case n.Op == ir.OpWhere:
		return min(nonzeroFloor(n.Args[1]), nonzeroFloor(n.Args[2]))
	}
	return 0
}

// flag reports whether n is 0 or 1: a bool input or a comparison.
func flag(n *ir.Node) bool {
	return (n.Op == ir.OpInput && n.Input.Kind == ir.Bool) || isBool(n)
}

// andGuard clears the pass's guard in the lanes where m is clear.
func (pg *passGen) andGuard(m reg.VecVirtual) {
	if pg.zmm { // the guard has 8 lanes: a lane of it stands for lanes i and i + 8 (16-lane code)
		m = pg.foldAnd(m)
		pg.inNarrow(func() { pg.andGuard(m) })
		return
	}
	if pg.stReg == nil {
		pg.stReg = pg.ptr("st", "*float64", "&st.buf[0]")
	}
	pg.andInto(operand.Mem{Base: pg.stReg, Disp: pg.e.stateAt[guardField(pg.ps)]}, m)
}

// andInto clears the lanes of the mask at mem where m is clear; m holds the result.
func (pg *passGen) andInto(mem operand.Mem, m reg.VecVirtual) {
	pg.and(mem, m, m)
	pg.mov(m, mem)
}

// unitCoef reports whether a scan's coefficients are provably within [−1, 1] (or NaN, which
// both orders propagate alike), by the value-range analysis (passes.ValueRange), so that the
// guard need not test them.
func (pg *passGen) unitCoef(scan *ir.Node) bool {
	return pg.e.g.Range(scan.Args[1]).Within(-1, 1)
}
