package gen_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/runner"
)

// foldSums sums x over each row and over everything, scaled by powers of two (exact), so
// that one pass holds sums in registers (the first three) and in memory (the others).
func foldSums() *ir.Graph {
	dims := []ir.Dim{{Name: "B", Size: 3}, {Name: "L", Size: 96}}
	b := ir.NewBuilder(ir.F32, dims, []string{"B", "L"})
	x := b.Input(ir.Input{Key: "x", Name: "x", Kind: ir.Float, Shape: b.Shape("B", "L")})
	for k, name := range []string{"s1", "s2", "s4", "s8", "s16"} {
		b.Output(name, b.Sum(b.Mul(x, b.Const(float64(int(1)<<k))), "L"), ir.Metric, "", "")
	}
	b.Output("total", b.Sum(x, "B", "L"), ir.Metric, "", "")
	return b.Graph()
}

// The 16-lane AVX-512 variant of a pass folds each 16-lane block into the 8-lane float32
// partial sums as the AVX2 pass does, lanes 0–7 first, and flushes them into the float64 sums
// after the same 8 blocks. Each lane of a row sees, block by block, 1, 0, 2^24 and nine 1s,
// which float32 partials added in that order round to 2^24 by the 8th block (2^24 + 1 is a
// tie, to even), flushed, then 4: a row's sum over its 8 lanes is 8·(2^24 + 4) in both
// variants. Each pair of blocks the other way round would give 8·(2^24 + 8), no flush inside
// the row 8·2^24 (and the Go kernel's float64 sums 8·(2^24 + 10), within its tolerance).
func TestAVX512FoldsInAVX2Order(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	c := compiledGraph(t, foldSums(), "fold")
	files, err := gen.Emit(c, gen.Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	require.Contains(t, string(files["kernels_avx512_amd64.s"]), "TEXT ·pass0AVX512(SB)")
	if !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512DQ || !cpu.X86.HasAVX512VL || !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("no AVX-512 here")
	}
	m, err := runner.NewTestModule(c)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, os.WriteFile(filepath.Join(m.Dir, "kernel", "foldprobe_test.go"), []byte(foldProbe), 0o644))
	out, err := m.Test("^TestFoldProbe$")
	require.NoError(t, err, out)
	require.Contains(t, out, "--- PASS: TestFoldProbe")
}

var foldProbe = `package fold

import "testing"

func TestFoldProbe(t *testing.T) {
	if !useAVX512 {
		t.Fatal("the AVX-512 variants do not run here")
	}
	defer func() { useAVX512 = true }()
	in := *randomInputs(1)
	for i := range in.X {
		in.X[i] = 1
		switch i % 96 / 8 {
		case 1:
			in.X[i] = 0
		case 2:
			in.X[i] = 1 << 24
		}
	}
	for _, wide := range []bool{false, true} {
		useAVX512 = wide
		out := NewOutputs()
		if err := Forward(&in, out); err != nil {
			t.Fatal(err)
		}
		for k, s := range [][]float32{out.S1, out.S2, out.S4, out.S8, out.S16} {
			for b, v := range s {
				if want := float32(8*(1<<24+4)) * float32(int(1)<<k); v != want {
					t.Errorf("AVX-512 %v: row %d of s%d = %v, want %v", wide, b, 1<<k, v, want)
				}
			}
		}
		if want := float32(3 * 8 * (1<<24 + 4)); out.Total != want {
			t.Errorf("AVX-512 %v: total = %v, want %v", wide, out.Total, want)
		}
	}
}
`
