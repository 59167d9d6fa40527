package runtime

import (
	"math"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// The Finish functions merge the per-lane states that assembly kernels leave in float64
// arrays, for the reductions with hand-written lane code (their merges are faster forms of
// the reductions' descriptions in lossgen's ir.ReductionOf, and tested against them; the
// glue merges any other reduction's lanes with its description): slot k's lanes are st[k·lps : (k+1)·lps], and dst[k] receives the slot's result.
// Lanes are merged pairwise (0+1, 2+3, ..., then (0+1)+(2+3), ...), so the summation order is
// a balanced tree over the lanes after each lane's own sequential pass.

// Float is the element type of a lane state array.
type Float interface{ ~float32 | ~float64 }

// Fill sets every element of x to v.
func Fill[T Float](x []T, v T) {
	for i := range x {
		x[i] = v
	}
}

// pairwise merges xs[0..n) in a balanced tree with merge(a, b) -> a, in place.
func pairwise[T any](xs []T, merge func(a, b T) T) T {
	n := len(xs)
	for step := 1; step < n; step *= 2 {
		for i := 0; i+step < n; i += 2 * step {
			xs[i] = merge(xs[i], xs[i+step])
		}
	}
	return xs[0]
}

// FinishSum sets dst[k] to the sum of slot k's lanes.
func FinishSum(dst, s []float64, lps int) {
	var buf [8]float64
	for k := range dst {
		l := buf[:lps]
		copy(l, s[k*lps:])
		dst[k] = pairwise(l, func(a, b float64) float64 { return a + b })
	}
}

// FinishMean sets dst[k] to the sum of slot k's lanes divided by n, the slot's element count.
func FinishMean(dst, s []float64, lps int, n float64) {
	FinishSum(dst, s, lps)
	for k := range dst {
		dst[k] /= n
	}
}

// FinishMax sets dst[k] to the NaN-propagating maximum of slot k's lanes.
func FinishMax[T Float](dst []float64, m []T, lps int) { finishLanes(dst, m, lps, Max) }

// FinishMin sets dst[k] to the NaN-propagating minimum of slot k's lanes.
func FinishMin[T Float](dst []float64, m []T, lps int) { finishLanes(dst, m, lps, Min) }

// finishLanes sets dst[k] to slot k's lps lanes combined pairwise by f.
func finishLanes[T Float](dst []float64, m []T, lps int, f func(a, b float64) float64) {
	var buf [8]float64
	for k := range dst {
		l := buf[:lps]
		for i := range l {
			l[i] = float64(m[k*lps+i])
		}
		dst[k] = pairwise(l, f)
	}
}

// FinishSumLog sets dst[k] to log of the sum of slot k's lanes: the logsumexp of an assembly
// kernel's fast path, whose lanes summed e^x directly (see MaskSet).
func FinishSumLog(dst, s []float64, lps int) {
	FinishSum(dst, s, lps)
	for k := range dst {
		dst[k] = math.Log(dst[k])
	}
}

// SetMask sets every bit of every element of m: the identity of the bitwise AND in which an
// assembly kernel accumulates its lanes' compare masks (all ones where a test held).
func SetMask[T Float](m []T) {
	b := maskBytes(m)
	for i := range b {
		b[i] = 0xff
	}
}

// MaskSet reports whether every bit of every element of m is still set: the kernel's test
// held for every element it accumulated.
func MaskSet[T Float](m []T) bool {
	for _, b := range maskBytes(m) {
		if b != 0xff {
			return false
		}
	}
	return true
}

// maskBytes views m's memory as bytes: its elements are bit masks, not numbers.
func maskBytes[T Float](m []T) []byte {
	if len(m) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&m[0])), len(m)*int(unsafe.Sizeof(m[0])))
}

// Merge combines two Welford states (Chan, Golub and LeVeque's pairwise update).
func (a Welford) Merge(b Welford) Welford {
	switch {
	case a.N == 0:
		return b
	case b.N == 0:
		return a
	}
	n := a.N + b.N
	d := b.Mean - a.Mean
	return Welford{N: n, Mean: a.Mean + d*b.N/n, M2: a.M2 + b.M2 + d*d*a.N*b.N/n}
}

// FinishVar sets dst[k] to slot k's variance with the given correction.
func FinishVar(dst, n, mean, m2 []float64, lps, correction int) {
	var buf [8]Welford
	for k := range dst {
		l := buf[:lps]
		for i := range l {
			l[i] = Welford{N: n[k*lps+i], Mean: mean[k*lps+i], M2: m2[k*lps+i]}
		}
		w := pairwise(l, Welford.Merge)
		dst[k] = w.Var(correction)
	}
}

// FinishStd sets dst[k] to slot k's standard deviation with the given correction: the root of
// FinishVar's float64 variance (torch.std), so a float32 kernel's std stays finite where the
// variance alone would overflow float32.
func FinishStd(dst, n, mean, m2 []float64, lps, correction int) {
	FinishVar(dst, n, mean, m2, lps, correction)
	for k, v := range dst {
		dst[k] = math.Sqrt(v)
	}
}

// FinishArgMax sets dst[k] to the first index of slot k's maximum (a NaN counting as the
// maximum), from its lanes' (best value, index).
func FinishArgMax[T Float](dst []float64, best []T, idx []float64, lps int) {
	for k := range dst {
		b, ix := math.Inf(-1), math.Inf(1)
		for i := 0; i < lps; i++ {
			x, j := float64(best[k*lps+i]), idx[k*lps+i]
			switch {
			case b != b: // a NaN already: only an earlier NaN wins
				if x != x && j < ix {
					ix = j
				}
			case x != x || x > b || (x == b && j < ix):
				b, ix = x, j
			}
		}
		if math.IsInf(ix, 1) {
			ix = 0
		}
		dst[k] = ix
	}
}

var pureGo = sync.OnceValue(func() bool { return envOn(os.Getenv("LOSSGEN_PUREGO")) })

// envOn reports whether an environment switch's value turns it on: any value but empty, the
// false ones strconv.ParseBool reads (0, f, F, false, False, FALSE) and off or no in any case
// (what a user types to turn a switch off, though ParseBool does not read them), spaces
// around it ignored.
func envOn(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || strings.EqualFold(v, "off") || strings.EqualFold(v, "no") {
		return false
	}
	on, err := strconv.ParseBool(v)
	return err != nil || on
}

// PureGo reports whether LOSSGEN_PUREGO is set to anything but a false value (0, false, off,
// no: envOn): generated packages then keep their pure-Go kernels even
// where an assembly backend could run (the purego build tag does the same at build time).
func PureGo() bool { return pureGo() }

// Row chunks: a large pass whose reductions all reduce over its first dim runs as a fixed
// number of chunks of rows, each with its own lane states, concurrently; the states are then
// merged in chunk order. The chunk count is fixed when the package is generated, so the
// result does not depend on the machine or on GOMAXPROCS.

// ForChunks runs fn(c, lo, hi) for chunks c = 0..n-1 of rows [0, rows): chunk c has rows
// [c·rows/n, (c+1)·rows/n). The chunks run concurrently; it returns when all are done.
//
// With GOMAXPROCS 1 the chunks run in order on the caller; otherwise on the caller and the
// chunk pool's workers (pool.go), or, while another call holds the pool, on goroutines of
// their own.
func ForChunks(n, rows int, fn func(c, lo, hi int)) {
	procs := goruntime.GOMAXPROCS(0)
	if procs == 1 || n <= 1 {
		for c := range n {
			fn(c, c*rows/n, (c+1)*rows/n)
		}
		return
	}
	if forChunksPooled(n, rows, fn, procs) {
		return
	}
	var wg sync.WaitGroup
	for c := 1; c < n; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(c, c*rows/n, (c+1)*rows/n)
		}()
	}
	fn(0, 0, rows/n)
	wg.Wait()
}

// ForBlockChunks is ForChunks over size indices cut only at multiples of align (whole
// vector blocks of a flat batch): chunk c of n has units [c·u/n, (c+1)·u/n) of the
// u = size/align units, times align; the last chunk also has the size%align tail. It needs
// n ≤ u.
func ForBlockChunks(n, size, align int, fn func(c, lo, hi int)) {
	ForChunks(n, size/align, func(c, lo, hi int) {
		end := hi * align
		if c == n-1 {
			end = size
		}
		fn(c, lo*align, end)
	})
}

// MergeSum adds src's lane sums into dst's (the same layout).
func MergeSum(dst, src []float64) {
	for i, v := range src {
		dst[i] += v
	}
}

// MergeVar merges the Welford states (n2, mean2, m22) into (n, mean, m2), lane by lane, with
// Chan, Golub and LeVeque's pairwise update; the states before them come first.
func MergeVar(n, mean, m2, n2, mean2, m22 []float64) {
	for i := range n {
		w := Welford{N: n[i], Mean: mean[i], M2: m2[i]}.Merge(Welford{N: n2[i], Mean: mean2[i], M2: m22[i]})
		n[i], mean[i], m2[i] = w.N, w.Mean, w.M2
	}
}

// MergeMask ANDs src's lane masks into dst's (see MaskSet).
func MergeMask[T Float](dst, src []T) {
	d, s := maskBytes(dst), maskBytes(src)
	for i := range d {
		d[i] &= s[i]
	}
}
