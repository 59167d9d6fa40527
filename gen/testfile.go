package gen

import (
	"bytes"
	"fmt"
	"go/format"

	"github.com/lossgen/lossgen/gen/asmgen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/templates"
)

type testInput struct {
	Name, Field, GoType, Rand string
	Len                       int
}

type testOutput struct {
	Name, Field string
	Scalar      bool
	Abs, Rel    string
	Norm        string
}

// Tolerance is the bound an output of a kernel of dtype dt must meet against the float64
// interpreter on the golden cases (golden.Tol: Abs + Rel·|want| + Norm·max|want|). float32
// rounds to 2^-24 ≈ 6e-8 relative per op. Measured worst cases on the example goldens (the
// test logs them): 1.3e-6 relative on a scalar (ESS over 4096 elements, whose two
// logsumexps are rounded to float32 before exp(2·lse₁ − lse₂)), 8e-7 normwise on a 421-step
// GAE scan, and absolute errors below 1e-6 where a result cancels to near zero. A wrong op
// misses these bounds by orders of magnitude. float64 kernels differ from the interpreter
// only by summation order.
// The PTX kernels (checked in the simulator by gen/ptxgen's tests) meet the same bounds.
//
// A gradient (GradTolerance) is held relative to itself and to its largest element, with no
// absolute slack: gradients of a mean are of order 1/n, where the outputs' absolute bound
// would accept anything.
func Tolerance(dt ir.DType, scalar bool) golden.Tol {
	switch {
	case dt == ir.F64:
		return golden.Tol{Abs: 1e-12, Rel: 1e-9, Norm: 1e-10}
	case scalar:
		return golden.Tol{Abs: 1e-6, Rel: 5e-6}
	}
	return golden.Tol{Abs: 1e-6, Rel: 5e-6, Norm: 1e-5}
}

// OutputTolerance is the bound output o of a kernel of dtype dt meets: a gradient's
// (GradTolerance) or a value's (Tolerance).
func OutputTolerance(dt ir.DType, o *ir.Output) golden.Tol {
	if o.Role == ir.Gradient {
		return GradTolerance(dt)
	}
	return Tolerance(dt, len(o.Node.Shape) == 0)
}

// GradTolerance is the bound a gradient of a kernel of dtype dt must meet against the
// interpreter (see Tolerance).
func GradTolerance(dt ir.DType) golden.Tol {
	if dt == ir.F64 {
		return golden.Tol{Abs: 1e-300, Rel: 1e-10, Norm: 1e-12}
	}
	// float32: a gradient carries its forward values' rounding, e.g. (V − value_target)/n
	// where the two nearly cancel and value_target is a float32 scan over rewards of 1e3 (the
	// extreme case: 9e-9 against a largest element of 3.7e-5). A wrong rule misses by far more.
	return golden.Tol{Abs: 1e-30, Rel: 5e-6, Norm: 1e-3}
}

// testFile renders the generated package's test.
func testFile(c *Compiled, m gogen.Meta, goldenRel string) ([]byte, error) {
	g := c.Graph
	data := map[string]any{
		"Header": gogen.Header(m), "Package": m.Package, "DType": g.DType.String(), "GoldenDir": goldenRel,
		"Bits": map[ir.DType]string{ir.F32: "32", ir.F64: "64"}[g.DType],
		"TolNote": "They were set from the errors measured on the golden cases (the test logs them), " +
			"with room to spare; see lossgen's gen/testfile.go.",
	}
	var ins []testInput
	hasIndex := false
	bytesPerCall := 0
	var state []string
	for _, in := range g.Inputs {
		if in.State {
			state = append(state, gogen.FieldName(in.Name))
			continue
		}
		t := testInput{Name: in.Name, Field: gogen.FieldName(in.Name), Len: in.Shape.Numel()}
		switch in.Kind {
		case ir.Bool:
			t.GoType, t.Rand = "bool", "r.Float64() < 0.05"
			bytesPerCall += t.Len
		case ir.Index:
			hasIndex = true
			t.GoType, t.Rand = "int64", fmt.Sprintf("int64(r.IntN(%d))", cases.IndexRange(g, in))
			bytesPerCall += 8 * t.Len
		default:
			t.GoType, t.Rand = g.DType.String(), g.DType.String()+"(r.Float64()*2 - 1)"
			bytesPerCall += elemSize(g.DType) * t.Len
		}
		ins = append(ins, t)
	}
	var outs []testOutput
	var firstSlice any
	for _, o := range g.Outputs {
		scalar := len(o.Node.Shape) == 0
		tol := Tolerance(g.DType, scalar)
		t := testOutput{Name: o.Name, Field: gogen.FieldName(o.Name), Scalar: scalar,
			Abs: fmt.Sprint(tol.Abs), Rel: fmt.Sprint(tol.Rel), Norm: fmt.Sprint(tol.Norm)}
		if !t.Scalar && firstSlice == nil {
			firstSlice = t
		}
		bytesPerCall += elemSize(g.DType) * o.Node.Shape.Numel()
		outs = append(outs, t)
	}
	var grads []testOutput
	gradBytes := 0
	if c.Backward != nil {
		tol := GradTolerance(g.DType)
		for _, o := range c.Backward.Graph.Outputs {
			if o.Role == ir.Gradient {
				grads = append(grads, testOutput{Name: o.Name, Field: gogen.GradField(o.Name),
					Abs: fmt.Sprint(tol.Abs), Rel: fmt.Sprint(tol.Rel), Norm: fmt.Sprint(tol.Norm)})
				gradBytes += elemSize(g.DType) * o.Node.Shape.Numel()
			}
		}
	}
	data["Inputs"], data["Outputs"], data["Grads"], data["HasIndex"], data["State"] = ins, outs, grads, hasIndex, state
	// An output and a float input of the same length, to test that overlapping them is an
	// error; and two gradients.
	data["Alias"], data["GradAlias"] = nil, nil
	for _, o := range outs {
		for _, in := range ins {
			if !o.Scalar && in.GoType == g.DType.String() && in.Len == g.Output(o.Name).Node.Shape.Numel() && data["Alias"] == nil {
				data["Alias"] = map[string]string{"Out": o.Field, "In": in.Field}
			}
		}
	}
	if len(grads) > 1 && c.Backward.Graph.Output(grads[0].Name).Node.Shape.Numel() == c.Backward.Graph.Output(grads[1].Name).Node.Shape.Numel() {
		data["GradAlias"] = map[string]string{"Out": grads[1].Field, "In": grads[0].Field}
	}
	data["FirstSliceOutput"] = firstSlice
	data["Bytes"] = bytesPerCall               // what Forward reads and writes
	data["FBBytes"] = bytesPerCall + gradBytes // and ForwardBackward, with the gradients
	data["Elements"] = g.Batch.Numel()

	return render("gotest.go.tmpl", data)
}

// vmathTestFile renders the accuracy sweep of the AVX2 kernels' exp, log and log1p.
func vmathTestFile(c *Compiled, m gogen.Meta) ([]byte, error) {
	data := map[string]any{
		"Header": gogen.Header(m), "Package": m.Package, "DType": c.Graph.DType.String(), "MaxULP": asmgen.MaxULP,
		"SweepDoc": "2^24 points spread evenly over all 2^32 float32 bit patterns", "FullSweepDoc": "every float32",
	}
	if c.Graph.DType == ir.F64 {
		data["SweepDoc"] = "2^22 float64s (random bit patterns, uniform in ±800, uniform in [−1, 3))"
		data["FullSweepDoc"] = "2^26 of them"
	}
	return render("vmath_test.go.tmpl", data)
}

// simElements is the largest batch whose generated test simulates the PTX on every golden
// case; above it, the first case only (a ClipPPO+GAE element costs about 800 simulated
// instructions: 2^20 elements take 20 s).
const simElements = 1 << 20

// ptxTestFile renders the test that runs the package's PTX in the simulator.
func ptxTestFile(c *Compiled, m gogen.Meta) ([]byte, error) {
	n := c.Graph.Batch.Numel()
	data := map[string]any{"Header": gogen.Header(m), "Package": m.Package, "FirstCaseOnly": n > simElements, "HasGrads": c.Backward != nil,
		"CasesNote": fmt.Sprintf("the batch of %d elements is simulated on every case.", n)}
	if n > simElements {
		data["CasesNote"] = fmt.Sprintf("the batch of %d elements is simulated on the first case only.", n)
	}
	return render("ptxsim_test.go.tmpl", data)
}

// render executes a template and gofmts the result.
func render(name string, data any) ([]byte, error) {
	tmpl, err := templates.Parse(name)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, err
	}
	src, err := format.Source(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s does not parse: %w", name, err)
	}
	return src, nil
}

func elemSize(dt ir.DType) int {
	if dt == ir.F64 {
		return 8
	}
	return 4
}
