package lower

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// expRounded is correctly rounded: at log1p(±0.05) (the clip bounds of clip_epsilon 0.05,
// as float32) against the values mpmath and torch give, where Go's math.Exp is an ulp low;
// elsewhere within an ulp of math.Exp, and exact at 0.
func TestExpRounded(t *testing.T) {
	hi := float64(float32(math.Log1p(float64(float32(0.05)))))
	require.Equal(t, 1.050000000128548, expRounded(hi))
	require.Equal(t, 1.0500000001285479, math.Exp(hi), "Go's math.Exp is an ulp low here")
	require.Equal(t, 1.0, expRounded(0))
	for _, x := range []float64{-4.6, -0.2231435513, 0.1823215568, 1, 3.5, -30, 88.7} {
		got, want := expRounded(x), math.Exp(x)
		require.LessOrEqual(t, math.Abs(got-want), math.Abs(math.Nextafter(want, math.Inf(1))-want), "x = %v", x)
	}
}
