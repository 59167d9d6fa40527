package gogen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/lossgen/lossgen/gen/ir"
)

// goType is the Go element type an input is stored as.
func (e *gen) goType(in *ir.Input) jen.Code {
	switch in.Kind {
	case ir.Bool:
		return jen.Bool()
	case ir.Index:
		return jen.Int64()
	}
	return e.elem
}

func shapeDoc(s ir.Shape) string {
	if len(s) == 0 {
		return "scalar"
	}
	return "[" + strings.Join(s.Names(), ", ") + "]"
}

// numelExpr is the element count of s as a constant expression of the dim names (N * T).
func numelExpr(s ir.Shape) jen.Code {
	if len(s) == 0 {
		return jen.Lit(1)
	}
	x := jen.Id(s[0].Name)
	for _, d := range s[1:] {
		x = x.Op("*").Id(d.Name)
	}
	return x
}

// apiFile emits <package>.go: the package doc, dims, parameters, Inputs/Outputs and Forward.
func (e *gen) apiFile() *jen.File {
	f := e.newFile()
	g := e.g
	f.PackageComment(e.packageDoc())

	f.Comment("The runtime version this code was generated for: compilation fails against a runtime")
	f.Comment("package that is too old or too new for it.")
	f.Const().Defs(
		jen.Id("_").Op("=").Qual(RuntimePath, "EnforceVersion").Call(jen.Qual(RuntimePath, "GenVersion").Op("-").Lit(e.m.GenVersion)),
		jen.Id("_").Op("=").Qual(RuntimePath, "EnforceVersion").Call(jen.Lit(e.m.GenVersion).Op("-").Qual(RuntimePath, "MinVersion")),
	)

	f.Comment("The fixed dims the kernel is specialised for.")
	f.Const().DefsFunc(func(d *jen.Group) {
		for _, dim := range g.Dims {
			d.Id(dim.Name).Op("=").Lit(dim.Size)
		}
	})
	if len(e.m.Params) > 0 {
		f.Comment("The hyperparameters baked into the kernel (TorchRL's names).")
		f.Const().DefsFunc(func(d *jen.Group) {
			for _, p := range e.m.Params {
				d.Comment(p.Doc)
				d.Id(p.Name).Op("=").Op(p.Value)
			}
		})
	}

	e.dataTypes(f)
	e.gradsType(f)

	f.Comment("NewOutputs returns Outputs with every slice allocated.")
	f.Func().Id("NewOutputs").Params().Op("*").Id("Outputs").Block(
		jen.Return(jen.Op("&").Id("Outputs").ValuesFunc(func(v *jen.Group) {
			for _, o := range g.Outputs {
				if len(o.Node.Shape) > 0 {
					v.Line().Id(e.out[o.Name]).Op(":").Make(jen.Index().Add(e.elem), numelExpr(o.Node.Shape))
				}
			}
			v.Line()
		})),
	)

	f.Comment("NewInputs returns Inputs with every slice allocated (zeros) for the caller to fill")
	if e.hasState() {
		f.Comment("or point elsewhere, and State the state the spec starts from (NewState).")
	} else {
		f.Comment("or point elsewhere.")
	}
	f.Func().Id("NewInputs").Params().Op("*").Id("Inputs").Block(
		jen.Return(jen.Op("&").Id("Inputs").ValuesFunc(func(v *jen.Group) {
			for _, in := range g.Inputs {
				if !in.State {
					v.Line().Id(e.in[in.Name]).Op(":").Make(jen.Index().Add(e.goType(in)), numelExpr(in.Shape))
				}
			}
			if e.hasState() {
				v.Line().Id("State").Op(":").Id("NewState").Call()
			}
			v.Line()
		})),
	)

	f.Comment("InputNames are the data names of the inputs, in the order of Inputs.")
	f.Var().Id("InputNames").Op("=").Index().String().ValuesFunc(func(v *jen.Group) {
		for _, in := range g.Inputs {
			v.Lit(in.Name)
		}
	})
	f.Comment("OutputNames are the names of the outputs, in the order of Outputs.")
	f.Var().Id("OutputNames").Op("=").Index().String().ValuesFunc(func(v *jen.Group) {
		for _, o := range g.Outputs {
			v.Lit(o.Name)
		}
	})
	e.setGet(f)
	e.forward(f)
	return f
}

func dimsDoc(dims []ir.Dim) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = fmt.Sprintf("%s=%d", d.Name, d.Size)
	}
	return strings.Join(parts, ", ")
}

func (e *gen) typeName(in *ir.Input) string {
	switch in.Kind {
	case ir.Bool:
		return "bool"
	case ir.Index:
		return "int64"
	}
	return e.g.DType.String()
}

// setGet emits Inputs.Set and Outputs.Get, the by-name access tools and tests use.
func (e *gen) setGet(f *jen.File) {
	g := e.g
	f.Comment("Set points the input with the given data name at data, which must be a slice of the")
	f.Commentf("input's element type (%s; []bool for flags, []int64 for indices). Lengths are", g.DType)
	f.Comment("checked by Forward.")
	f.Func().Params(jen.Id("in").Op("*").Id("Inputs")).Id("Set").Params(jen.Id("name").String(), jen.Id("data").Any()).Error().Block(
		jen.Switch(jen.Id("name")).BlockFunc(func(sw *jen.Group) {
			for _, in := range g.Inputs {
				set := jen.Id("in").Dot(e.in[in.Name]).Op("=").Id("x")
				if in.State {
					// State: a one-element slice sets the value the next call starts from.
					set = jen.If(jen.Len(jen.Id("x")).Op("!=").Lit(1)).Block(
						jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(e.m.Package+": state %q wants one value, got %d"), jen.Id("name"), jen.Len(jen.Id("x")))),
					).Line().If(jen.Id("in").Dot("State").Op("==").Nil()).Block(
						jen.Id("in").Dot("State").Op("=").Id("NewState").Call(),
					).Line().Id("in").Dot("State").Dot(FieldName(in.Name)).Op("=").Id("x").Index(jen.Lit(0))
				}
				sw.Case(jen.Lit(in.Name)).Block(
					jen.List(jen.Id("x"), jen.Id("ok")).Op(":=").Id("data").Assert(jen.Index().Add(e.goType(in))),
					jen.If(jen.Op("!").Id("ok")).Block(
						jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(e.m.Package+": input %q wants []"+e.typeName(in)+", got %T"), jen.Id("name"), jen.Id("data"))),
					),
					set,
					jen.Return(jen.Nil()),
				)
			}
		}),
		jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit(e.m.Package+": no input %q"), jen.Id("name"))),
	)
	f.Comment("Get returns the named output as a slice: the output's own slice, or a one-element copy")
	f.Comment("of a scalar. ok is false for an unknown name.")
	f.Func().Params(jen.Id("out").Op("*").Id("Outputs")).Id("Get").Params(jen.Id("name").String()).Params(jen.Index().Add(e.elem), jen.Bool()).Block(
		jen.Switch(jen.Id("name")).BlockFunc(func(sw *jen.Group) {
			for _, o := range g.Outputs {
				x := jen.Id("out").Dot(e.out[o.Name])
				if len(o.Node.Shape) == 0 {
					x = jen.Index().Add(e.elem).Values(x)
				}
				sw.Case(jen.Lit(o.Name)).Block(jen.Return(x, jen.True()))
			}
		}),
		jen.Return(jen.Nil(), jen.False()),
	)
	if len(e.grads) > 0 {
		f.Comment("Get returns the named gradient (grad.<input data name>); ok is false for an unknown name.")
		f.Func().Params(jen.Id("g").Op("*").Id("Grads")).Id("Get").Params(jen.Id("name").String()).Params(jen.Index().Add(e.elem), jen.Bool()).Block(
			jen.Switch(jen.Id("name")).BlockFunc(func(sw *jen.Group) {
				for _, o := range e.grads {
					sw.Case(jen.Lit(o.Name)).Block(jen.Return(jen.Id("g").Dot(e.out[o.Name]), jen.True()))
				}
			}),
			jen.Return(jen.Nil(), jen.False()),
		)
	}
}

// forwardDoc is Forward's doc comment: what it computes and every error it returns.
func (e *gen) forwardDoc(f *jen.File) {
	f.Comment("Forward computes every output from in. When a slice of in or out has the wrong length it")
	f.Comment("returns a *runtime.ShapeError naming each one, and when an output shares memory with")
	f.Comment("another output or an input a *runtime.OverlapError; either way it writes nothing. Inputs")
	if e.hasState() {
		f.Comment("may share memory with each other. Forward updates in.State: it is safe for concurrent use")
		f.Comment("with distinct out values and distinct States.")
	} else {
		f.Comment("may share memory with each other. Forward is safe for concurrent use with distinct out values.")
	}
	f.Comment("A nil in or out is an error.")
	if len(ir.IndexChecks(e.g)) > 0 {
		f.Comment("An index input (an action) outside its axis, where it is read, returns a")
		f.Comment("*runtime.IndexError naming the first such element, before anything is written.")
	}
	if len(e.faults()) > 0 {
		f.Comment("When the inputs break a precondition TorchRL checks at run time (see the fault outputs")
		f.Comment("in Outputs), it returns a *runtime.DataError after writing every output; the outputs")
		f.Comment("are then not meaningful.")
	}
}

// forward emits Forward (and ForwardBackward), the implementation registry and the loops
// over passes.
func (e *gen) forward(f *jen.File) {
	kernels := Kernels(e.p, e.fb)
	passList := func(k Kernel) jen.Code {
		return jen.Index().Add(e.passType(k)).ValuesFunc(func(v *jen.Group) {
			for _, ps := range k.Plan.Passes {
				if RunsPass(ps) {
					v.Id(k.Name(fmt.Sprintf("pass%dGo", ps.Index)))
				}
			}
		})
	}
	f.Comment("impl is one implementation of every pass of each kernel's plan, in order.")
	f.Type().Id("impl").StructFunc(func(g *jen.Group) {
		g.Id("name").String()
		for _, k := range kernels {
			g.Id(k.Name("passes")).Index().Add(e.passType(k))
		}
	})
	f.Comment("impls are the implementations this build has: the pure-Go kernels, then those an")
	f.Comment("assembly backend registers at init where the CPU supports them. Forward runs the last;")
	f.Comment("the tests run them all.")
	goImpl := jen.Dict{jen.Id("name"): jen.Lit("go")}
	for _, k := range kernels {
		goImpl[jen.Id(k.Name("passes"))] = passList(k)
	}
	f.Var().Id("impls").Op("=").Index().Id("impl").Values(jen.Values(goImpl))
	f.Comment("Implementation names the kernels Forward runs: \"avx2\" (AVX2+FMA assembly) or \"go\"")
	f.Comment("(pure Go: the purego build tag, LOSSGEN_PUREGO=1, other architectures, older CPUs).")
	f.Func().Id("Implementation").Params().String().Block(jen.Return(jen.Id("impls").Index(jen.Len(jen.Id("impls")).Op("-").Lit(1)).Dot("name")))

	last := jen.Id("impls").Index(jen.Len(jen.Id("impls")).Op("-").Lit(1))
	e.forwardDoc(f)
	f.Func().Id("Forward").Params(jen.Id("in").Op("*").Id("Inputs"), jen.Id("out").Op("*").Id("Outputs")).Error().Block(
		e.returnChecked(jen.Id("forward").Call(last, jen.Id("in"), jen.Id("out")))...,
	)
	run := func(b *jen.Group, k Kernel, grads bool) {
		if e.hasState() {
			b.Id("st").Op(":=").Id("in").Dot("State")
			b.Id("in").Op("=").Id("in").Dot("withState").Call()
		}
		b.Id("s").Op(":=").Id(k.Name("scratchPool")).Dot("Get").Call().Assert(jen.Op("*").Id(k.Name("scratch")))
		b.Defer().Id(k.Name("scratchPool")).Dot("Put").Call(jen.Id("s"))
		args := []jen.Code{jen.Id("in"), jen.Id("out")}
		if e.fb != nil {
			if grads {
				args = append(args, jen.Id("g"))
			} else {
				args = append(args, jen.Nil())
			}
		}
		b.For(jen.List(jen.Id("_"), jen.Id("pass")).Op(":=").Range().Id("im").Dot(k.Name("passes"))).Block(
			jen.Id("pass").Call(append(args, jen.Id("s"))...),
		)
		for _, in := range e.g.Inputs {
			if in.State {
				b.Id("st").Dot(FieldName(in.Name)).Op("=").Id("out").Dot(e.out[in.Name])
			}
		}
		b.Return(jen.Nil())
	}
	f.Comment("forward checks its arguments, then runs im's Forward passes with pooled scratch buffers.")
	f.Func().Id("forward").Params(jen.Id("im").Id("impl"), jen.Id("in").Op("*").Id("Inputs"), jen.Id("out").Op("*").Id("Outputs")).Error().BlockFunc(func(b *jen.Group) {
		b.If(jen.Id("err").Op(":=").Id("check").Call(jen.Id("in"), jen.Id("out"), e.gradsArg(jen.Nil())), jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("err")))
		run(b, kernels[0], false)
	})
	if e.fb != nil {
		f.Comment("ForwardBackward computes every output, as Forward does, and the gradients of the summed")
		f.Comment("loss_* outputs into g (see Grads), in the same passes over the batch. It fails as Forward")
		f.Comment("does, also for a gradient slice of the wrong length or sharing memory with another")
		if e.hasState() {
			f.Comment("argument. It updates in.State, as Forward does: it is safe for concurrent use with")
			f.Comment("distinct out, g and State values.")
		} else {
			f.Comment("argument. It is safe for concurrent use with distinct out and g values.")
		}
		f.Func().Id("ForwardBackward").Params(jen.Id("in").Op("*").Id("Inputs"), jen.Id("out").Op("*").Id("Outputs"), jen.Id("g").Op("*").Id("Grads")).Error().Block(
			e.returnChecked(jen.Id("forwardBackward").Call(last, jen.Id("in"), jen.Id("out"), jen.Id("g")))...,
		)
		f.Comment("forwardBackward checks its arguments, then runs im's ForwardBackward passes.")
		f.Func().Id("forwardBackward").Params(jen.Id("im").Id("impl"), jen.Id("in").Op("*").Id("Inputs"), jen.Id("out").Op("*").Id("Outputs"), jen.Id("g").Op("*").Id("Grads")).Error().BlockFunc(func(b *jen.Group) {
			b.If(jen.Id("g").Op("==").Nil()).Block(jen.Return(jen.Qual("errors", "New").Call(jen.Lit(e.m.Package + ": ForwardBackward needs non-nil g"))))
			b.If(jen.Id("err").Op(":=").Id("check").Call(jen.Id("in"), jen.Id("out"), jen.Id("g")), jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("err")))
			run(b, kernels[1], true)
		})
	}
	e.check(f)
	if len(e.faults()) > 0 {
		f.Comment("faults returns a *runtime.DataError for the first fault output (a run-time check of the")
		f.Comment("inputs computed by the kernel) that is not 0. Forward and ForwardBackward call it once")
		f.Comment("the kernels have run; the unexported forward functions the tests compare do not.")
		f.Func().Id("faults").Params(jen.Id("out").Op("*").Id("Outputs")).Error().BlockFunc(func(b *jen.Group) {
			e.faultChecks(b)
			b.Return(jen.Nil())
		})
	}
}

// returnChecked returns call's error, then (with fault outputs) the faults' error.
func (e *gen) returnChecked(call jen.Code) []jen.Code {
	if len(e.faults()) == 0 {
		return []jen.Code{jen.Return(call)}
	}
	return []jen.Code{
		jen.If(jen.Id("err").Op(":=").Add(call), jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("err"))),
		jen.Return(jen.Id("faults").Call(jen.Id("out"))),
	}
}

// faults are the outputs that check the inputs at run time (ir.Fault).
func (e *gen) faults() []*ir.Output {
	var out []*ir.Output
	for _, o := range e.g.Outputs {
		if o.Role == ir.Fault {
			out = append(out, o)
		}
	}
	return out
}

// faultChecks returns a *runtime.DataError for the first fault output that is not 0.
func (e *gen) faultChecks(b *jen.Group) {
	for _, o := range e.faults() {
		field := jen.Id("out").Dot(e.out[o.Name])
		b.If(field.Clone().Op("!=").Lit(0)).Block(
			jen.Return(jen.Op("&").Qual(RuntimePath, "DataError").Values(jen.Dict{
				jen.Id("Kernel"): jen.Lit(e.m.Package), jen.Id("Output"): jen.Lit("out." + e.out[o.Name]),
				jen.Id("Count"): jen.Float64().Call(field.Clone()), jen.Id("Msg"): jen.Lit(o.Doc),
			})),
		)
	}
}

// gradsArg is x for a package with gradients, nothing otherwise (check's third argument).
func (e *gen) gradsArg(x jen.Code) jen.Code {
	if e.fb == nil {
		return jen.Null()
	}
	return x
}

// check emits check: lengths, index ranges, and no output sharing memory with another
// argument, before any kernel writes.
func (e *gen) check(f *jen.File) {
	g := e.g
	params := []jen.Code{jen.Id("in").Op("*").Id("Inputs"), jen.Id("out").Op("*").Id("Outputs")}
	if e.fb != nil {
		params = append(params, jen.Id("g").Op("*").Id("Grads"))
	}
	f.Comment("check reports the first problem with a call's arguments (g is nil for Forward).")
	f.Func().Id("check").Params(params...).Error().BlockFunc(func(b *jen.Group) {
		b.If(jen.Id("in").Op("==").Nil().Op("||").Id("out").Op("==").Nil()).Block(
			jen.Return(jen.Qual("errors", "New").Call(jen.Lit(e.m.Package + ": in and out must not be nil"))),
		)
		checks := []jen.Code{jen.Lit(e.m.Package)}
		check := func(name string, x jen.Code, s ir.Shape) {
			checks = append(checks, jen.Qual(RuntimePath, "Len").Values(jen.Dict{
				jen.Id("Name"): jen.Lit(name), jen.Id("Got"): jen.Len(x), jen.Id("Want"): numelExpr(s),
			}))
		}
		var spans, gspans []jen.Code
		span := func(name string, x jen.Code, out bool) jen.Code {
			return jen.Qual(RuntimePath, "SpanOf").Call(jen.Lit(name), x, jen.Lit(out))
		}
		if e.hasState() {
			b.If(jen.Id("in").Dot("State").Op("==").Nil()).Block(
				jen.Return(jen.Qual("errors", "New").Call(jen.Lit(e.m.Package + ": in.State is nil: NewState() gives the state the spec starts from"))),
			)
		}
		for _, in := range g.Inputs {
			if in.State {
				continue // filled by Forward from in.State
			}
			x := jen.Id("in").Dot(e.in[in.Name])
			check("in."+e.in[in.Name], x, in.Shape)
			spans = append(spans, span("in."+e.in[in.Name], x, false))
		}
		for _, o := range g.Outputs {
			if len(o.Node.Shape) > 0 {
				x := jen.Id("out").Dot(e.out[o.Name])
				check("out."+e.out[o.Name], x, o.Node.Shape)
				spans = append(spans, span("out."+e.out[o.Name], x, true))
			}
		}
		b.If(jen.Id("err").Op(":=").Qual(RuntimePath, "CheckLens").Custom(jen.Options{Open: "(", Close: ")", Separator: ",", Multi: true}, checks...),
			jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("err")))
		spanVar := jen.Id("spans").Op(":=").Index().Qual(RuntimePath, "Span").Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, spans...)
		b.Add(spanVar)
		if e.fb != nil {
			gchecks := []jen.Code{jen.Lit(e.m.Package)}
			for _, o := range e.grads {
				x := jen.Id("g").Dot(e.out[o.Name])
				gchecks = append(gchecks, jen.Qual(RuntimePath, "Len").Values(jen.Dict{
					jen.Id("Name"): jen.Lit("g." + e.out[o.Name]), jen.Id("Got"): jen.Len(x), jen.Id("Want"): numelExpr(o.Node.Shape),
				}))
				gspans = append(gspans, span("g."+e.out[o.Name], x, true))
			}
			b.If(jen.Id("g").Op("!=").Nil()).BlockFunc(func(gb *jen.Group) {
				gb.If(jen.Id("err").Op(":=").Qual(RuntimePath, "CheckLens").Custom(jen.Options{Open: "(", Close: ")", Separator: ",", Multi: true}, gchecks...),
					jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("err")))
				gb.Id("spans").Op("=").Append(append([]jen.Code{jen.Id("spans")}, gspans...)...)
			})
		}
		b.If(jen.Id("err").Op(":=").Qual(RuntimePath, "CheckDisjoint").Call(jen.Lit(e.m.Package), jen.Id("spans")), jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("err")))
		e.indexChecks(b)
		b.Return(jen.Nil())
	})
}

// gradDoc is how a gradient is computed (each loss term's part), for the Grads doc comment.
func gradDoc(g *ir.Graph, input string) string {
	for _, in := range g.Inputs {
		if in.Name == input && len(in.GradDoc) > 0 {
			return strings.Join(in.GradDoc, "; ")
		}
	}
	return "nothing: no loss term reads it (a zero gradient)"
}

// indexChecks rejects index inputs outside the axis they select along, before any kernel
// runs: exactly the values the gathers read (ir.IndexChecks; an input masked away is checked
// only where its mask selects it), which the PTX kernels check as they gather.
func (e *gen) indexChecks(b *jen.Group) {
	for _, c := range ir.IndexChecks(e.g) {
		v := jen.Id("v")
		bad := jen.Id("v").Op("<").Lit(0).Op("||").Id("v").Op(">=").Lit(c.Size)
		if c.Valid != nil {
			sel := jen.Id("in").Dot(e.in[c.Valid.Name]).Index(jen.Id("i"))
			if c.Negate {
				sel = jen.Op("!").Add(sel)
			}
			bad = sel.Op("&&").Parens(bad)
		}
		field := jen.Id("in").Dot(e.in[c.Input.Name])
		b.For(jen.List(jen.Id("i"), v).Op(":=").Range().Add(field)).Block(
			jen.If(bad).Block(
				jen.Return(jen.Op("&").Qual(RuntimePath, "IndexError").Values(jen.Dict{
					jen.Id("Kernel"): jen.Lit(e.m.Package), jen.Id("Input"): jen.Lit("in." + e.in[c.Input.Name]),
					jen.Id("At"): jen.Id("i"), jen.Id("Value"): jen.Int().Call(jen.Id("v")), jen.Id("Size"): jen.Lit(c.Size),
				})),
			),
		)
	}
}

// hasState reports whether the kernel keeps state between calls (KLPEN's β).
func (e *gen) hasState() bool {
	for _, in := range e.g.Inputs {
		if in.State {
			return true
		}
	}
	return false
}

// stateType emits State, NewState, Reset and Inputs.withState for a kernel with state.
func (e *gen) stateType(f *jen.File) {
	if !e.hasState() {
		return
	}
	var fields []*ir.Input
	for _, in := range e.g.Inputs {
		if in.State {
			fields = append(fields, in)
		}
	}
	f.Comment("State is what the kernel carries from one call to the next, as TorchRL's loss module")
	f.Comment("keeps it: Forward and ForwardBackward compute with the values in force at the call's")
	f.Comment("start (value and gradient alike) and then store the updated values here, which are also")
	f.Comment("returned as outputs of the same names. Share a State between calls made one after another,")
	f.Comment("not between concurrent calls.")
	f.Type().Id("State").StructFunc(func(s *jen.Group) {
		for _, in := range fields {
			s.Commentf("%s is %q: %s; it starts at %v.", FieldName(in.Name), in.Name, in.Doc, in.Init)
			s.Id(FieldName(in.Name)).Add(e.elem)
		}
	})
	init := jen.Dict{}
	for _, in := range fields {
		init[jen.Id(FieldName(in.Name))] = jen.Lit(in.Init)
	}
	f.Comment("NewState returns the state the spec starts from.")
	f.Func().Id("NewState").Params().Op("*").Id("State").Block(jen.Return(jen.Op("&").Id("State").Values(init)))
	f.Comment("Reset restores the state the spec starts from (TorchRL's reset()).")
	f.Func().Params(jen.Id("s").Op("*").Id("State")).Id("Reset").Params().Block(jen.Op("*").Id("s").Op("=").Op("*").Id("NewState").Call())
	f.Comment("withState returns a copy of in whose state slices hold in.State's values.")
	f.Func().Params(jen.Id("in").Op("*").Id("Inputs")).Id("withState").Params().Op("*").Id("Inputs").BlockFunc(func(b *jen.Group) {
		b.Id("c").Op(":=").Op("*").Id("in")
		for _, in := range fields {
			b.Id("c").Dot(e.in[in.Name]).Op("=").Index().Add(e.elem).Values(jen.Id("in").Dot("State").Dot(FieldName(in.Name)))
		}
		b.Return(jen.Op("&").Id("c"))
	})
}

// packageDoc is the generated package's doc comment: what it computes, its inputs and
// outputs, where its semantics are written, and whether it has golden cases.
func (e *gen) packageDoc() string {
	g := e.g
	var doc strings.Builder
	fmt.Fprintf(&doc, "Package %s is a fused reinforcement-learning loss kernel generated by lossgen for fixed shapes.\n\n", e.m.Package)
	for _, line := range e.m.Summary {
		doc.WriteString(line + "\n")
	}
	fmt.Fprintf(&doc, "\nElement type %s; dims %s; batch %s. Call Forward with Inputs and Outputs whose\n", g.DType, dimsDoc(g.Dims), shapeDoc(g.Batch))
	doc.WriteString("slices hold exactly the stated number of elements, row-major.\n\n")
	doc.WriteString("Inputs (data name, shape, meaning):\n\n")
	for _, in := range g.Inputs {
		fmt.Fprintf(&doc, "  - %s %s (%s): %s\n", in.Name, shapeDoc(in.Shape), e.typeName(in), in.Doc)
	}
	doc.WriteString("\nOutputs (TorchRL's names):\n\n")
	for _, o := range g.Outputs {
		if cites(o.Doc) {
			fmt.Fprintf(&doc, "  - %s %s: %s\n", o.Name, shapeDoc(o.Node.Shape), o.Doc)
		} else {
			fmt.Fprintf(&doc, "  - %s %s: %s (%s)\n", o.Name, shapeDoc(o.Node.Shape), o.Doc, o.Source)
		}
	}
	doc.WriteString("\nThe kernel runs as the passes printed by `lossgen explain`; the pure-Go version of each\n")
	doc.WriteString("pass is in kernels_generic.go.")
	if e.m.SemanticsURL != "" {
		doc.WriteString("\n\nThe doc comments cite the semantics lossgen implements (TorchRL v0.11.0's, and lossgen's own\n")
		fmt.Fprintf(&doc, "decisions) as SEMANTICS.md §N: lossgen's docs/SEMANTICS.md, %s.", e.m.SemanticsURL)
	}
	if e.m.NoGolden {
		doc.WriteString("\n\nThis package was generated without golden cases (lossgen generate without -golden): its\n")
		doc.WriteString("test compares its implementations with each other, but no output with reference values;\n")
		fmt.Fprintf(&doc, "TestGolden is skipped. Add them with `lossgen golden -update -dir testdata/golden %s`,\n", e.m.SpecFile)
		fmt.Fprintf(&doc, "then regenerate with `lossgen generate -o . -golden testdata/golden/%s %s`.", e.m.Package, e.m.SpecFile)
	}
	return doc.String()
}

// dataTypes emits Inputs, State and Outputs.
func (e *gen) dataTypes(f *jen.File) {
	g := e.g
	f.Comment("Inputs are the kernel's inputs, named after their data keys. Every slice must hold")
	f.Comment("exactly the number of elements of its shape, row-major.")
	f.Type().Id("Inputs").StructFunc(func(s *jen.Group) {
		for _, in := range g.Inputs {
			if in.State {
				s.Commentf("%s is State.%s as the kernels read it (Forward fills it).", e.in[in.Name], FieldName(in.Name))
			} else {
				s.Commentf("%s is %q %s: %s.", e.in[in.Name], in.Name, shapeDoc(in.Shape), in.Doc)
			}
			s.Id(e.in[in.Name]).Index().Add(e.goType(in))
		}
		if e.hasState() {
			s.Comment("State is the kernel state the call starts from and updates (see State): required.")
			s.Id("State").Op("*").Id("State")
		}
	})
	e.stateType(f)
	f.Comment("Outputs are the kernel's outputs, with TorchRL's names. Scalars are plain fields;")
	f.Comment("the slices must hold exactly their shape's number of elements (see NewOutputs).")
	f.Type().Id("Outputs").StructFunc(func(s *jen.Group) {
		for _, o := range g.Outputs {
			if cites(o.Doc) {
				s.Commentf("%s is %q %s: %s.", e.out[o.Name], o.Name, shapeDoc(o.Node.Shape), o.Doc)
			} else {
				s.Commentf("%s is %q %s: %s. Source: %s.", e.out[o.Name], o.Name, shapeDoc(o.Node.Shape), o.Doc, o.Source)
			}
			if len(o.Node.Shape) == 0 {
				s.Id(e.out[o.Name]).Add(e.elem)
			} else {
				s.Id(e.out[o.Name]).Index().Add(e.elem)
			}
		}
	})
}

// gradsType emits Grads, NewGrads and GradNames, for a package with gradients.
func (e *gen) gradsType(f *jen.File) {
	if len(e.grads) == 0 {
		return
	}
	f.Comment("Grads are the gradients ForwardBackward computes: for each differentiable input, the")
	f.Comment("gradient of the sum of every element of every loss_* output with respect to it, same shape")
	f.Comment("as the input (TorchRL users sum the loss_* values and call backward).")
	f.Type().Id("Grads").StructFunc(func(s *jen.Group) {
		for _, o := range e.grads {
			in := strings.TrimPrefix(o.Name, "grad.")
			s.Commentf("%s is ∂(Σ loss_*)/∂%s %s (%s), the sum of: %s.", e.out[o.Name], in, shapeDoc(o.Node.Shape), o.Name, gradDoc(e.g, in))
			s.Id(e.out[o.Name]).Index().Add(e.elem)
		}
	})
	f.Comment("NewGrads returns Grads with every slice allocated.")
	f.Func().Id("NewGrads").Params().Op("*").Id("Grads").Block(
		jen.Return(jen.Op("&").Id("Grads").ValuesFunc(func(v *jen.Group) {
			for _, o := range e.grads {
				v.Id(e.out[o.Name]).Op(":").Make(jen.Index().Add(e.elem), numelExpr(o.Node.Shape))
			}
		})),
	)
	f.Comment("GradNames are the names of the gradients (grad.<input data name>), in the order of Grads.")
	f.Var().Id("GradNames").Op("=").Index().String().ValuesFunc(func(v *jen.Group) {
		for _, o := range e.grads {
			v.Lit(o.Name)
		}
	})

}

// cites reports whether an output's doc already names its source file (a term computed by a
// helper of the loss: PPOLoss._weighted_loss_entropy), which then stands for the loss's.
func cites(doc string) bool { return strings.Contains(doc, ".py ") }
