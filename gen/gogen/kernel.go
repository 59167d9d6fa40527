package gogen

import (
	"fmt"
	"sort"

	"github.com/dave/jennifer/jen"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// kernelFile emits kernels_generic.go: for each kernel (Forward's, ForwardBackward's) one
// function per pass (a chunked pass's with its chunk function and states: chunks.go) and its
// scratch type; then the chunks' merge functions and the helpers.
func (e *gen) kernelFile() *jen.File {
	f := e.newFile()
	e.mergeOps = map[ir.Op]*ir.Node{}
	for _, k := range Kernels(e.p, e.fb) {
		e.k = k
		e.names = Identifiers(k.Plan.Graph)
		e.scratchType(f)
		e.constTensors(f)
		what := "Forward"
		if k.Prefix != "" {
			what = "ForwardBackward"
		}
		for _, ps := range k.Plan.Passes {
			name := k.Name(fmt.Sprintf("pass%dGo", ps.Index))
			c := e.chunksOf(ps)
			switch {
			case !RunsPass(ps):
				continue
			case c != nil:
				doc := fmt.Sprintf("%s is pass %d of %s's plan (lossgen explain): %s, in %s chunks of %s (%s).", name, ps.Index, what, passSummary(ps), c.count, c.unit(), c.run)
				if ps.Row != nil {
					doc = rowLocalDoc(name, what, ps.Row) + fmt.Sprintf(" It runs in %s chunks of %s (%s).", c.count, c.unit(), c.run)
				}
				e.chunkedPass(f, c, doc)
			case ps.Row != nil:
				f.Comment(rowLocalDoc(name, what, ps.Row))
				f.Func().Id(name).Params(e.passParams(k)...).BlockFunc(func(b *jen.Group) { e.rowLocalBody(b, ps.Row) })
			default:
				f.Comment(fmt.Sprintf("%s is pass %d of %s's plan (lossgen explain): %s.", name, ps.Index, what, passSummary(ps)))
				f.Func().Id(name).Params(e.passParams(k)...).BlockFunc(func(b *jen.Group) { e.passBody(b, ps) })
			}
			f.Line()
		}
	}
	e.mergers(f)
	e.helpers(f)
	return f
}

// passParams are a pass function's parameters: inputs, outputs, gradients (a package with
// ForwardBackward; nil in Forward's passes) and the kernel's scratch.
func (e *gen) passParams(k Kernel) []jen.Code {
	ps := []jen.Code{jen.Id("in").Op("*").Id("Inputs"), jen.Id("out").Op("*").Id("Outputs")}
	if e.fb != nil {
		ps = append(ps, jen.Id("grads").Op("*").Id("Grads"))
	}
	return append(ps, jen.Id("s").Op("*").Id(k.Name("scratch")))
}

// passType is the type of kernel k's pass functions.
func (e *gen) passType(k Kernel) jen.Code {
	ts := []jen.Code{jen.Op("*").Id("Inputs"), jen.Op("*").Id("Outputs")}
	if e.fb != nil {
		ts = append(ts, jen.Op("*").Id("Grads"))
	}
	return jen.Func().Params(append(ts, jen.Op("*").Id(k.Name("scratch")))...)
}

func passSummary(ps *plan.Pass) string {
	kind := "an elementwise loop"
	if sc := ps.Scan; sc != nil {
		dir := "forward"
		if sc.Reverse {
			dir = "reverse"
		}
		kind = fmt.Sprintf("a loop with a %s scan along %s", dir, sc.Axis)
	}
	return fmt.Sprintf("%s over %s", kind, ps.Domain)
}

// scratchType emits the pooled scratch buffers: stored intermediates, the accumulators of
// barrier reductions whose result is not a scalar, and the carries of scans along an outer
// dim (one per index of the dims inside it).
func (e *gen) scratchType(f *jen.File) {
	var fields, allocs []jen.Code
	p := e.k.Plan
	for _, buf := range p.Scratch {
		n := buf.Node
		if len(n.Shape) == 0 {
			fields = append(fields, jen.Id(buf.Name).Add(e.elem).Comment(n.Formula(e.names)))
			continue
		}
		fields = append(fields, jen.Id(buf.Name).Index().Add(e.elem).Comment(n.Formula(e.names)+" "+n.Shape.String()))
		allocs = append(allocs, jen.Id(buf.Name).Op(":").Make(jen.Index().Add(e.elem), jen.Lit(n.Shape.Numel())))
	}
	for _, ps := range p.Passes {
		for _, r := range ps.Reduces {
			if len(r.Shape) == 0 {
				continue
			}
			fields = append(fields, jen.Id(e.accName(r)).Index().Add(e.accType(r)).Comment("accumulators of "+e.names[r.ID]))
			allocs = append(allocs, jen.Id(e.accName(r)).Op(":").Make(jen.Index().Add(e.accType(r)), jen.Lit(r.Shape.Numel())))
		}
		for _, n := range ps.Compute {
			if n.Op == ir.OpScan && ps.Schedule.Chunks == nil { // a chunk function's are its own
				if inner := carryDims(ps, n); len(inner) > 0 {
					fields = append(fields, jen.Id(e.carryName(n)).Index().Add(e.elem).Comment("carries of the scan "+e.names[n.ID]))
					allocs = append(allocs, jen.Id(e.carryName(n)).Op(":").Make(jen.Index().Add(e.elem), jen.Lit(inner.Numel())))
				}
			}
		}
	}
	st := e.k.Name("scratch")
	f.Commentf("%s holds what one call needs besides its inputs and outputs; the call takes one", st)
	f.Comment("from a pool, so steady-state calls allocate nothing.")
	f.Type().Id(st).Struct(fields...)
	f.Var().Id(e.k.Name("scratchPool")).Op("=").Qual("sync", "Pool").Values(jen.Dict{
		jen.Id("New"): jen.Func().Params().Any().Block(jen.Return(jen.Op("&").Id(st).ValuesFunc(func(g *jen.Group) {
			for _, a := range allocs {
				g.Add(a)
			}
		}))),
	})
}

// carryDims are the domain dims after a scan's axis: a scan along the last dim carries one
// value, along an outer dim one per index of these.
func carryDims(ps *plan.Pass, n *ir.Node) ir.Shape {
	return ps.Domain[ps.Domain.Index(n.Axes[0])+1:]
}

// ConstName is the Go variable of a constant tensor of kernel k: const5, fbConst5.
func ConstName(k Kernel, n *ir.Node) string { return k.Name(fmt.Sprintf("const%d", n.ID)) }

func (e *gen) constTensors(f *jen.File) {
	for _, n := range e.k.Plan.Graph.Nodes {
		if n.Op != ir.OpConst || len(n.Shape) == 0 {
			continue
		}
		f.Commentf("%s is a constant tensor %s.", ConstName(e.k, n), n.Shape)
		f.Var().Id(ConstName(e.k, n)).Op("=").Index(jen.Lit(len(n.Value))).Add(e.elem).ValuesFunc(func(g *jen.Group) {
			for _, v := range n.Value {
				g.Add(e.lit(v))
			}
		})
	}
}

func loopVar(dim string) string { return "i" + dim }

// indexExpr is the row-major linear index of shape s from the loop variables (iN*T + iT);
// sub replaces the variable of one dim (a gather's index).
func indexExpr(s ir.Shape, sub map[string]jen.Code) jen.Code {
	if len(s) == 0 {
		return jen.Lit(0)
	}
	var x *jen.Statement
	for i, d := range s {
		var t *jen.Statement
		if c, ok := sub[d.Name]; ok {
			t = jen.Parens(c)
		} else {
			t = jen.Id(loopVar(d.Name))
		}
		if stride := s[i+1:].Numel(); stride != 1 {
			t = t.Op("*").Lit(stride)
		}
		if x == nil {
			x = t
		} else {
			x = x.Op("+").Add(t)
		}
	}
	return x
}

// at reads buffer expression buf at the current index of shape s.
func at(buf jen.Code, s ir.Shape) jen.Code {
	if len(s) == 0 {
		return buf
	}
	return jen.Add(buf).Index(indexExpr(s, nil))
}

// bufExprs are where a stored node lives: its output fields, or its scratch field.
func (e *gen) bufExprs(n *ir.Node) []jen.Code {
	var out []jen.Code
	for _, buf := range e.k.Plan.Buffers(n) {
		switch {
		case buf.Output != nil && buf.Output.Role == ir.Gradient && len(n.Shape) == 0:
			// A scalar input's gradient (SAC's log_alpha): Grads fields are slices, like the inputs.
			out = append(out, jen.Id("grads").Dot(e.out[buf.Name]).Index(jen.Lit(0)))
		case buf.Output != nil && buf.Output.Role == ir.Gradient:
			out = append(out, jen.Id("grads").Dot(e.out[buf.Name]))
		case buf.Output != nil:
			out = append(out, jen.Id("out").Dot(e.out[buf.Name]))
		default:
			out = append(out, jen.Id("s").Dot(buf.Name))
		}
	}
	if out == nil {
		panic(fmt.Sprintf("gogen: v%d is not stored", n.ID))
	}
	return out
}

// readAt reads node n (an input, a constant tensor or a stored node) at index expression ix;
// an iota is its index.
func (e *gen) readAt(n *ir.Node, ix jen.Code) jen.Code {
	switch n.Op {
	case ir.OpIota:
		if n.Reverse {
			return jen.Add(e.elem).Call(jen.Lit(n.Shape.Numel() - 1).Op("-").Parens(ix))
		}
		return jen.Add(e.elem).Call(ix)
	case ir.OpInput:
		return e.inputValue(n, jen.Id("in").Dot(e.in[n.Input.Name]).Index(ix))
	case ir.OpConst:
		if len(n.Shape) == 0 {
			return e.lit(n.Value[0])
		}
		return jen.Id(ConstName(e.k, n)).Index(ix)
	}
	if len(n.Shape) == 0 {
		return e.bufExprs(n)[0]
	}
	return jen.Add(e.bufExprs(n)[0]).Index(ix)
}

// pass is the emission state of one pass.
type pass struct {
	e     *gen
	ps    *plan.Pass
	alias map[int]*ir.Node // detach and broadcast nodes: the node whose variable they read
	// chunks, in the function over one chunk of a chunked pass, is its chunking: the loop
	// over the chunked dim covers [lo, hi), and the merged reductions' states are in st.
	chunks *chunks
}

// passBody emits the loop nest of a pass: accumulators and carries, the outer loops (the scan
// axis in its direction) with the program at each index, then the barrier reductions' results.
func (e *gen) passBody(b *jen.Group, ps *plan.Pass) {
	p := &pass{e: e, ps: ps, alias: map[int]*ir.Node{}}
	consts := e.declareConsts(b, ps)
	e.initAccs(b, ps.Reduces, "s")
	for _, c := range p.nest(0) {
		b.Add(c)
	}
	e.markConstsUsed(b, consts, p)
	e.finishReduces(b, ps.Reduces, "")
}

// declareConsts declares the scalar constants of the passes' programs once, before the loops.
func (e *gen) declareConsts(b *jen.Group, passes ...*plan.Pass) []*ir.Node {
	var consts []*ir.Node
	seen := map[int]bool{}
	for _, ps := range passes {
		for _, n := range scalarConsts(ps.Body) {
			if !seen[n.ID] {
				seen[n.ID] = true
				consts = append(consts, n)
				b.Id(e.names[n.ID]).Op(":=").Add(e.lit(n.Value[0]))
			}
		}
	}
	return consts
}

// markConstsUsed assigns the constants no program of ps reads to _.
func (e *gen) markConstsUsed(b *jen.Group, consts []*ir.Node, ps ...*pass) {
	used := map[int]bool{}
	for _, p := range ps {
		for id := range usedIn(p.ps.Body, p.root) {
			used[id] = true
		}
	}
	for _, n := range consts {
		if !used[n.ID] {
			b.Id("_").Op("=").Id(e.names[n.ID])
		}
	}
}

// initAccs starts barrier reductions' accumulators: scalar ones are locals, the others
// slices of holder (s, the scratch; st, a chunk's states), reset here.
func (e *gen) initAccs(b *jen.Group, rs []*ir.Node, holder string) {
	for _, r := range rs {
		if len(r.Shape) == 0 {
			b.Id(e.accName(r)).Op(":=").Add(e.accInit(r))
			continue
		}
		b.For(jen.Id("k").Op(":=").Range().Id(holder).Dot(e.accName(r))).Block(
			jen.Id(holder).Dot(e.accName(r)).Index(jen.Id("k")).Op("=").Add(e.accInit(r)))
	}
}

// nest is the loop nest of the pass's domain dims from d inwards, with the program innermost
// (a scan starts from 0 before its axis's loop).
func (p *pass) nest(d int) []jen.Code {
	e, ps, dom := p.e, p.ps, p.ps.Domain
	var stmts []jen.Code
	for _, n := range ps.Compute {
		if n.Op == ir.OpScan && dom.Index(n.Axes[0]) == d {
			if inner := carryDims(ps, n); len(inner) > 0 {
				stmts = append(stmts, jen.For(jen.Id("k").Op(":=").Range().Add(p.carries(n))).Block(
					jen.Add(p.carries(n)).Index(jen.Id("k")).Op("=").Lit(0)))
			} else {
				stmts = append(stmts, jen.Id(e.carryName(n)).Op(":=").Add(e.lit(0)))
			}
		}
	}
	if d == len(dom) {
		return append(stmts, p.block(ps.Body)...)
	}
	dim := dom[d]
	iv := loopVar(dim.Name)
	head := []jen.Code{jen.Id(iv).Op(":=").Lit(0), jen.Id(iv).Op("<").Lit(dim.Size), jen.Id(iv).Op("++")}
	if p.chunks != nil && dim.Name == p.chunks.ch.Dim {
		head = []jen.Code{jen.Id(iv).Op(":=").Id("lo"), jen.Id(iv).Op("<").Id("hi"), jen.Id(iv).Op("++")}
	}
	if ps.Schedule.Reverse(dim.Name) {
		head = []jen.Code{jen.Id(iv).Op(":=").Lit(dim.Size - 1), jen.Id(iv).Op(">=").Lit(0), jen.Id(iv).Op("--")}
	}
	return append(stmts, jen.For(head...).Block(p.nest(d+1)...))
}

// finishReduces finishes barrier reductions into their buffers from their accumulators:
// in states (st, a chunked pass's merged states), or with states "" locals (scalar ones) and
// the scratch's slices.
func (e *gen) finishReduces(b *jen.Group, reduces []*ir.Node, states string) {
	for _, r := range reduces {
		acc := jen.Id(states).Dot(e.accName(r))
		switch {
		case states != "":
		case len(r.Shape) == 0:
			acc = jen.Id(e.accName(r))
		default:
			acc = jen.Id("s").Dot(e.accName(r))
		}
		if len(r.Shape) == 0 {
			for _, buf := range e.bufExprs(r) {
				b.Add(buf).Op("=").Add(e.conv(e.accResult(r, acc)))
			}
			continue
		}
		var sets []jen.Code
		for _, buf := range e.bufExprs(r) {
			sets = append(sets, jen.Add(buf).Index(jen.Id("k")).Op("=").Add(e.conv(e.accResult(r, jen.Add(acc).Index(jen.Id("k"))))))
		}
		b.For(jen.Id("k").Op(":=").Range().Add(acc)).Block(sets...)
	}
}

// block emits a block's steps; Loop steps become nested for loops over their dims.
func (p *pass) block(bl *plan.Block) []jen.Code {
	var out []jen.Code
	declared := map[int]bool{}
	for _, st := range bl.Steps {
		n := st.Node
		switch st.Kind {
		case plan.Load:
			if isScalarConst(n) {
				continue // declared before the loops
			}
			out = append(out, jen.Id(p.id(n)).Op(":=").Add(p.e.readAt(n, indexExpr(n.Shape, nil))))
			declared[n.ID] = true
		case plan.Compute:
			out = append(out, p.compute(n)...)
			if p.alias[n.ID] == nil {
				declared[n.ID] = true
			}
		case plan.Store:
			for _, buf := range p.e.bufExprs(n) {
				out = append(out, jen.Add(at(buf, n.Shape)).Op("=").Id(p.id(n)))
			}
		case plan.Accumulate:
			out = append(out, p.accumulate(n))
		case plan.Init:
			out = append(out, jen.Id(p.e.accName(n)).Op(":=").Add(p.e.accInit(n)))
		case plan.Finish:
			out = append(out, jen.Id(p.id(n)).Op(":=").Add(p.e.conv(p.e.accResult(n, jen.Id(p.e.accName(n))))))
			declared[n.ID] = true
		case plan.Loop:
			body := p.block(st.Block)
			for i := len(st.Block.Dims) - 1; i >= 0; i-- {
				d := st.Block.Dims[i]
				iv := loopVar(d.Name)
				body = []jen.Code{jen.For(jen.Id(iv).Op(":=").Lit(0), jen.Id(iv).Op("<").Lit(d.Size), jen.Id(iv).Op("++")).Block(body...)}
			}
			out = append(out, body...)
		}
	}
	// A value that nothing in the block reads after all must not trip "declared and not used".
	used := usedIn(bl, p.root)
	var ids []int
	for id := range declared {
		if !used[id] {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	for _, id := range ids {
		out = append(out, jen.Id("_").Op("=").Id(p.e.names[id]))
	}
	return out
}

// usedIn reports which values the steps of a block (and its loops) read; root maps a node
// to the one whose variable holds it (see pass.alias).
func usedIn(bl *plan.Block, root func(*ir.Node) *ir.Node) map[int]bool {
	used := map[int]bool{}
	var walk func(bl *plan.Block)
	walk = func(bl *plan.Block) {
		for _, st := range bl.Steps {
			n := st.Node
			switch st.Kind {
			case plan.Compute:
				for i, a := range n.Args {
					if (n.Op.Class() == ir.Shift || n.Op.Class() == ir.Gather) && i == 0 {
						continue
					}
					used[root(a).ID] = true
				}
			case plan.Store:
				used[root(n).ID] = true
			case plan.Accumulate:
				used[root(n.Args[0]).ID] = true
			case plan.Loop:
				walk(st.Block)
			}
		}
	}
	walk(bl)
	return used
}

// compute emits the statements that compute n into its variable.
func (p *pass) compute(n *ir.Node) []jen.Code {
	e := p.e
	def := func(x jen.Code) []jen.Code { return []jen.Code{jen.Id(p.id(n)).Op(":=").Add(x)} }
	if n.Op.Aliases() {
		// The identity on values: later steps read the argument's variable.
		p.alias[n.ID] = p.root(n.Args[0])
		return nil
	}
	switch n.Op.Class() {
	case ir.Elementwise:
		args := make([]jen.Code, len(n.Args))
		for i, a := range n.Args {
			args[i] = jen.Id(p.id(a))
		}
		return def(ir.Elem[jen.Code](goOps{e}, n.Op, args))
	case ir.Scan:
		// y[t] = x[t] + y[t∓1]·c[t], in the order TorchRL's loop GAE writes it; with Cut, a c
		// of 0 gives +0 (ir.OpScan).
		carry := jen.Id(e.carryName(n))
		if inner := carryDims(p.ps, n); len(inner) > 0 {
			carry = p.carries(n).Index(indexExpr(inner, nil))
		}
		prod := jen.Id(e.g.DType.String()).Call(jen.Add(carry).Op("*").Id(p.id(n.Args[1])))
		if n.Cut {
			prod = jen.Qual(RuntimePath, "CutMul").Call(carry, jen.Id(p.id(n.Args[1])))
		}
		return []jen.Code{
			jen.Id(p.id(n)).Op(":=").Id(p.id(n.Args[0])).Op("+").Add(prod),
			jen.Add(carry).Op("=").Id(p.id(n)),
		}
	case ir.Shift:
		x, axis := n.Args[0], n.Axes[0]
		size := x.Shape[x.Shape.Index(axis)].Size
		next := indexExpr(x.Shape, map[string]jen.Code{axis: jen.Id(loopVar(axis)).Op("+").Lit(1)})
		return []jen.Code{
			jen.Var().Id(p.id(n)).Add(e.elem),
			jen.If(jen.Id(loopVar(axis)).Op("<").Lit(size - 1)).Block(
				jen.Id(p.id(n)).Op("=").Add(e.readAt(x, next)),
			).Else().Block(
				jen.Id(p.id(n)).Op("=").Id(p.id(n.Args[1])),
			),
		}
	case ir.Gather:
		x := n.Args[0]
		ix := indexExpr(x.Shape, map[string]jen.Code{n.Axes[0]: jen.Int().Call(jen.Id(p.id(n.Args[1])))})
		return def(e.readAt(x, ix))
	}
	panic("gogen: unhandled op " + n.Op.String())
}

// goOps is ir.ElemOps for Go expressions in the kernel's dtype, rounded at each op as
// TorchRL's tensors are.
type goOps struct{ e *gen }

func (o goOps) math1(fn string, x jen.Code) jen.Code {
	return o.e.conv(jen.Qual("math", fn).Call(o.e.f64(x)))
}

// vmath1 is vmath's exp, log or log1p of x in float64 kernels, where math's amd64 assembly
// is wrong at the edges (vmath.Exp, vmath.Log); a float32 value widened to float64 never
// reaches them (it is normal, and e^x of it overflows float32 first), so float32 kernels
// call math's.
func (o goOps) vmath1(fn string, x jen.Code) jen.Code {
	if o.e.g.DType == ir.F64 {
		return jen.Qual(vmathPath, fn).Call(x)
	}
	return o.math1(fn, x)
}
func (o goOps) cmp(op string, x, y jen.Code) jen.Code {
	return jen.Id("b2f").Call(jen.Add(x).Op(op).Add(y))
}

func (o goOps) Neg(x jen.Code) jen.Code   { return jen.Op("-").Add(x) }
func (o goOps) Abs(x jen.Code) jen.Code   { return o.math1("Abs", x) }
func (o goOps) Exp(x jen.Code) jen.Code   { return o.vmath1("Exp", x) }
func (o goOps) Log(x jen.Code) jen.Code   { return o.vmath1("Log", x) }
func (o goOps) Log1p(x jen.Code) jen.Code { return o.math1("Log1p", x) }

// ExpM1MinusX is vmath's float64 e^x − 1 − x, rounded once to a float32 kernel's type.
func (o goOps) ExpM1MinusX(x jen.Code) jen.Code {
	return o.e.conv(jen.Qual(vmathPath, "ExpM1MinusX").Call(o.e.f64(x)))
}
func (o goOps) Sqrt(x jen.Code) jen.Code { return o.math1("Sqrt", x) }

// RoundF32 is x rounded to float32: a float32 kernel's x itself.
func (o goOps) RoundF32(x jen.Code) jen.Code {
	if o.e.g.DType == ir.F64 {
		return jen.Float64().Call(jen.Float32().Call(x))
	}
	return x
}
func (o goOps) Add(x, y jen.Code) jen.Code {
	return jen.Add(x).Op("+").Add(y)
}
func (o goOps) Sub(x, y jen.Code) jen.Code { return jen.Add(x).Op("-").Add(y) }

// Mul wraps the product in a conversion, which rounds it: the Go spec then forbids fusing it
// into an FMA with a following add.
func (o goOps) Mul(x, y jen.Code) jen.Code {
	return jen.Id(o.e.g.DType.String()).Call(jen.Add(x).Op("*").Add(y))
}
func (o goOps) Div(x, y jen.Code) jen.Code      { return jen.Add(x).Op("/").Add(y) }
func (o goOps) Min(x, y jen.Code) jen.Code      { return jen.Min(x, y) }
func (o goOps) Max(x, y jen.Code) jen.Code      { return jen.Max(x, y) }
func (o goOps) Lt(x, y jen.Code) jen.Code       { return o.cmp("<", x, y) }
func (o goOps) Le(x, y jen.Code) jen.Code       { return o.cmp("<=", x, y) }
func (o goOps) Gt(x, y jen.Code) jen.Code       { return o.cmp(">", x, y) }
func (o goOps) Ge(x, y jen.Code) jen.Code       { return o.cmp(">=", x, y) }
func (o goOps) Eq(x, y jen.Code) jen.Code       { return o.cmp("==", x, y) }
func (o goOps) Ne(x, y jen.Code) jen.Code       { return o.cmp("!=", x, y) }
func (o goOps) Where(c, x, y jen.Code) jen.Code { return jen.Id("sel").Call(c, x, y) }

// inputValue converts an element x of input n to the kernel's float type: flags through
// b2f, indices through conv, floats as they are.
func (e *gen) inputValue(n *ir.Node, x jen.Code) jen.Code {
	switch n.Input.Kind {
	case ir.Bool:
		return jen.Id("b2f").Call(x)
	case ir.Index:
		return jen.Id(e.g.DType.String()).Call(x) // int64 → the dtype, float64 kernels too
	}
	return x
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
