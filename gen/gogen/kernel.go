package gogen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// kernelFile emits kernels_generic.go: one function per pass, the scratch type and helpers.
func (e *gen) kernelFile() *jen.File {
	f := e.newFile()
	e.scratchType(f)
	e.constTensors(f)
	for _, ps := range e.p.Passes {
		f.Comment(fmt.Sprintf("pass%dGo is pass %d of the plan (lossgen explain): %s.", ps.Index, ps.Index, passSummary(ps)))
		f.Comment("Computed at each index, in this order:")
		for _, n := range ps.Compute {
			f.Comment("  " + n.String())
		}
		f.Func().Id(fmt.Sprintf("pass%dGo", ps.Index)).
			Params(jen.Id("in").Op("*").Id("Inputs"), jen.Id("out").Op("*").Id("Outputs"), jen.Id("s").Op("*").Id("scratch")).
			BlockFunc(func(b *jen.Group) { e.passBody(b, ps) })
		f.Line()
	}
	e.helpers(f)
	return f
}

func passSummary(ps *plan.Pass) string {
	kind := "an elementwise loop"
	if ps.Scan {
		kind = "a loop with a reverse scan along " + ps.Domain[len(ps.Domain)-1].Name
	}
	return fmt.Sprintf("%s over %s", kind, ps.Domain)
}

// scratchType emits the pooled scratch buffers: stored intermediates and the accumulators of
// reductions whose result is not a scalar.
func (e *gen) scratchType(f *jen.File) {
	var fields, allocs []jen.Code
	for _, buf := range e.p.Scratch {
		n := buf.Node
		if len(n.Shape) == 0 {
			fields = append(fields, jen.Id(buf.Name).Add(e.elem).Comment(n.String()))
			continue
		}
		fields = append(fields, jen.Id(buf.Name).Index().Add(e.elem).Comment(n.String()))
		allocs = append(allocs, jen.Id(buf.Name).Op(":").Make(jen.Index().Add(e.elem), jen.Lit(n.Shape.Numel())))
	}
	for _, ps := range e.p.Passes {
		for _, r := range ps.Reduces {
			if len(r.Shape) == 0 {
				continue
			}
			fields = append(fields, jen.Id(accName(r)).Index().Add(accType(r)).Comment("accumulators of v"+fmt.Sprint(r.ID)))
			allocs = append(allocs, jen.Id(accName(r)).Op(":").Make(jen.Index().Add(accType(r)), jen.Lit(r.Shape.Numel())))
		}
	}
	f.Comment("scratch holds what one Forward call needs besides its inputs and outputs; Forward")
	f.Comment("takes one from a pool, so steady-state calls allocate nothing.")
	f.Type().Id("scratch").Struct(fields...)
	f.Func().Id("newScratch").Params().Op("*").Id("scratch").Block(
		jen.Return(jen.Op("&").Id("scratch").ValuesFunc(func(g *jen.Group) {
			for _, a := range allocs {
				g.Add(a)
			}
		})),
	)
}

func accName(r *ir.Node) string { return fmt.Sprintf("acc%d", r.ID) }

// accType is the float64 accumulator type of a reduction.
func accType(r *ir.Node) jen.Code {
	switch r.Op {
	case ir.OpLogSumExp:
		return jen.Qual(RuntimePath, "LogSumExp")
	case ir.OpVar:
		return jen.Qual(RuntimePath, "Welford")
	case ir.OpMean:
		return jen.Qual(RuntimePath, "Mean")
	case ir.OpArgMax:
		return jen.Qual(RuntimePath, "ArgMax")
	}
	return jen.Float64()
}

// accInit is the empty accumulator of a reduction.
func accInit(r *ir.Node) jen.Code {
	switch r.Op {
	case ir.OpLogSumExp:
		return jen.Qual(RuntimePath, "NewLogSumExp").Call()
	case ir.OpVar:
		return jen.Qual(RuntimePath, "Welford").Values()
	case ir.OpMean:
		return jen.Qual(RuntimePath, "Mean").Values()
	case ir.OpArgMax:
		return jen.Qual(RuntimePath, "NewArgMax").Call()
	case ir.OpRMax:
		return jen.Qual("math", "Inf").Call(jen.Lit(-1))
	case ir.OpRMin:
		return jen.Qual("math", "Inf").Call(jen.Lit(1))
	}
	return jen.Lit(0.0)
}

func (e *gen) constTensors(f *jen.File) {
	for _, n := range e.g.Nodes {
		if n.Op != ir.OpConst || len(n.Shape) == 0 {
			continue
		}
		f.Commentf("const%d is a constant tensor %s.", n.ID, n.Shape)
		f.Var().Id(fmt.Sprintf("const%d", n.ID)).Op("=").Index(jen.Lit(len(n.Value))).Add(e.elem).ValuesFunc(func(g *jen.Group) {
			for _, v := range n.Value {
				g.Add(e.lit(v))
			}
		})
	}
}

// item is a value of a pass: loaded from memory, or computed.
type item struct {
	n    *ir.Node
	load bool
}

// loop is the emission state of one pass.
type loop struct {
	e   *gen
	ps  *plan.Pass
	dom ir.Shape
}

// depth is the loop depth at which every dim of s is bound (0: before any loop).
func (l *loop) depth(s ir.Shape) int {
	d := 0
	for _, dim := range s {
		if i := l.dom.Index(dim.Name); i+1 > d {
			d = i + 1
		}
	}
	return d
}

func loopVar(dim string) string { return "i" + dim }

// index is the name of the linear index of shape s inside the loop ("" for a scalar).
func index(s ir.Shape) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return loopVar(s[0].Name)
	}
	return "i" + strings.Join(s.Names(), "")
}

// indexExpr is the row-major linear index of s from the loop variables: iN*T + iT.
func indexExpr(s ir.Shape) jen.Code {
	var terms []jen.Code
	for i, d := range s {
		t := jen.Id(loopVar(d.Name))
		for _, inner := range s[i+1:] {
			t = t.Op("*").Id(inner.Name)
		}
		terms = append(terms, t)
	}
	x := jen.Add(terms[0])
	for _, t := range terms[1:] {
		x = x.Op("+").Add(t)
	}
	return x
}

func v(n *ir.Node) string { return fmt.Sprintf("v%d", n.ID) }

// at reads buffer expression buf at the index of shape s.
func at(buf jen.Code, s ir.Shape) jen.Code {
	if len(s) == 0 {
		return buf
	}
	return jen.Add(buf).Index(jen.Id(index(s)))
}

// bufExpr is where a stored node lives: an output field or a scratch field.
func (e *gen) bufExpr(n *ir.Node) jen.Code {
	buf := e.p.Buffer(n)
	if buf == nil {
		panic(fmt.Sprintf("gogen: v%d is not stored", n.ID))
	}
	if buf.Output != nil {
		return jen.Id("out").Dot(e.out[buf.Name])
	}
	return jen.Id("s").Dot(buf.Name)
}

// load is the expression that reads a node that the pass does not compute.
func (e *gen) load(n *ir.Node) jen.Code {
	switch n.Op {
	case ir.OpConst:
		if len(n.Shape) == 0 {
			return e.lit(n.Value[0])
		}
		return at(jen.Id(fmt.Sprintf("const%d", n.ID)), n.Shape)
	case ir.OpInput:
		return e.inputValue(n, at(jen.Id("in").Dot(e.in[n.Input.Name]), n.Shape))
	}
	return at(e.bufExpr(n), n.Shape)
}

// passBody emits the nested loops of a pass.
func (e *gen) passBody(b *jen.Group, ps *plan.Pass) {
	l := &loop{e: e, ps: ps, dom: ps.Domain}
	rank := len(ps.Domain)
	body := make([][]jen.Code, rank+1)
	put := func(d int, c jen.Code) { body[d] = append(body[d], c) }

	// Linear indices, defined where their dims are bound.
	shapes := map[string]ir.Shape{}
	note := func(s ir.Shape) {
		if len(s) > 1 {
			shapes[index(s)] = s
		}
	}
	for _, n := range ps.Loads {
		note(n.Shape)
	}
	for _, n := range ps.Compute {
		note(n.Shape)
		if n.Op == ir.OpShiftNext {
			note(n.Args[0].Shape)
		}
	}
	for _, r := range ps.Reduces {
		note(r.Shape)
		note(r.Args[0].Shape)
	}
	for _, name := range sortedKeys(shapes) {
		s := shapes[name]
		put(l.depth(s), jen.Id(name).Op(":=").Add(indexExpr(s)))
	}

	// Accumulators: scalar ones are locals, the others live in scratch and are reset here.
	for _, r := range ps.Reduces {
		if len(r.Shape) == 0 {
			b.Id(accName(r)).Op(":=").Add(accInit(r))
			continue
		}
		b.For(jen.Id("k").Op(":=").Range().Id("s").Dot(accName(r))).Block(
			jen.Id("s").Dot(accName(r)).Index(jen.Id("k")).Op("=").Add(accInit(r)))
	}

	// Values in ID order (dependency order), each at the depth of its shape.
	var items []item
	for _, n := range ps.Loads {
		items = append(items, item{n, true})
	}
	for _, n := range ps.Compute {
		items = append(items, item{n, false})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].n.ID < items[j].n.ID })
	stored := map[int]bool{}
	for _, n := range ps.Stores {
		stored[n.ID] = true
	}
	for _, it := range items {
		n := it.n
		d := l.depth(n.Shape)
		if it.load {
			put(d, jen.Id(v(n)).Op(":=").Add(e.load(n)))
			continue
		}
		if n.Op == ir.OpScanRev {
			put(rank-1, jen.Id("carry"+fmt.Sprint(n.ID)).Op(":=").Add(e.lit(0)))
		}
		for _, c := range e.compute(l, n) {
			put(d, c)
		}
		if stored[n.ID] {
			put(d, jen.Add(at(e.bufExpr(n), n.Shape)).Op("=").Id(v(n)))
		}
	}
	for _, r := range ps.Reduces {
		put(l.depth(r.Args[0].Shape), e.accumulate(l, r))
	}
	// Values that nothing in the loop reads after all (e.g. a load only a reduction uses
	// elsewhere) must not trip "declared and not used".
	used := usedVars(items, ps)
	for d := range body {
		for _, it := range items {
			if !used[it.n.ID] && l.depth(it.n.Shape) == d {
				body[d] = append(body[d], jen.Id("_").Op("=").Id(v(it.n)))
			}
		}
	}

	// Nest the loops.
	var nest func(d int) []jen.Code
	nest = func(d int) []jen.Code {
		stmts := append([]jen.Code(nil), body[d]...)
		if d == rank {
			return stmts
		}
		dim := ps.Domain[d]
		iv := loopVar(dim.Name)
		var head []jen.Code
		if ps.Scan && d == rank-1 {
			head = []jen.Code{jen.Id(iv).Op(":=").Id(dim.Name).Op("-").Lit(1), jen.Id(iv).Op(">=").Lit(0), jen.Id(iv).Op("--")}
		} else {
			head = []jen.Code{jen.Id(iv).Op(":=").Lit(0), jen.Id(iv).Op("<").Id(dim.Name), jen.Id(iv).Op("++")}
		}
		return append(stmts, jen.For(head...).Block(nest(d+1)...))
	}
	for _, c := range nest(0) {
		b.Add(c)
	}

	// Finalise the reductions into their buffers.
	for _, r := range ps.Reduces {
		if len(r.Shape) == 0 {
			b.Add(at(e.bufExpr(r), r.Shape)).Op("=").Add(e.conv(e.accResult(r, jen.Id(accName(r)))))
			continue
		}
		acc := jen.Id("s").Dot(accName(r)).Index(jen.Id("k"))
		b.For(jen.Id("k").Op(":=").Range().Id("s").Dot(accName(r))).Block(
			jen.Add(e.bufExpr(r)).Index(jen.Id("k")).Op("=").Add(e.conv(e.accResult(r, acc))))
	}
}

// usedVars reports which value variables some statement of the pass reads.
func usedVars(items []item, ps *plan.Pass) map[int]bool {
	used := map[int]bool{}
	for _, n := range ps.Compute {
		for i, a := range n.Args {
			if n.Op == ir.OpShiftNext || (n.Op == ir.OpGather && i == 0) {
				continue
			}
			used[a.ID] = true
		}
	}
	for _, n := range ps.Stores {
		used[n.ID] = true
	}
	for _, r := range ps.Reduces {
		used[r.Args[0].ID] = true
	}
	return used
}

func (e *gen) accResult(r *ir.Node, acc *jen.Statement) jen.Code {
	switch r.Op {
	case ir.OpLogSumExp:
		return jen.Add(acc).Dot("Result").Call()
	case ir.OpVar:
		return jen.Add(acc).Dot("Var").Call(jen.Lit(r.Corr))
	case ir.OpMean:
		return jen.Add(acc).Dot("Result").Call()
	case ir.OpArgMax:
		return jen.Float64().Call(jen.Add(acc).Dot("Idx"))
	}
	return acc
}

// accumulate adds the reduction's argument at the current index to its accumulator slot.
func (e *gen) accumulate(l *loop, r *ir.Node) jen.Code {
	var acc *jen.Statement
	if len(r.Shape) == 0 {
		acc = jen.Id(accName(r))
	} else {
		acc = jen.Id("s").Dot(accName(r)).Index(jen.Id(index(r.Shape)))
	}
	x := e.f64(jen.Id(v(r.Args[0])))
	switch r.Op {
	case ir.OpSum:
		return jen.Add(acc).Op("+=").Add(x)
	case ir.OpMean:
		return jen.Add(acc).Dot("Add").Call(x)
	case ir.OpRMax:
		return jen.Add(acc).Op("=").Qual(RuntimePath, "Max").Call(acc, x)
	case ir.OpRMin:
		return jen.Add(acc).Op("=").Qual(RuntimePath, "Min").Call(acc, x)
	case ir.OpLogSumExp, ir.OpVar:
		return jen.Add(acc).Dot("Add").Call(x)
	case ir.OpArgMax:
		axis := r.Axes[0]
		method := "Add"
		if l.ps.Scan && axis == l.dom[len(l.dom)-1].Name {
			method = "AddReverse"
		}
		return jen.Add(acc).Dot(method).Call(x, jen.Id(loopVar(axis)))
	}
	panic("gogen: not a reduction: " + r.Op.String())
}

// compute emits the statements that compute n into its variable.
func (e *gen) compute(l *loop, n *ir.Node) []jen.Code {
	arg := func(i int) jen.Code { return jen.Id(v(n.Args[i])) }
	def := func(x jen.Code) []jen.Code { return []jen.Code{jen.Id(v(n)).Op(":=").Add(x)} }
	math1 := func(fn string) []jen.Code {
		return def(e.conv(jen.Qual("math", fn).Call(e.f64(arg(0)))))
	}
	switch n.Op {
	case ir.OpNeg:
		return def(jen.Op("-").Add(arg(0)))
	case ir.OpAbs:
		return math1("Abs")
	case ir.OpExp:
		return math1("Exp")
	case ir.OpLog:
		return math1("Log")
	case ir.OpLog1p:
		return math1("Log1p")
	case ir.OpSqrt:
		return math1("Sqrt")
	case ir.OpAdd:
		return def(jen.Add(arg(0)).Op("+").Add(arg(1)))
	case ir.OpSub:
		return def(jen.Add(arg(0)).Op("-").Add(arg(1)))
	case ir.OpMul:
		// The conversion rounds the product: the Go spec then forbids fusing it into an FMA.
		return def(jen.Id(e.g.DType.String()).Call(jen.Add(arg(0)).Op("*").Add(arg(1))))
	case ir.OpDiv:
		return def(jen.Add(arg(0)).Op("/").Add(arg(1)))
	case ir.OpMin:
		return def(jen.Min(arg(0), arg(1)))
	case ir.OpMax:
		return def(jen.Max(arg(0), arg(1)))
	case ir.OpLt, ir.OpLe, ir.OpGt, ir.OpGe, ir.OpEq, ir.OpNe:
		ops := map[ir.Op]string{ir.OpLt: "<", ir.OpLe: "<=", ir.OpGt: ">", ir.OpGe: ">=", ir.OpEq: "==", ir.OpNe: "!="}
		return def(jen.Id("b2f").Call(jen.Add(arg(0)).Op(ops[n.Op]).Add(arg(1))))
	case ir.OpWhere:
		return def(jen.Id("sel").Call(arg(0), arg(1), arg(2)))
	case ir.OpScanRev:
		carry := "carry" + fmt.Sprint(n.ID)
		// y[t] = x[t] + y[t+1]·c[t], in the order TorchRL's loop GAE writes it.
		return []jen.Code{
			jen.Id(v(n)).Op(":=").Add(arg(0)).Op("+").Id(e.g.DType.String()).Call(jen.Id(carry).Op("*").Add(arg(1))),
			jen.Id(carry).Op("=").Id(v(n)),
		}
	case ir.OpShiftNext:
		x, last := n.Args[0], n.Args[1]
		axis := n.Axes[0]
		next := jen.Id(index(x.Shape)).Op("+").Lit(1)
		if len(x.Shape) == 1 {
			next = jen.Id(loopVar(axis)).Op("+").Lit(1)
		}
		return []jen.Code{
			jen.Var().Id(v(n)).Add(e.elem),
			jen.If(jen.Id(loopVar(axis)).Op("<").Id(axis).Op("-").Lit(1)).Block(
				jen.Id(v(n)).Op("=").Add(e.readAt(x, next)),
			).Else().Block(
				jen.Id(v(n)).Op("=").Add(e.load(last)),
			),
		}
	case ir.OpGather:
		x, idx := n.Args[0], n.Args[1]
		axis := n.Axes[0]
		// Index of x: the output's index with the gathered axis inserted.
		var terms []jen.Code
		for i, d := range x.Shape {
			var t *jen.Statement
			if d.Name == axis {
				t = jen.Int().Call(jen.Id(v(idx)))
			} else {
				t = jen.Id(loopVar(d.Name))
			}
			for _, inner := range x.Shape[i+1:] {
				t = t.Op("*").Id(inner.Name)
			}
			terms = append(terms, t)
		}
		ix := jen.Add(terms[0])
		for _, t := range terms[1:] {
			ix = ix.Op("+").Add(t)
		}
		return def(e.readAt(x, ix))
	}
	panic("gogen: unhandled op " + n.Op.String())
}

// inputValue converts an element x of input n to the kernel's float type: flags through
// b2f, indices through conv, floats as they are.
func (e *gen) inputValue(n *ir.Node, x jen.Code) jen.Code {
	switch n.Input.Kind {
	case ir.Bool:
		return jen.Id("b2f").Call(x)
	case ir.Index:
		return e.conv(x)
	}
	return x
}

// readAt reads a stored node or input at an explicit linear index expression.
func (e *gen) readAt(n *ir.Node, ix jen.Code) jen.Code {
	switch n.Op {
	case ir.OpInput:
		return e.inputValue(n, jen.Id("in").Dot(e.in[n.Input.Name]).Index(ix))
	case ir.OpConst:
		return jen.Id(fmt.Sprintf("const%d", n.ID)).Index(ix)
	}
	return jen.Add(e.bufExpr(n)).Index(ix)
}

func (e *gen) helpers(f *jen.File) {
	el := e.elem
	f.Comment("b2f is a comparison or flag as 0 or 1.")
	f.Func().Id("b2f").Params(jen.Id("b").Bool()).Add(el).Block(
		jen.If(jen.Id("b")).Block(jen.Return(jen.Lit(1))),
		jen.Return(jen.Lit(0)),
	)
	f.Comment("sel is torch.where(c, a, b) for c in {0, 1}.")
	f.Func().Id("sel").Params(jen.List(jen.Id("c"), jen.Id("a"), jen.Id("b")).Add(el)).Add(el).Block(
		jen.If(jen.Id("c").Op("!=").Lit(0)).Block(jen.Return(jen.Id("a"))),
		jen.Return(jen.Id("b")),
	)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
