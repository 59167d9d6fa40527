package gen

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"strings"

	"github.com/lossgen/lossgen/gen/asmgen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/ptxgen"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/runtime/ptxsim"
	"github.com/lossgen/lossgen/templates"
)

type testInput struct {
	Name, Field, GoType string
	Kind                string // the runtime.InputRecipe kind: float, bool, index
	Sample              string // the randomInputs recipe's Sample (and IndexRange) fields, as Go
	Len                 int
	Expr                string // the Go expression of its slice in an *Inputs named in (ptxsim test)
}

type testOutput struct {
	Name, Field string
	Scalar      bool
	Abs, Rel    string
	Norm        string
	Floor       string // gradients: golden.Tol.Floor
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
// An ill-conditioned output is held to its own relative bound in float32
// (ir.Output.IllConditioned: explained_variance 2e-3, or 5e-2 over fewer than 4 values).
func OutputTolerance(dt ir.DType, o *ir.Output) golden.Tol {
	if o.Role == ir.Gradient {
		return GradTolerance(dt)
	}
	t := Tolerance(dt, len(o.Node.Shape) == 0)
	if dt == ir.F32 {
		t.Rel = max(t.Rel, o.IllConditioned)
	}
	return t
}

// GradScale is the gradient scale of a call whose outputs are outs, for golden.Tol.At: the
// largest finite |value| over g's gradient outputs.
func GradScale(g *ir.Graph, outs map[string]golden.Array) float64 {
	m := 0.0
	for _, o := range g.Outputs {
		if a, ok := outs[o.Name]; ok && o.Role == ir.Gradient && a.Data != nil {
			m = max(m, golden.AbsMax(a.Float64s()))
		}
	}
	return m
}

// GradTolerance is the bound a gradient of a kernel of dtype dt must meet against the
// interpreter (see Tolerance). Its Floor, 64 roundings of the dtype, is the slack per unit of
// the call's largest gradient (golden.Tol.At): a gradient that is 0, or cancels to rounding
// noise, is computed from terms of about the other gradients' size, and its own largest
// element gives the Norm term nothing to scale.
func GradTolerance(dt ir.DType) golden.Tol {
	if dt == ir.F64 {
		return golden.Tol{Abs: 1e-300, Rel: 1e-10, Norm: 1e-12, Floor: 64 * 0x1p-53}
	}
	// float32: a gradient carries its forward values' rounding, e.g. (V − value_target)/n
	// where the two nearly cancel and value_target is a float32 scan over rewards of 1e3 (the
	// extreme case: 9e-9 against a largest element of 3.7e-5). Its largest element can be
	// far below what its forward value's normwise error allows (smooth_l1 caps the critic
	// gradient at 1/n while advantages elsewhere in the batch are 1e4: at [4096, 4096] AVX2
	// and Go differ by 1.06e-3 of the largest gradient). A wrong rule misses by far more.
	return golden.Tol{Abs: 1e-30, Rel: 5e-6, Norm: 1e-2, Floor: 64 * 0x1p-24}
}

// paddedInput is a float or index input whose elements lie on the mask's elements Per at a
// time (the batch dims lead its shape), for TestPaddingIgnored.
type paddedInput struct {
	Field string
	Per   int
	Index bool // an int64 index (a categorical action)
	Bool  bool // a flag (done), else a float
}

// maskedGrad is a gradient that has every batch dim, for TestPaddingIgnored's check that it is
// 0 at masked elements: its flat element i lies on the mask's element
// Σ (i/Stride % Size)·Mul over Dims, one per batch dim.
type maskedGrad struct {
	Name string
	Dims []gradBatchDim
}

// gradBatchDim places one batch dim in a gradient's shape: Stride and Size in the gradient,
// Mul its stride in the mask.
type gradBatchDim struct{ Stride, Size, Mul int }

// maskedGrads returns the gradients (outputs of back) that have every dim of batch, with
// where each batch dim lies in them: a gradient's batch dims need not lead its shape (SAC's
// [Q, B] critic gradients). Gradients without them all (a scalar log_alpha) are left out:
// they sum over valid and masked elements alike.
func maskedGrads(back *ir.Graph, batch ir.Shape) []maskedGrad {
	bst := batch.Strides()
	var out []maskedGrad
	for _, o := range back.Outputs {
		if o.Role != ir.Gradient {
			continue
		}
		s := o.Node.Shape
		st := s.Strides()
		mg := maskedGrad{Name: o.Name}
		for k, d := range batch {
			j := s.Index(d.Name)
			if j < 0 {
				mg.Dims = nil
				break
			}
			mg.Dims = append(mg.Dims, gradBatchDim{Stride: st[j], Size: d.Size, Mul: bst[k]})
		}
		if len(mg.Dims) == len(batch) {
			out = append(out, mg)
		}
	}
	return out
}

// maskedInputs returns the loss's mask (keys.mask, [*batch]) as the field of Inputs that
// holds it, and the inputs whose masked elements TestPaddingIgnored fills with garbage:
// those the graph reads only through where(mask, input, pad) (a loss's inputs; not what an
// estimator or kl_reward reads, which TorchRL runs on padding too, SEMANTICS.md §11.18).
// "" when there is no such input.
func maskedInputs(g *ir.Graph) (string, []paddedInput) {
	inputNode := map[*ir.Input]*ir.Node{}
	var mask *ir.Node
	for _, n := range g.Nodes {
		if n.Op == ir.OpInput {
			inputNode[n.Input] = n
			if n.Input.Key == "mask" && n.Input.Kind == ir.Bool && n.Shape.Equal(g.Batch) {
				mask = n
			}
		}
	}
	if mask == nil {
		return "", nil
	}
	selected := map[*ir.Node]bool{} // inputs read only as where(mask, input, pad)
	for _, n := range g.Nodes {
		for i, a := range n.Args {
			if a.Op != ir.OpInput || a == mask {
				continue
			}
			if _, seen := selected[a]; !seen {
				selected[a] = true
			}
			if n.Op != ir.OpWhere || i != 1 || n.Args[0] != mask || !n.Args[2].IsScalarConst() {
				selected[a] = false
			}
		}
	}
	var out []paddedInput
	for _, in := range g.Inputs {
		if !selected[inputNode[in]] || len(in.Shape) < len(g.Batch) || !in.Shape[:len(g.Batch)].Equal(g.Batch) {
			continue
		}
		out = append(out, paddedInput{Field: gogen.FieldName(in.Name), Per: in.Shape.Numel() / g.Batch.Numel(), Index: in.Kind == ir.Index, Bool: in.Kind == ir.Bool})
	}
	if len(out) == 0 {
		return "", nil
	}
	return gogen.FieldName(mask.Input.Name), out
}

// testFile renders the generated package's test.
func testFile(c *Compiled, m gogen.Meta, goldenRel string) ([]byte, error) {
	g := c.Graph
	data := map[string]any{
		"Header": gogen.Header(m), "Package": m.Package, "DType": g.DType.String(), "GoldenDir": goldenRel, "SpecFile": m.SpecFile,
		"Bits": map[ir.DType]string{ir.F32: "32", ir.F64: "64"}[g.DType],
		"TolNote": "They were set from the errors measured on the golden cases (the test logs them), " +
			"with room to spare; see lossgen's gen/testfile.go.",
	}
	var ins []testInput
	hasIndex := false
	bytesPerCall := 0
	var state, stateNames []string
	for _, in := range g.Inputs {
		if in.State {
			state = append(state, gogen.FieldName(in.Name))
			stateNames = append(stateNames, in.Name)
			continue
		}
		t := testInput{Name: in.Name, Field: gogen.FieldName(in.Name), Len: in.Shape.Numel()}
		switch in.Kind {
		case ir.Bool:
			t.GoType, t.Kind, t.Sample = "bool", "bool", `Sample: runtime.Sample{Dist: "flag", P: 0.05}`
			bytesPerCall += t.Len
		case ir.Index:
			hasIndex = true
			t.GoType, t.Kind = "int64", "index"
			t.Sample = fmt.Sprintf(`Sample: runtime.Sample{Dist: "index"}, IndexRange: %d`, cases.IndexRange(g, in))
			bytesPerCall += 8 * t.Len
		default:
			t.GoType, t.Kind, t.Sample = g.DType.String(), "float", `Sample: runtime.Sample{Dist: "uniform", Lo: -1, Hi: 1}`
			bytesPerCall += elemSize(g.DType) * t.Len
		}
		ins = append(ins, t)
	}
	data["Mask"], data["Padded"] = maskedInputs(g)
	var outs []testOutput
	var firstSlice any
	for _, o := range g.Outputs {
		scalar := len(o.Node.Shape) == 0
		tol := OutputTolerance(g.DType, o)
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
	data["MaskedGrads"] = []maskedGrad(nil)
	if c.Backward != nil {
		data["MaskedGrads"] = maskedGrads(c.Backward.Graph, g.Batch)
		tol := GradTolerance(g.DType)
		for _, o := range c.Backward.Graph.Outputs {
			if o.Role == ir.Gradient {
				grads = append(grads, testOutput{Name: o.Name, Field: gogen.GradField(o.Name),
					Abs: fmt.Sprint(tol.Abs), Rel: fmt.Sprint(tol.Rel), Norm: fmt.Sprint(tol.Norm), Floor: fmt.Sprint(tol.Floor)})
				gradBytes += elemSize(g.DType) * o.Node.Shape.Numel()
			}
		}
	}
	type indexCheck struct {
		Name, Field, Valid string
		Negate             bool
		Size               int
	}
	var checks []indexCheck
	for _, c := range ir.IndexChecks(g) {
		ic := indexCheck{Name: c.Input.Name, Field: gogen.FieldName(c.Input.Name), Negate: c.Negate, Size: c.Size}
		if c.Valid != nil {
			ic.Valid = gogen.FieldName(c.Valid.Name)
		}
		checks = append(checks, ic)
	}
	data["IndexChecks"] = checks
	data["Inputs"], data["Outputs"], data["Grads"], data["HasIndex"], data["State"] = ins, outs, grads, hasIndex, state
	data["StateNames"] = stateNames
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
	data["Large"] = g.Batch.Numel() > LargeBatch

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

// LargeBatch is the batch size above which a generated test runs its four kinds of extreme
// inputs as one set (each kind in a quarter of the batch): the pure-Go kernel, the slowest
// thing a test runs, then runs once for them instead of four times.
const LargeBatch = 1 << 22

// WholeBudget is the most instructions one launch table may take in the simulator for a
// generated test to simulate it whole by default (about a second); a larger table is
// simulated in part (ptxsim.Sampled), and whole with LOSSGEN_FULL=1.
const WholeBudget = 25_000_000

// SampledBudget is about the most instructions a partial simulation of one launch table
// takes: ptxsim.Sampled's iterations per thread are lowered (to no fewer than 2) until it
// fits, so the default test's simulation costs about the same at any batch size.
const SampledBudget = 6_000_000

// PartCap is the most instructions a launch table's part may take. A table whose part
// (two iterations per thread) exceeds it — the threads' loops over an inner dim of 10^5
// elements are long — is simulated only with LOSSGEN_FULL=1, so that neither generate nor
// the default go test grows with that dim.
const PartCap = 50_000_000

// CaseWholeBudget is the most instructions, summed over the launch tables (forward first),
// that a generated test simulates whole on two cases — its special-value case and the golden
// case "random" — of a package whose tables are otherwise simulated in part: the two runs
// take at most about 7 s of one core here (the simulator runs ~3·10^7 instructions a
// second), so that a package's default go test stays within 10 s. Those two whole runs check
// what a part cannot, the whole-batch reductions (losses, ESS) and what is computed from
// them; a larger package gets them with LOSSGEN_FULL=1.
const CaseWholeBudget = 100_000_000

type ptxTable struct {
	Kind, Var, Names string
	Whole            bool
	WholeTwo         bool // in part, but whole on the special-value and "random" cases
	FullOnly         bool // simulated only with LOSSGEN_FULL=1 (PartCap)
	MaxIter          int
	Doc              string
	Cover            []ptxCover
}

type ptxCover struct {
	Name string
	N    int
	Hash string
}

// ptxTestFile renders the test that runs the package's PTX in the simulator. It decides
// here, by running the simulator on zero inputs (instruction counts and which elements a
// partial simulation computes depend on the launch table, not on the values), whether each
// launch table is simulated whole by default (at most WholeBudget instructions) or in part,
// and records which elements of each output the part computes, so that the test fails when
// a launch computes fewer or other elements than it did when the package was generated. A
// table simulated in part is also simulated whole on two cases while the tables' whole runs
// fit CaseWholeBudget together (forward first).
func ptxTestFile(c *Compiled, m gogen.Meta, progress func(string)) ([]byte, error) {
	mod, err := ptxgen.Emit(c.Plan, c.Backward, m)
	if err != nil {
		return nil, err
	}
	ptx := string(mod.PTX)
	var tables []ptxTable
	twoLeft := int64(CaseWholeBudget)
	zeros := map[string]any{} // one zero slice per dtype, shared by every input and table
	add := func(kind, v, names string, t *runtime.LaunchTable) error {
		inputs := zeroInputs(t, zeros)
		pt := ptxTable{Kind: kind, Var: v, Names: names}
		// The part first: it is cheap at any size, and it sizes the one whole simulation
		// below, which is skipped where it could not fit (at [64, 2048] it would take
		// 4.5·10^8 instructions, 15 s).
		part, res, err := sizedPart(ptx, t, inputs)
		if errors.Is(err, ptxsim.ErrBudget) {
			// A loop over an inner dim (a vocabulary of 10^5 actions) makes even two
			// iterations of three blocks too long for a default test.
			pt.FullOnly = true
			pt.Doc = fmt.Sprintf("only with LOSSGEN_FULL=1, whole: even a part of two iterations per thread of three blocks takes more than %d instructions (the loops over an inner dim are long)", PartCap)
			tables = append(tables, pt)
			return nil
		}
		if err != nil {
			return fmt.Errorf("simulating the PTX of %s: %w", kind, err)
		}
		if res.Stats.Cut == 0 && res.Stats.Blocks == gridBlocks(t) && res.Stats.Instructions <= WholeBudget {
			// No thread was stopped and every block ran: the part was the whole simulation.
			pt.Whole = true
			pt.Doc = fmt.Sprintf("whole: every block of every launch (%d instructions)", res.Stats.Instructions)
			tables = append(tables, pt)
			return nil
		}
		// One whole simulation decides both whether the test runs the table whole
		// (WholeBudget) and whether it runs it whole on two cases (twoLeft).
		budget := max(WholeBudget, twoLeft)
		gate := max(4*float64(WholeBudget), 2*float64(twoLeft)) // the estimate runs high: a table estimated at up to 4·WholeBudget may fit it
		n, ok, err := wholeWithin(ptx, t, inputs, res, budget, gate, func(est float64) {
			progress(fmt.Sprintf("simulating the %s PTX whole once (about %.2g instructions) to size the generated test", kind, est))
		})
		if err != nil {
			return fmt.Errorf("simulating the PTX of %s: %w", kind, err)
		}
		if ok && n <= WholeBudget {
			pt.Whole = true
			pt.Doc = fmt.Sprintf("whole: every block of every launch (%d instructions)", n)
			tables = append(tables, pt)
			return nil
		}
		pt.MaxIter = part.MaxIter
		var parts []string
		for _, b := range t.Buffers {
			name, ok := strings.CutPrefix(b.Name, "out/")
			if g, isGrad := strings.CutPrefix(b.Name, "grad/"); isGrad {
				name, ok = "grad."+g, true
			}
			if !ok {
				continue
			}
			cov := res.Outputs[name].Coverage()
			pt.Cover = append(pt.Cover, ptxCover{Name: name, N: cov.N, Hash: cov.Hash})
			parts = append(parts, fmt.Sprintf("%s %d of %d", name, cov.N, b.Length))
		}
		pt.Doc = fmt.Sprintf("in part, %d iterations per thread (the whole table takes more than %d instructions; "+
			"this part %d): it computes, of each output, %s elements", part.MaxIter, WholeBudget, res.Stats.Instructions, strings.Join(parts, ", "))
		if ok && n <= twoLeft {
			twoLeft -= n
			pt.WholeTwo = true
			pt.Doc += fmt.Sprintf("; whole (%d instructions) on the special-value case and the golden case random", n)
		}
		tables = append(tables, pt)
		return nil
	}
	if err := add("forward", "Launch", "OutputNames", &mod.Launch); err != nil {
		return nil, err
	}
	if mod.Backward != nil {
		if err := add("backward", "LaunchBackward", "append(append([]string(nil), OutputNames...), GradNames...)", mod.Backward); err != nil {
			return nil, err
		}
	}
	var ins []testInput
	for _, in := range c.Graph.Inputs {
		expr := "in." + gogen.FieldName(in.Name)
		if in.State { // kernel state: in.State's field, as the one-element slice the kernels read
			expr = fmt.Sprintf("[]%s{in.State.%s}", c.Graph.DType, gogen.FieldName(in.Name))
		}
		ins = append(ins, testInput{Name: in.Name, Expr: expr})
	}
	data := map[string]any{"Header": gogen.Header(m), "Package": m.Package, "Tables": tables, "DType": c.Graph.DType.String(), "Inputs": ins,
		"Large": c.Graph.Batch.Numel() > LargeBatch, "Grads": mod.Backward != nil, "IndexChecks": len(ir.IndexChecks(c.Graph)) > 0}
	data["Mask"], _ = maskedInputs(c.Graph)
	return render("ptxsim_test.go.tmpl", data)
}

// sizedPart runs the partial simulation of t (ptxsim.Sampled's blocks) with as many
// iterations per thread, from 2 to 8, as fit about SampledBudget instructions, and returns
// it with its Part. It runs 2 and 3 iterations first: a thread's instructions grow by the
// same amount with each iteration of its loops over the batch, so the two give the cost of
// any other count without running 8 (which can take 4 times SampledBudget at 16M
// elements). ErrBudget: even 2 iterations take more than PartCap instructions.
func sizedPart(ptx string, t *runtime.LaunchTable, inputs map[string]golden.Array) (ptxsim.Part, *ptxsim.Result, error) {
	part := ptxsim.Sampled
	part.Budget = PartCap
	run := func(iters int) (*ptxsim.Result, error) {
		part.MaxIter = iters
		return ptxsim.Simulate(ptx, *t, inputs, part)
	}
	two, err := run(2)
	if err == nil && two.Stats.Cut == 0 { // no loop runs 3 iterations: any more give the same part
		part.MaxIter = ptxsim.Sampled.MaxIter
	}
	if err != nil || two.Stats.Cut == 0 || two.Stats.Instructions >= SampledBudget {
		return part, two, err
	}
	three, err := run(3)
	if err != nil {
		return part, nil, err
	}
	per := three.Stats.Instructions - two.Stats.Instructions // one more iteration of every stopped thread
	fixed := two.Stats.Instructions - 2*per
	iters := ptxsim.Sampled.MaxIter
	if per > 0 {
		iters = int(min(max((SampledBudget-fixed)/per, 2), int64(iters)))
	}
	switch {
	case three.Stats.Cut == 0: // no loop runs 3 iterations: any more give the same part
		part.MaxIter = iters
		return part, three, nil
	case iters == 2:
		part.MaxIter = 2
		return part, two, nil
	case iters == 3:
		return part, three, nil
	}
	res, err := run(iters)
	return part, res, err
}

// zeroInputs is every input of t, all zeros (the simulations that size the generated test
// depend on the launch table only, not on the values): slices of the zero slice of their
// dtype in zeros, which grows to the longest, so that a batch of 16M elements does not
// allocate and clear a fresh 64 MB per input and table. The simulator only reads them.
func zeroInputs(t *runtime.LaunchTable, zeros map[string]any) map[string]golden.Array {
	inputs := map[string]golden.Array{}
	for _, b := range t.Buffers {
		name, ok := strings.CutPrefix(b.Name, "in/")
		if !ok || b.Role != "input" {
			continue
		}
		var data any
		switch b.DType {
		case "bool":
			data = zeroSlice[bool](zeros, b.DType, b.Length)
		case "int64":
			data = zeroSlice[int64](zeros, b.DType, b.Length)
		case "float64":
			data = zeroSlice[float64](zeros, b.DType, b.Length)
		default:
			data = zeroSlice[float32](zeros, b.DType, b.Length)
		}
		inputs[name] = golden.Array{Shape: b.Shape, Data: data}
	}
	return inputs
}

// zeroSlice is n zeros of type T, sliced from zeros[key] (made longer where it is short).
func zeroSlice[T any](zeros map[string]any, key string, n int) []T {
	z, _ := zeros[key].([]T)
	if len(z) < n {
		z = make([]T, n)
		zeros[key] = z
	}
	return z[:n:n]
}

// wholeWithin reports whether launch table t simulates whole within budget instructions,
// and how many it takes. It first estimates that from part, the table's partial simulation
// (estimateWhole), and simulates only where the estimate is at most gate, so that a large
// table costs the generator nothing; announce is told the estimate of a simulation that
// may take over a second.
func wholeWithin(ptx string, t *runtime.LaunchTable, inputs map[string]golden.Array, part *ptxsim.Result, budget int64, gate float64, announce func(est float64)) (int64, bool, error) {
	est := estimateWhole(t, part)
	if budget <= 0 || est > gate {
		return 0, false, nil
	}
	if est > WholeBudget {
		announce(est)
	}
	whole := ptxsim.Whole
	whole.Budget = budget
	switch res, err := ptxsim.Simulate(ptx, *t, inputs, whole); {
	case errors.Is(err, ptxsim.ErrBudget):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	default:
		return res.Stats.Instructions, true, nil
	}
}

// estimateWhole estimates the instructions of t's whole simulation from part, its partial
// simulation: part's instructions scaled by the largest ratio of an output's elements to
// those the part computed, or else of the blocks to those it ran. On the ClipPPO+GAE example
// it overestimates by 15–60% (a part's fixed costs are scaled too).
func estimateWhole(t *runtime.LaunchTable, part *ptxsim.Result) float64 {
	scale := float64(gridBlocks(t)) / float64(max(1, part.Stats.Blocks))
	for _, p := range part.Outputs {
		if n := len(p.Index); n > 0 {
			scale = max(scale, float64(p.Len)/float64(n))
		}
	}
	return float64(part.Stats.Instructions) * scale
}

// gridBlocks is the number of thread blocks t's launches run in all.
func gridBlocks(t *runtime.LaunchTable) int64 {
	var n int64
	for _, l := range t.Launches {
		n += int64(l.Grid[0] * l.Grid[1] * l.Grid[2])
	}
	return n
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
