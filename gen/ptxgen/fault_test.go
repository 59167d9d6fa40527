package ptxgen_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	lossgen "github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/ptxgen"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/runtime/ptxsim"
	"github.com/lossgen/lossgen/spec"
)

// zeroInputs are a launch table's inputs, every element 0.
func zeroInputs(t runtime.LaunchTable) map[string]golden.Array {
	in := map[string]golden.Array{}
	for _, b := range t.Buffers {
		if b.Role != "input" {
			continue
		}
		var data any
		switch b.DType {
		case "bool":
			data = make([]bool, b.Length)
		case "int64":
			data = make([]int64, b.Length)
		case "float64":
			data = make([]float64, b.Length)
		default:
			data = make([]float32, b.Length)
		}
		in[b.Name[len("in/"):]] = golden.Array{Shape: b.Shape, Data: data}
	}
	return in
}

// TestIndexFault runs a categorical ClipPPO's PTX (Forward's and ForwardBackward's tables)
// with actions outside [0, A): the simulator must report the first faulting element and its
// value as the *runtime.IndexError the CPU Forward returns, where the kernels used to clamp
// the action silently (A read as A−1, −1 as 0). In range, no fault.
func TestIndexFault(t *testing.T) {
	const n, tt, a = 4, 8, 3
	c, err := lossgen.CompileDims("../../spec/examples/clip_ppo_categorical.yaml", map[string]int{"N": n, "T": tt, "A": a})
	require.NoError(t, err)
	mod, err := ptxgen.Emit(c.Plan, c.Backward, gogen.Meta{Package: "clipppocat", GenVersion: runtime.GenVersion})
	require.NoError(t, err)
	for kind, table := range map[string]runtime.LaunchTable{"forward": mod.Launch, "backward": *mod.Backward} {
		t.Run(kind, func(t *testing.T) {
			var fault *runtime.Buffer
			for i, b := range table.Buffers {
				if b.Role == "fault" && b.Input == "in/action" {
					fault = &table.Buffers[i]
				}
			}
			require.NotNil(t, fault, "the launch table has no fault buffer for the action")
			require.Equal(t, runtime.Buffer{Name: "fault/action", Role: "fault", DType: "uint32", Length: 2, Shape: []int{2}, Input: "in/action", Size: a}, *fault)

			in := zeroInputs(table)
			_, err := ptxsim.Simulate(string(mod.PTX), table, in, ptxsim.Whole)
			require.NoError(t, err, "actions in range")

			for _, bad := range [][2]int64{{13, a}, {5, -1}, {30, 1 << 40}} {
				in := zeroInputs(table)
				act := in["action"].Data.([]int64)
				act[bad[0]] = bad[1]
				act[len(act)-1] = a + 1 // a later fault: the first element is reported
				_, err := ptxsim.Simulate(string(mod.PTX), table, in, ptxsim.Whole)
				var ie *runtime.IndexError
				require.True(t, errors.As(err, &ie), "action %d at %d: got %v, want an IndexError", bad[1], bad[0], err)
				require.Equal(t, runtime.IndexError{Kernel: "clipppocat", Input: "in/action", At: int(bad[0]), Value: int(bad[1]), Size: a}, *ie)
			}
		})
	}
}

// TestIndexFaultMasked: an index input masked away reaches its gather through
// where(mask, action, 0); the kernels check the index the gather reads, so an out-of-range
// action where the mask drops it is no fault, one where the mask keeps it is, and the CPU
// check (ir.IndexChecks) checks the same elements.
func TestIndexFaultMasked(t *testing.T) {
	b := ir.NewBuilder(ir.F32, []ir.Dim{{Name: "B", Size: 40}, {Name: "A", Size: 3}}, []string{"B"})
	z := b.Input(ir.Input{Key: "logits", Name: "logits", Kind: ir.Float, Shape: b.Shape("B", "A")})
	act := b.Input(ir.Input{Key: "action", Name: "action", Kind: ir.Index, Shape: b.Shape("B")})
	mask := b.Input(ir.Input{Key: "mask", Name: "mask", Kind: ir.Bool, Shape: b.Shape("B")})
	b.Output("chosen", b.Gather(z, b.Where(mask, act, b.Const(0)), "A"), ir.Metric, "", "")
	c, err := lossgen.CompileGraph(&spec.Spec{File: "masked.yaml", Package: "masked"}, b.Graph())
	require.NoError(t, err)
	require.Equal(t, []ir.IndexCheck{{IndexRead: ir.IndexRead{Input: act.Input, Valid: mask.Input}, Size: 3}}, ir.IndexChecks(c.Graph))
	goFiles, err := gogen.Generate(c.Plan, nil, gogen.Meta{Package: "masked", GenVersion: runtime.GenVersion})
	require.NoError(t, err)
	require.Contains(t, string(goFiles["masked.go"]), "if in.Mask[i] && (v < 0 || v >= 3) {", "Forward checks the action where the mask keeps it")
	mod, err := ptxgen.Emit(c.Plan, nil, gogen.Meta{Package: "masked", GenVersion: runtime.GenVersion})
	require.NoError(t, err)
	in := zeroInputs(mod.Launch)
	a, m := in["action"].Data.([]int64), in["mask"].Data.([]bool)
	for i := range m {
		m[i] = true
	}
	a[3], m[3] = 7, false // masked away: the gather reads 0
	a[35] = -4
	_, err = ptxsim.Simulate(string(mod.PTX), mod.Launch, in, ptxsim.Whole)
	var ie *runtime.IndexError
	require.True(t, errors.As(err, &ie), "got %v", err)
	require.Equal(t, runtime.IndexError{Kernel: "masked", Input: "in/action", At: 35, Value: -4, Size: 3}, *ie)
}
