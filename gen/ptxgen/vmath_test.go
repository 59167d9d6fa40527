package ptxgen

import (
	"encoding/binary"
	"flag"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/runtime/ptxsim"
	"github.com/lossgen/lossgen/runtime/vmath"
)

var sweepPoints = flag.Int("ulp.points", 1<<16, "inputs per function for TestVectorMathULP (float32: spread over all bit patterns)")

// maxULP bounds the PTX exp, log and log1p against runtime/vmath's references, per element type.
// Measured with -ulp.points=16777216 (2^24 float32 bit patterns; 2^24 float64 inputs): 1 ulp
// for every float32 function, 2 ulp for float64 exp, 1 for float64 log and log1p — the same
// as the AVX2 kernels, whose polynomials these are.
var maxULP = map[bool]map[string]float64{
	false: {"exp": 1, "log": 1, "log1p": 1},
	true:  {"exp": 2, "log": 1, "log1p": 1},
}

// vmathModule is a PTX module with one kernel per function (exp, log, log1p) mapping
// x[i] to y[i] for i < n, one thread per element.
func vmathModule(t *testing.T, f64 bool, n int) []byte {
	var views []kernelView
	for _, name := range []string{"exp", "log", "log1p"} {
		k := newKernel(name, f64)
		x, y := k.param("in/x"), k.param("out/y")
		tid, ctaid, ntid, g := k.r32(), k.r32(), k.r32(), k.r32()
		k.op("mov.u32 %s, %%tid.x", tid)
		k.op("mov.u32 %s, %%ctaid.x", ctaid)
		k.op("mov.u32 %s, %%ntid.x", ntid)
		k.op("mad.lo.s32 %s, %s, %s, %s", g, ctaid, ntid, tid)
		done := k.newLabel("done")
		p := k.pred()
		k.op("setp.ge.u32 %s, %s, %d", p, g, n)
		k.op("@%s bra %s", p, done)
		size := 4
		if f64 {
			size = 8
		}
		v := k.el()
		k.op("ld.global.%s %s, [%s]", k.t(), v, k.addr(x, g, size))
		var r string
		switch name {
		case "exp":
			r = k.expEl(v)
		case "log":
			r = k.logEl(v)
		default:
			r = k.log1pEl(v)
		}
		k.op("st.global.%s [%s], %s", k.t(), k.addr(y, g, size), r)
		k.label(done)
		k.op("ret")
		k.finish()
		views = append(views, view(k, 256, name, nil))
	}
	src, err := render(moduleView{Header: "vmath test", Package: "vmath", DType: "test", Kernels: views})
	require.NoError(t, err)
	return src
}

// TestVectorMathULP runs the PTX exp, log and log1p in the simulator over a sweep of inputs
// (runtime/vmath's, with the special values) and asserts each stays within maxULP.
func TestVectorMathULP(t *testing.T) {
	refs := map[string]func(float64) float64{"exp": vmath.Exp, "log": vmath.Log, "log1p": vmath.Log1p}
	for _, f64 := range []bool{false, true} {
		var xs []float64
		size := 4
		if f64 {
			size = 8
			xs = vmath.Sweep64(*sweepPoints)
		} else {
			for _, x := range vmath.Sweep32(max(1, (1<<32)/uint64(*sweepPoints))) {
				xs = append(xs, float64(x))
			}
		}
		m, err := ptxsim.Parse(string(vmathModule(t, f64, len(xs))))
		require.NoError(t, err)
		d := ptxsim.NewDevice()
		d.Load(m)
		in, out := d.Alloc("x", len(xs)*size), d.Alloc("y", len(xs)*size)
		for i, x := range xs {
			if f64 {
				binary.LittleEndian.PutUint64(d.Bytes(in)[8*i:], math.Float64bits(x))
			} else {
				binary.LittleEndian.PutUint32(d.Bytes(in)[4*i:], math.Float32bits(float32(x)))
			}
		}
		for _, name := range []string{"exp", "log", "log1p"} {
			_, err := d.Launch(m, name, (len(xs)+255)/256, 256, []uint64{in, out})
			require.NoError(t, err)
			worst, at := 0.0, 0.0
			for i, x := range xs {
				var u float64
				if f64 {
					u = vmath.ULP64(math.Float64frombits(binary.LittleEndian.Uint64(d.Bytes(out)[8*i:])), refs[name](x))
				} else {
					u = vmath.ULP32(math.Float32frombits(binary.LittleEndian.Uint32(d.Bytes(out)[4*i:])), float32(refs[name](x)))
				}
				if u > worst {
					worst, at = u, x
				}
			}
			t.Logf("float64=%v %s: max error %v ulp (at %v) over %d inputs", f64, name, worst, at, len(xs))
			if worst > maxULP[f64][name] {
				t.Errorf("float64=%v %s: %v ulp at %v exceeds the bound of %v ulp", f64, name, worst, at, maxULP[f64][name])
			}
		}
	}
}
