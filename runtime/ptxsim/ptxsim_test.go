package ptxsim

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lossgen/lossgen/runtime/internal/check"
)

// kernel wraps a body in a module with one kernel "k" taking params out (and in), with the
// registers the bodies below use.
func kernel(body string, shared bool) string {
	sh := ""
	if shared {
		sh = "\t.shared .align 8 .b8 k_red[1024];\n"
	}
	return `.version 7.0
.target sm_80
.address_size 64
.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1
)
{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.reg .f32 %f<8>;
	.reg .f64 %fd<8>;
` + sh + `	ld.param.u64 %rd0, [k_param_0];
	cvta.to.global.u64 %rd0, %rd0;
	ld.param.u64 %rd1, [k_param_1];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mad.lo.s32 %r3, %r1, %r2, %r0;
` + body + `
	ret;
}
`
}

// launch runs k over grid×block threads with an output of n uint32 words and an input of
// in, and returns the output words.
func launch(t *testing.T, src string, grid, block, n int, in []uint32) ([]uint32, error) {
	t.Helper()
	m, err := Parse(src)
	check.NoError(t, err)
	d := NewDevice()
	d.Load(m)
	out := d.Alloc("out", 4*n)
	inp := d.Alloc("in", 4*max(1, len(in)))
	for i, v := range in {
		binary.LittleEndian.PutUint32(d.Bytes(inp)[4*i:], v)
	}
	_, err = d.Launch(m, "k", grid, block, []uint64{out, inp})
	words := make([]uint32, n)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(d.Bytes(out)[4*i:])
	}
	return words, err
}

func TestThreadIndices(t *testing.T) {
	// out[gid] = 1000·ctaid + tid, for 2 blocks of 64 threads.
	src := kernel(`	mad.lo.s32 %r4, %r1, 1000, %r0;
	mad.wide.u32 %rd2, %r3, 4, %rd0;
	st.global.u32 [%rd2], %r4;`, false)
	got, err := launch(t, src, 2, 64, 128, nil)
	check.NoError(t, err)
	for g, v := range got {
		check.Equal(t, uint32(1000*(g/64)+g%64), v, "thread %d", g)
	}
}

func TestShuffleDown(t *testing.T) {
	// out[tid] = tid of lane+5 in the same warp (its own where lane+5 > 31), plus 100 when
	// the source lane was in range (the |p predicate).
	src := kernel(`	shfl.sync.down.b32 %r4|%p0, %r0, 5, 31, 0xffffffff;
	selp.s32 %r5, 100, 0, %p0;
	add.s32 %r4, %r4, %r5;
	mad.wide.u32 %rd2, %r3, 4, %rd0;
	st.global.u32 [%rd2], %r4;`, false)
	got, err := launch(t, src, 1, 64, 64, nil)
	check.NoError(t, err)
	for g, v := range got {
		want := uint32(g) // the thread's own tid
		if g%32+5 <= 31 {
			want = uint32(g+5) + 100
		}
		check.Equal(t, want, v, "thread %d", g)
	}
}

const neighbour = `	mov.u64 %rd3, k_red;
	mad.wide.u32 %rd4, %r0, 4, %rd3;
	st.shared.u32 [%rd4], %r0;
	BARRIER
	add.s32 %r5, %r0, 1;
	rem.u32 %r5, %r5, 64;
	mad.wide.u32 %rd5, %r5, 4, %rd3;
	ld.shared.u32 %r6, [%rd5];
	mad.wide.u32 %rd2, %r3, 4, %rd0;
	st.global.u32 [%rd2], %r6;`

func TestSharedMemoryAndBarrier(t *testing.T) {
	// Each thread writes its tid to shared memory and, after the barrier, reads its
	// neighbour's.
	got, err := launch(t, kernel(strings.Replace(neighbour, "BARRIER", "bar.sync 0;", 1), true), 2, 64, 128, nil)
	check.NoError(t, err)
	for g, v := range got {
		check.Equal(t, uint32((g%64+1)%64), v, "thread %d", g)
	}
}

func TestSharedMemoryRace(t *testing.T) {
	// Without the barrier the neighbour's word is read while another thread owns it: the
	// simulator reports the race rather than returning whatever its schedule gives.
	_, err := launch(t, kernel(strings.Replace(neighbour, "BARRIER", "", 1), true), 1, 64, 64, nil)
	check.ErrorContains(t, err, "shared-memory race")
}

func TestGlobalRace(t *testing.T) {
	// Every thread writes out[0]: a race between threads of one launch.
	src := kernel(`	st.global.u32 [%rd0], %r3;`, false)
	_, err := launch(t, src, 1, 32, 1, nil)
	check.ErrorContains(t, err, "global-memory race")
}

func TestOutOfBounds(t *testing.T) {
	src := kernel(`	mad.wide.u32 %rd2, %r3, 4, %rd0;
	st.global.u32 [%rd2], %r3;`, false)
	_, err := launch(t, src, 1, 64, 63, nil) // 64 threads, 63 words
	check.ErrorContains(t, err, "out-of-bounds global access")
}

func TestDivergentBarrier(t *testing.T) {
	// Threads 0–31 return early; the others wait at a barrier that can never complete.
	src := kernel(`	setp.lt.u32 %p0, %r0, 32;
	@%p0 bra $L_out;
	bar.sync 0;
$L_out:`, false)
	_, err := launch(t, src, 1, 64, 1, nil)
	check.ErrorContains(t, err, "bar.sync")
}

func TestRejects(t *testing.T) {
	for name, tc := range map[string]struct{ body, err string }{
		"undeclared register": {"\tadd.s32 %r99, %r0, 1;", "register %r99 is not declared"},
		"wrong width":         {"\tadd.f64 %fd0, %f0, %f1;", "register %f0 (32 bits) used as a 64-bit operand"},
		"float into address":  {"\tst.global.u32 [%r4], %r3;", "register %r4 (32 bits) used as a 64-bit operand"},
		"undeclared guard":    {"\t@%q0 ret;", "not a declared predicate"},
		"undefined label":     {"\tbra $L_nowhere;", "undefined label"},
	} {
		_, err := Parse(kernel(tc.body, false))
		check.ErrorContains(t, err, tc.err, name)
		check.ErrorContains(t, err, "ptx line ", name)
	}
	// An instruction outside the emitted subset parses but fails when it runs, naming its line.
	src := kernel("\tpopc.b32 %r4, %r0;", false)
	_, err := launch(t, src, 1, 32, 1, nil)
	check.ErrorContains(t, err, "unsupported instruction popc.b32")
	check.ErrorContains(t, err, "line 22")
}

// TestFloatSemantics checks PTX's rounding and NaN rules on hand-picked operands.
func TestFloatSemantics(t *testing.T) {
	f := math.Float32bits
	nan := f(float32(math.NaN()))
	// out[0..5] = min(x0,x1), min.NaN(x0,x1), cvt.rni(x2), cvt.rni.s32(x3), fma(x4,x5,x6), x4*x5+x6 (two roundings)
	src := kernel(`	ld.global.f32 %f0, [%rd1];
	ld.global.f32 %f1, [%rd1+4];
	min.f32 %f2, %f0, %f1;
	st.global.f32 [%rd0], %f2;
	min.NaN.f32 %f2, %f0, %f1;
	st.global.f32 [%rd0+4], %f2;
	ld.global.f32 %f3, [%rd1+8];
	cvt.rni.f32.f32 %f3, %f3;
	st.global.f32 [%rd0+8], %f3;
	ld.global.f32 %f3, [%rd1+12];
	cvt.rni.s32.f32 %r4, %f3;
	st.global.u32 [%rd0+12], %r4;
	ld.global.f32 %f4, [%rd1+16];
	ld.global.f32 %f5, [%rd1+20];
	ld.global.f32 %f6, [%rd1+24];
	fma.rn.f32 %f7, %f4, %f5, %f6;
	st.global.f32 [%rd0+16], %f7;
	mul.rn.f32 %f7, %f4, %f5;
	add.rn.f32 %f7, %f7, %f6;
	st.global.f32 [%rd0+20], %f7;
	setp.ne.f32 %p2, %f0, %f1;
	selp.s32 %r5, 1, 0, %p2;
	st.global.u32 [%rd0+24], %r5;
	setp.neu.f32 %p2, %f0, %f1;
	selp.s32 %r5, 1, 0, %p2;
	st.global.u32 [%rd0+28], %r5;
	cvt.rni.s32.f32 %r6, %f0;
	st.global.u32 [%rd0+32], %r6;
	cvt.f64.f32 %fd0, %f0;
	cvt.rni.s32.f64 %r6, %fd0;
	st.global.u32 [%rd0+36], %r6;`, false)
	a := float32(1 + 0x1p-12)
	in := []uint32{nan, f(2), f(2.5), f(-3.5), f(a), f(a), f(-1)}
	// Only thread 0 may write (the others would race on out): use one warp and guard.
	src = strings.Replace(src, "\tld.global.f32 %f0, [%rd1];", "\tsetp.eq.u32 %p1, %r3, 0;\n\t@!%p1 bra $L_end;\n\tld.global.f32 %f0, [%rd1];", 1)
	src = strings.Replace(src, "\tret;", "$L_end:\n\tret;", 1)
	got, err := launch(t, src, 1, 32, 10, in)
	check.NoError(t, err)
	check.Equal(t, float32(2), math.Float32frombits(got[0]), "min returns the non-NaN operand")
	check.True(t, math.IsNaN(float64(math.Float32frombits(got[1]))), "min.NaN propagates NaN")
	check.Equal(t, float32(2), math.Float32frombits(got[2]), "rni rounds half to even")
	check.Equal(t, int32(-4), int32(got[3]), "rni rounds half to even")
	check.Equal(t, float32(0x1p-11+0x1p-24), math.Float32frombits(got[4]), "fma rounds once")
	check.Equal(t, float32(0x1p-11), math.Float32frombits(got[5]), "mul then add rounds twice")
	check.Equal(t, uint32(0), got[6], "setp.ne is ordered: false on NaN")
	check.Equal(t, uint32(1), got[7], "setp.neu is unordered: true on NaN")
	// PTX ISA, cvt, Integer Notes: a NaN converts to 0 from an .f32 source, to MININT from an
	// .f64 one (the simulator gave 0 for both).
	check.Equal(t, uint32(0), got[8], "cvt.rni.s32.f32 of NaN")
	check.Equal(t, uint32(0x80000000), got[9], "cvt.rni.s32.f64 of NaN")
}

// TestFMA32 compares fma32 with a·b + c computed exactly (big.Float) and rounded once to
// float32, on random operands chosen so that the sum often cancels or lands near a tie.
func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	exact := func(a, b, c float32) float32 {
		p := new(big.Float).SetPrec(200).Mul(big.NewFloat(float64(a)), big.NewFloat(float64(b)))
		s := new(big.Float).SetPrec(200).Add(p, big.NewFloat(float64(c)))
		v, _ := s.Float32()
		return v
	}
	for i := 0; i < 200000; i++ {
		a := math.Float32frombits(r.Uint32() & 0x3fffffff) // finite, moderate exponents
		b := math.Float32frombits(r.Uint32() & 0x3fffffff)
		var c float32
		switch i % 4 {
		case 0:
			c = -float32(float64(a) * float64(b)) // cancellation
		case 1: // c makes the sum a near-tie at float32 precision
			c = math.Float32frombits(math.Float32bits(-float32(float64(a)*float64(b))) ^ 1)
		case 2: // a·b = ±ulp(c)/2·(1 − 2^-46): the float64 sum is exactly a float32 tie
			// and rounding it again goes the wrong way for half of these
			c = math.Float32frombits(r.Uint32()&0x3fffffff | 0x00800000)
			u := math.Nextafter32(c, float32(math.Inf(1))) - c
			a = 1 + 0x1p-23
			b = u / 2 * (1 - 0x1p-23)
			if r.IntN(2) == 0 {
				b = -b
			}
		default:
			c = math.Float32frombits(r.Uint32() & 0x3fffffff)
		}
		if got, want := fma32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
			t.Fatalf("fma32(%v, %v, %v) = %v, want %v", a, b, c, got, want)
		}
	}
	// At the overflow threshold: a·b = 2^128 − 2^103, exactly halfway between MaxFloat32 and
	// 2^128, so c's sign decides (a tie overflows: MaxFloat32's significand is odd). fma32 gave
	// +Inf below the midpoint (the PTX review).
	for _, a := range []float32{18631, -18631} {
		b := float32(1801 * 0x1p103)
		for _, c := range []float32{-1, 0, 1, -0x1p80, 0x1p80} {
			if got, want := fma32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("fma32(%v, %v, %v) = %v, want %v", a, b, c, got, want)
			}
		}
	}
}

// A kernel declaring .reqntid runs only with that block size: ptxgen's kernels bake their
// launch block into the code (warp slots of shared memory, strides), and a GPU fails a launch
// that differs, so the simulator does too (the PTX review).
func TestReqNtid(t *testing.T) {
	src := strings.Replace(kernel("\tmad.wide.u32 %rd2, %r3, 4, %rd0;\n\tst.global.u32 [%rd2], %r0;", false), ")\n{", ")\n.reqntid 64\n{", 1)
	m, err := Parse(src)
	check.NoError(t, err)
	check.Equal(t, 64, m.Kernels["k"].ReqNtid)
	_, err = launch(t, src, 1, 32, 32, nil)
	check.ErrorContains(t, err, "its .reqntid is 64")
	_, err = launch(t, src, 1, 64, 64, nil)
	check.NoError(t, err)
	_, err = Parse(strings.Replace(src, ".reqntid 64", ".reqntid 0", 1))
	check.ErrorContains(t, err, "bad .reqntid")
}
