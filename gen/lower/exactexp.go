package lower

import (
	"math"
	"math/big"
)

// expRounded is e^x correctly rounded to float64: the sum of the Taylor series in 256-bit
// arithmetic, rounded once. A kernel compares exp(lw) with these exponentials of its clip
// bounds (clippedGain), so they must not be an ulp off: Go's math.Exp gives
// e^log1p(0.05) one ulp low (1.0500000001285479, not 1.050000000128548), which clipped
// log-weights a few ulps past the bound whose exp TorchRL finds equal to the bound's.
func expRounded(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 700 {
		return math.Exp(x)
	}
	const prec = 256
	// e^x = (e^(x/2^k))^(2^k), with |x/2^k| < 1/2 so the series converges fast.
	k := 0
	for y := math.Abs(x); y >= 0.5; y /= 2 {
		k++
	}
	y := new(big.Float).SetPrec(prec).SetFloat64(x)
	y.SetMantExp(y, -k)
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	eps := new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(1), -prec-8)
	for n := int64(1); ; n++ {
		term.Mul(term, y)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(n))
		sum.Add(sum, term)
		if new(big.Float).Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	for range k {
		sum.Mul(sum, sum)
	}
	f, _ := sum.Float64()
	return f
}
