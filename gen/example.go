package gen

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"gorgonia.org/tensor"

	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/interp"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
)

// exampleSeed is the seed of the inputs ExampleForwardBackward draws.
const exampleSeed = 1

// examplePrint is one line the generated example prints: Label, then Expr (a float64 Go
// expression) formatted with %.<Digits>g, which the reference interpreter's value formats as
// Want.
type examplePrint struct {
	Label, Expr, Want string
	Digits            int
}

// exampleFile renders the generated package's runnable example (example_test.go):
// ExampleForwardBackward (ExampleForward for a package without gradients) calls the kernel
// once on inputs lossgen's runtime generator draws from a fixed seed, each from its key's
// golden-case distribution (so that inputs meet the kernel's data checks), and prints each
// loss term and the L1 norm of each gradient (without loss terms, each output: a scalar's
// value, a tensor's L1 norm). Its // Output: lines are the reference interpreter's values on
// the same inputs, rounded to as many significant digits (at most 4) as leave them the same
// string under a relative change of 1e-4, twenty times the float32 kernels' tolerance
// against the interpreter: the example's check then holds on every implementation.
func exampleFile(c *Compiled, m gogen.Meta) ([]byte, error) {
	g := c.Reference()
	r := cases.Recipe(g, m.Package, "random", func(*ir.Input) string { return "" })
	r.Seed = exampleSeed
	r.Format, r.Generator = 0, "" // Generate needs neither; they would only clutter the literal
	var lits []string
	state := false
	for i := range r.Inputs {
		in := &r.Inputs[i]
		// Only the "extreme" case reads the Extreme* flags: drop them from the literal.
		sm := reflect.ValueOf(&in.Sample).Elem()
		for j := 0; j < sm.NumField(); j++ {
			if strings.HasPrefix(sm.Type().Field(j).Name, "Extreme") {
				sm.Field(j).SetZero()
			}
		}
		if g.Inputs[i].State {
			state = true // NewState's value, which the recipe draws as a constant
			continue
		}
		lits = append(lits, inputRecipeLiteral(in))
	}
	data := map[string]any{
		"Header": gogen.Header(m), "Package": m.Package, "Grads": c.Backward != nil, "State": state,
		"Seed": r.Seed, "DType": r.DType, "Recipe": lits,
	}
	if exampleCost(g) > exampleBudget {
		return exampleUnchecked(g, data)
	}
	vals, _, err := r.Draw()
	if err != nil {
		return nil, fmt.Errorf("example inputs: %w", err)
	}
	inputs := map[string]*tensor.Dense{}
	for _, in := range g.Inputs {
		inputs[in.Name] = interp.New(in.Shape, golden.Array{Data: vals[in.Name]}.Float64s())
	}
	outs, err := interp.Run(g, inputs)
	if err != nil {
		return nil, fmt.Errorf("example: %w", err)
	}

	var prints []examplePrint
	for _, f := range examplePrinted(g) {
		v := interp.Data(outs[f.o.Name])
		if len(f.o.Node.Shape) > 0 {
			s := 0.0
			for _, x := range v {
				s += math.Abs(x)
			}
			v = []float64{s}
		}
		p := f.print()
		p.Digits, p.Want = stableDigits(v[0])
		prints = append(prints, p)
	}
	data["Prints"], data["L1"], data["Losses"], data["Checked"] = prints, usesL1(g), hasLossTerms(g), true
	return render("example_test.go.tmpl", data)
}

// exampleBudget bounds the reference interpreter's work for the example's // Output: lines,
// in node elements (Σ over the graph's nodes of their element counts): about a second. A
// package whose shapes exceed it (a 256k-token vocabulary, a 4096-member ensemble) gets an
// example that prints but checks nothing, so that generate stays fast at any size (its
// TestGolden checks the values).
const exampleBudget = 5e7

// exampleCost is the interpreter's work for one call of g, in node elements.
func exampleCost(g *ir.Graph) float64 {
	n := 0.0
	for _, x := range g.Nodes {
		n += float64(x.Shape.Numel())
	}
	return n
}

// exampleUnchecked renders the example without // Output: lines: the same prints, at 4
// significant digits.
func exampleUnchecked(g *ir.Graph, data map[string]any) ([]byte, error) {
	var prints []examplePrint
	for _, f := range examplePrinted(g) {
		p := f.print()
		p.Digits = 4
		prints = append(prints, p)
	}
	data["Prints"], data["L1"], data["Losses"], data["Checked"] = prints, usesL1(g), hasLossTerms(g), false
	return render("example_test.go.tmpl", data)
}

// exampleOutput is one output the example prints and the Go expression of its field.
type exampleOutput struct {
	o     *ir.Output
	field string
}

// print is the line that prints it: a scalar's value, a tensor's L1 norm.
func (f exampleOutput) print() examplePrint {
	if len(f.o.Node.Shape) > 0 {
		return examplePrint{Label: "Σ|" + f.o.Name + "|", Expr: "exampleL1(" + f.field + ")"}
	}
	return examplePrint{Label: f.o.Name, Expr: "float64(" + f.field + ")"}
}

// examplePrinted lists what the example prints: each loss term, then each gradient; without
// loss terms, every output but state and faults.
func examplePrinted(g *ir.Graph) []exampleOutput {
	var out []exampleOutput
	losses := hasLossTerms(g)
	for _, o := range g.Outputs {
		if o.Role == ir.LossTerm {
			out = append(out, exampleOutput{o, "out." + gogen.FieldName(o.Name)})
		}
	}
	for _, o := range g.Outputs {
		switch {
		case o.Role == ir.Gradient && len(o.Node.Shape) == 0:
			out = append(out, exampleOutput{o, "g." + gogen.GradField(o.Name) + "[0]"}) // a scalar input's gradient is a one-element slice
		case o.Role == ir.Gradient:
			out = append(out, exampleOutput{o, "g." + gogen.GradField(o.Name)})
		case !losses && o.Role != ir.State && o.Role != ir.Fault:
			out = append(out, exampleOutput{o, "out." + gogen.FieldName(o.Name)})
		}
	}
	return out
}

// usesL1 reports whether the example prints a tensor's L1 norm (and so needs exampleL1).
func usesL1(g *ir.Graph) bool {
	for _, f := range examplePrinted(g) {
		if len(f.o.Node.Shape) > 0 {
			return true
		}
	}
	return false
}

// hasLossTerms reports whether g has a loss_* output.
func hasLossTerms(g *ir.Graph) bool {
	for _, o := range g.Outputs {
		if o.Role == ir.LossTerm {
			return true
		}
	}
	return false
}

// inputRecipeLiteral is in as a Go composite literal of a runtime.InputRecipe element, with
// the fields that are not zero.
func inputRecipeLiteral(in *runtime.InputRecipe) string {
	fields := []string{fmt.Sprintf("Name: %q", in.Name), fmt.Sprintf("Key: %q", in.Key),
		fmt.Sprintf("Kind: %q", in.Kind), fmt.Sprintf("Shape: %#v", in.Shape)}
	var sample []string
	sv := reflect.ValueOf(in.Sample)
	for i := 0; i < sv.NumField(); i++ {
		if f := sv.Field(i); !f.IsZero() {
			sample = append(sample, fmt.Sprintf("%s: %#v", sv.Type().Field(i).Name, f.Interface()))
		}
	}
	fields = append(fields, "Sample: runtime.Sample{"+strings.Join(sample, ", ")+"}")
	if in.IndexRange != 0 {
		fields = append(fields, fmt.Sprintf("IndexRange: %d", in.IndexRange))
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

// stableDigits is the most significant digits, from 4 down to 1, with which x formats (%g)
// as the same string as x·(1 ± 1e-4) ± 1e-6, and that string; 4 digits when none does
// (x within about 1e-6 of a change of sign).
func stableDigits(x float64) (int, string) {
	format := func(v float64, d int) string { return fmt.Sprintf("%.*g", d, v) }
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 4, format(x, 4)
	}
	d := 1e-4*math.Abs(x) + 1e-6
	for digits := 4; digits >= 1; digits-- {
		s := format(x, digits)
		if format(x-d, digits) == s && format(x+d, digits) == s {
			return digits, s
		}
	}
	return 4, format(x, 4)
}
