package gen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/runtime/golden"
)

// smallSums is a small pass of sums (asmgen's sumsInRegs): the valid elements' count over
// everything and each row's masked sum of x, and a mean of x; a row is 9 full blocks and a
// tail, so the partials are flushed inside the loop, after it and after the tail.
func smallSums(dt ir.DType) *ir.Graph {
	dims := []ir.Dim{{Name: "B", Size: 3}, {Name: "L", Size: 77}}
	b := ir.NewBuilder(dt, dims, []string{"B", "L"})
	m := b.Input(ir.Input{Key: "m", Name: "m", Kind: ir.Bool, Shape: b.Shape("B", "L")})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "L")})
	b.Output("count", b.Sum(b.Where(m, b.Const(1), b.Const(0)), "B", "L"), ir.Metric, "", "")
	b.Output("row_sum", b.Sum(b.Where(m, x, b.Const(0)), "L"), ir.Metric, "", "")
	b.Output("mean", b.Mean(x, "B", "L"), ir.Metric, "", "")
	return b.Graph()
}

// A small float32 pass holds its partial sums in registers through the loop over full
// blocks: the loop never reads or writes the state buffer. A partial that overflows in its
// register still sends the pass to the Go kernel (lane 0 of row 1 adds 2e38 twice, then
// −3e38: the float64 sum is 1e38), and ordinary inputs do not.
func TestSumsInRegisters(t *testing.T) {
	eachDType(t, func(t *testing.T, dt ir.DType) {
		s := graphAsm(t, smallSums(dt), "sums")
		loop := regexp.MustCompile(`(?s)TEXT ·pass0AVX2.*?\nblocks_\d+:(.*?)\n\t(JNZ +noflush|JL +blocks)`).FindStringSubmatch(s)
		require.NotNil(t, loop, "pass 0's block loop")
		if dt == ir.F32 {
			require.NotContains(t, loop[1], "state+", "the sums' states stay in registers")
		} else {
			require.Contains(t, loop[1], "state+", "float64 sums have no partials")
		}
		overflow := func(g *ir.Graph, seed uint64) map[string]golden.Array {
			in := zooInputs(g, seed)
			if seed == 3 {
				for i, v := range map[int]float64{77: 2e38, 77 + 8: 2e38, 77 + 16: -3e38} {
					switch x := in["x"].Data.(type) {
					case []float32:
						x[i] = float32(v)
					case []float64:
						x[i] = v
					}
					switch m := in["m"].Data.(type) {
					case []bool:
						m[i] = true
					case []float64:
						m[i] = 1
					case []float32:
						m[i] = 1
					}
				}
			}
			return in
		}
		zooRunWith(t, smallSums(dt), "default", overflow)
		zooRunWith(t, smallSums(dt), "go", overflow)
		if dt == ir.F64 || !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
			return
		}
		m, err := runner.NewTestModule(compiledGraph(t, smallSums(dt), "sums"))
		require.NoError(t, err)
		defer m.Close()
		require.NoError(t, os.WriteFile(filepath.Join(m.Dir, "kernel", "sumsprobe_test.go"), []byte(sumsProbe), 0o644))
		out, err := m.Test("^TestSumsProbe$")
		require.NoError(t, err, out)
		require.Contains(t, out, "--- PASS: TestSumsProbe")
	})
}

// sumsProbe runs the AVX2 kernel inside the package and asserts when it falls back.
var sumsProbe = fmt.Sprintf(`package sums

import "testing"

func TestSumsProbe(t *testing.T) {
	if Implementation() != "avx2" {
		t.Skip("the AVX2 kernels do not run here")
	}
	for _, overflow := range []bool{false, true} {
		in := *randomInputs(1)
		if overflow {
			in.X[77], in.X[77+8], in.X[77+16] = 2e38, 2e38, -3e38
			in.M[77], in.M[77+8], in.M[77+16] = true, true, true
		}
		avx2Fallbacks.Store(0)
		out := NewOutputs()
		if err := Forward(&in, out); err != nil {
			t.Fatal(err)
		}
		if fell := avx2Fallbacks.Load() != 0; fell != overflow {
			t.Errorf("overflow %%v: fell back %%v", overflow, fell)
		}
		if overflow && (out.RowSum[1] < 0.99e38 || out.RowSum[1] > 1.01e38) {
			t.Errorf("row 1's sum %%v, want ≈ 1e38", out.RowSum[1])
		}
	}
}
`)
