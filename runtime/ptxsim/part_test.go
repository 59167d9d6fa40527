package ptxsim

import (
	"errors"
	"testing"

	"github.com/lossgen/lossgen/runtime/internal/check"

	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
)

// loopBody has thread g (of grid×64) walk its row of 10: out[g, i] = 2·x[g, i] + x[0], for
// i = 0..9 (a batch loop, $L_loop_0), x being the input, or for a "dirty" table a scratch
// buffer no launch writes.
const loopBody = `	mov.u32 %r4, 0;
$L_loop_0:
	mad.lo.s32 %r5, %r3, 10, %r4;
	mad.wide.u32 %rd2, %r5, 4, %rd1;
	ld.global.f32 %f0, [%rd2];
	ld.global.f32 %f1, [%rd1+0];
	add.rn.f32 %f0, %f0, %f0;
	add.rn.f32 %f0, %f0, %f1;
	mad.wide.u32 %rd3, %r5, 4, %rd0;
	st.global.f32 [%rd3], %f0;
	add.s32 %r4, %r4, 1;
	setp.lt.s32 %p0, %r4, 10;
	@%p0 bra $L_loop_0;`

func loopTable(grid int, dirty bool) (string, runtime.LaunchTable, map[string]golden.Array) {
	n := grid * 64 * 10
	src := kernel(loopBody, false)
	in := "in/x"
	if dirty {
		in = "scratch/s"
	}
	t := runtime.LaunchTable{
		Buffers: []runtime.Buffer{
			{Name: "in/x", Role: "input", DType: "float32", Length: n, Shape: []int{grid * 64, 10}},
			{Name: "scratch/s", Role: "scratch", DType: "float32", Length: n, Shape: []int{n}},
			{Name: "out/y", Role: "output", DType: "float32", Length: n, Shape: []int{grid * 64, 10}},
		},
		Launches: []runtime.Launch{{Kernel: "k", Grid: [3]int{grid, 1, 1}, Block: [3]int{64, 1, 1}, Params: []string{"out/y", in}}},
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i % 97)
	}
	return src, t, map[string]golden.Array{"x": {Shape: []int{grid * 64, 10}, Data: x}}
}

// A partial simulation runs the first, middle and last blocks, each thread for MaxIter
// iterations of its batch loop, and returns exactly the elements those computed, with the
// whole simulation's bits.
func TestPartBlocksAndIterations(t *testing.T) {
	src, tb, in := loopTable(7, false)
	whole, err := Simulate(src, tb, in, Whole)
	check.NoError(t, err)
	check.Nil(t, whole.Outputs["y"].Index)
	part, err := Simulate(src, tb, in, Part{MaxIter: 3, Fill: 0xFF})
	check.NoError(t, err)
	check.Equal(t, int64(3), part.Stats.Blocks)
	check.Equal(t, int64(3*64), part.Stats.Cut)
	p := part.Outputs["y"]
	var want []int64
	for _, b := range []int{0, 3, 6} {
		for g := b * 64; g < (b+1)*64; g++ {
			for i := 0; i < 3; i++ {
				want = append(want, int64(g*10+i))
			}
		}
	}
	check.Equal(t, want, p.Index)
	for k, i := range p.Index {
		check.Equal(t, whole.Outputs["y"].Value[i], p.Value[k])
	}
	check.Equal(t, Coverage{N: len(want), Hash: p.Coverage().Hash}, p.Coverage())
	// A launch of at most three blocks runs whole; a loop shorter than MaxIter ends itself.
	part, err = Simulate(src, tb, in, Part{MaxIter: 20, Fill: 0xFF})
	check.NoError(t, err)
	check.Zero(t, part.Stats.Cut)
	check.Len(t, part.Outputs["y"].Index, 3*64*10)
}

// A value that depends on memory no simulated thread wrote is tainted, whatever its bits:
// it is not among the elements a part returns.
func TestPartTaint(t *testing.T) {
	src, tb, in := loopTable(2, true)
	part, err := Simulate(src, tb, in, Part{MaxIter: 5, Fill: 0})
	check.NoError(t, err)
	check.Empty(t, part.Outputs["y"].Index)
	check.Equal(t, 0, part.Outputs["y"].Coverage().N)
}

// A budget stops a simulation with ErrBudget.
func TestBudget(t *testing.T) {
	src, tb, in := loopTable(7, false)
	_, err := Simulate(src, tb, in, Part{Fill: 0xFF, Budget: 1000})
	check.True(t, errors.Is(err, ErrBudget), "%v", err)
}
