package gogen

import (
	"math"

	"github.com/dave/jennifer/jen"

	"github.com/lossgen/lossgen/gen/ir"
)

// Reductions accumulate in float64 whatever the kernel's dtype. A reduction with a runtime
// accumulator (goAccs: the streaming forms, one exp per logsumexp element, Welford's update)
// uses it; any other keeps its description's state (ir.ReductionOf) in a [n]float64 and runs
// its Single, Merge and Finish as Go expressions (Ops64). The op zoo checks both against the
// interpreter.

// goAcc is a reduction's runtime accumulator: its type, empty value, per-element update and
// result, and the fields that hold its description's state (ir.ReductionOf's Fields, in
// order; nil: the accumulator is the one field), which chunks merge with the description.
type goAcc struct {
	typ    jen.Code
	init   jen.Code
	add    func(p *pass, r *ir.Node, acc, x jen.Code) jen.Code
	result func(r *ir.Node, acc jen.Code) jen.Code
	fields []string
}

var goAccs = map[ir.Op]goAcc{
	ir.OpSum: {jen.Float64(), jen.Lit(0.0),
		func(_ *pass, _ *ir.Node, acc, x jen.Code) jen.Code { return jen.Add(acc).Op("+=").Add(x) }, plain, nil},
	ir.OpMean:      method("Mean", jen.Qual(RuntimePath, "Mean").Values(), "Result", "Sum", "N"),
	ir.OpRMax:      extreme("Max", -1),
	ir.OpRMin:      extreme("Min", 1),
	ir.OpLogSumExp: method("LogSumExp", jen.Qual(RuntimePath, "NewLogSumExp").Call(), "Result", "M", "S"),
	ir.OpVar:       welford(func(v jen.Code) jen.Code { return v }),
	ir.OpStd:       welford(func(v jen.Code) jen.Code { return jen.Qual("math", "Sqrt").Call(v) }),
	ir.OpArgMax: {jen.Qual(RuntimePath, "ArgMax"), jen.Qual(RuntimePath, "NewArgMax").Call(),
		func(p *pass, r *ir.Node, acc, x jen.Code) jen.Code {
			axis := r.Axes[0]
			method := "Add"
			if sc := p.ps.Scan; sc != nil && sc.Reverse && sc.Axis == axis {
				method = "AddReverse" // the loop meets the axis's indices in decreasing order
			}
			return jen.Add(acc).Dot(method).Call(x, jen.Id(loopVar(axis)))
		},
		func(_ *ir.Node, acc jen.Code) jen.Code { return jen.Float64().Call(jen.Add(acc).Dot("Idx")) },
		nil}, // not merged: its index is an int (plan: mergesInChunks)
}

func plain(_ *ir.Node, acc jen.Code) jen.Code { return acc }

// welford is a variance's accumulator (runtime.Welford, merged by its fields), its result
// finish applied to the variance: a std's root.
func welford(finish func(v jen.Code) jen.Code) goAcc {
	return goAcc{jen.Qual(RuntimePath, "Welford"), jen.Qual(RuntimePath, "Welford").Values(), add,
		func(r *ir.Node, acc jen.Code) jen.Code { return finish(jen.Add(acc).Dot("Var").Call(jen.Lit(r.Corr))) },
		[]string{"N", "Mean", "M2"}}
}

func add(_ *pass, _ *ir.Node, acc, x jen.Code) jen.Code { return jen.Add(acc).Dot("Add").Call(x) }

// method is a runtime accumulator type with an Add method, a result method and the fields
// of its state.
func method(typ string, init jen.Code, result string, fields ...string) goAcc {
	return goAcc{jen.Qual(RuntimePath, typ), init, add,
		func(_ *ir.Node, acc jen.Code) jen.Code { return jen.Add(acc).Dot(result).Call() }, fields}
}

// extreme is a running NaN-propagating maximum or minimum (runtime.Max, runtime.Min) from ±inf.
func extreme(fn string, sign int) goAcc {
	return goAcc{jen.Float64(), jen.Qual("math", "Inf").Call(jen.Lit(sign)),
		func(_ *pass, _ *ir.Node, acc, x jen.Code) jen.Code {
			return jen.Add(acc).Op("=").Qual(RuntimePath, fn).Call(acc, x)
		}, plain, nil}
}

// acc is r's runtime accumulator, if it has one and the graph does not ask for descriptions.
func (e *gen) acc(r *ir.Node) (goAcc, bool) {
	a, ok := goAccs[r.Op]
	return a, ok && !e.g.GenericReductions
}

// red is r's description on float64 Go expressions.
func red(r *ir.Node) *ir.Reduction[jen.Code] { return ir.ReductionOf[jen.Code](r.Op) }

// accType is the float64 accumulator type of a reduction.
func (e *gen) accType(r *ir.Node) jen.Code {
	if a, ok := e.acc(r); ok {
		return a.typ
	}
	return jen.Index(jen.Lit(len(red(r).Fields))).Float64()
}

// accInit is the empty accumulator of a reduction.
func (e *gen) accInit(r *ir.Node) jen.Code {
	if a, ok := e.acc(r); ok {
		return a.init
	}
	var id []jen.Code
	for _, v := range red(r).Identity {
		id = append(id, Ops64{}.Const(v))
	}
	return jen.Index(jen.Lit(len(id))).Float64().Values(id...)
}

// accResult is the reduction's float64 value from its accumulator acc.
func (e *gen) accResult(r *ir.Node, acc *jen.Statement) jen.Code {
	if a, ok := e.acc(r); ok {
		return a.result(r, acc)
	}
	return red(r).Finish(Ops64{}, State(acc, len(red(r).Fields)), r.Corr)
}

// accFields are the fields of accumulator acc of r that hold its description's state, in
// the description's order.
func (e *gen) accFields(r *ir.Node, acc *jen.Statement) []jen.Code {
	a, ok := e.acc(r)
	switch {
	case !ok:
		return State(acc, len(red(r).Fields))
	case a.fields == nil:
		return []jen.Code{acc}
	}
	out := make([]jen.Code, len(a.fields))
	for i, f := range a.fields {
		out[i] = jen.Add(acc).Dot(f)
	}
	return out
}

// accumulate adds the reduction's argument at the current index to its accumulator: an inner
// reduction's local, or a barrier reduction's local, scratch slot or chunk's state slot.
func (p *pass) accumulate(r *ir.Node) jen.Code {
	var acc *jen.Statement
	switch {
	case len(r.Shape) == 0 || p.e.g.InnerReduce(r):
		acc = jen.Id(p.e.accName(r))
	case p.chunks.merged(r):
		acc = jen.Id("st").Dot(p.e.accName(r)).Index(indexExpr(r.Shape, nil))
	default:
		acc = jen.Id("s").Dot(p.e.accName(r)).Index(indexExpr(r.Shape, nil))
	}
	x := p.e.f64(jen.Id(p.id(r.Args[0])))
	if a, ok := p.e.acc(r); ok {
		return a.add(p, r, acc, x)
	}
	d := red(r)
	one := d.Single(Ops64{}, x, func() jen.Code { return jen.Float64().Call(jen.Id(loopVar(r.Axes[0]))) })
	merged := d.Merge(Ops64{}, State(acc, len(d.Fields)), one)
	return jen.Add(acc).Op("=").Index(jen.Lit(len(merged))).Float64().Values(merged...)
}

// State is the fields of a [n]float64 state acc: acc[0], ..., acc[n−1].
func State(acc jen.Code, n int) []jen.Code {
	out := make([]jen.Code, n)
	for i := range out {
		out[i] = jen.Add(acc).Index(jen.Lit(i))
	}
	return out
}

// Ops64 is ir.RedOps on float64 Go expressions: a reduction's description as Go, for the
// kernels' accumulators and the AVX2 glue's lane merges. Every value is a float64, whatever
// the kernel's dtype; products are rounded (no FMA), as goOps's.
type Ops64 struct{}

func (Ops64) math1(fn string, x jen.Code) jen.Code { return jen.Qual("math", fn).Call(x) }
func (Ops64) cmp(op string, x, y jen.Code) jen.Code {
	return jen.Qual(RuntimePath, "B2F").Call(jen.Add(x).Op(op).Add(y))
}

// Const is c as a float64 Go expression.
func (Ops64) Const(c float64) jen.Code {
	switch {
	case math.IsInf(c, 0):
		sign := 1
		if c < 0 {
			sign = -1
		}
		return jen.Qual("math", "Inf").Call(jen.Lit(sign))
	case c != c:
		return jen.Qual("math", "NaN").Call()
	}
	return jen.Lit(c)
}
func (o Ops64) Neg(x jen.Code) jen.Code   { return jen.Op("-").Parens(x) }
func (o Ops64) Abs(x jen.Code) jen.Code   { return o.math1("Abs", x) }
func (o Ops64) Exp(x jen.Code) jen.Code   { return o.math1("Exp", x) }
func (o Ops64) Log(x jen.Code) jen.Code   { return o.math1("Log", x) }
func (o Ops64) Log1p(x jen.Code) jen.Code { return o.math1("Log1p", x) }
func (o Ops64) ExpM1MinusX(x jen.Code) jen.Code {
	return jen.Qual(vmathPath, "ExpM1MinusX").Call(x)
}
func (o Ops64) Sqrt(x jen.Code) jen.Code      { return o.math1("Sqrt", x) }
func (o Ops64) RoundF32(x jen.Code) jen.Code  { return jen.Float64().Call(jen.Float32().Call(x)) }
func (Ops64) Add(x, y jen.Code) jen.Code      { return jen.Parens(jen.Add(x).Op("+").Add(y)) }
func (Ops64) Sub(x, y jen.Code) jen.Code      { return jen.Parens(jen.Add(x).Op("-").Add(y)) }
func (Ops64) Mul(x, y jen.Code) jen.Code      { return jen.Float64().Call(jen.Add(x).Op("*").Add(y)) }
func (Ops64) Div(x, y jen.Code) jen.Code      { return jen.Parens(jen.Add(x).Op("/").Add(y)) }
func (Ops64) Min(x, y jen.Code) jen.Code      { return jen.Min(x, y) }
func (Ops64) Max(x, y jen.Code) jen.Code      { return jen.Max(x, y) }
func (o Ops64) Lt(x, y jen.Code) jen.Code     { return o.cmp("<", x, y) }
func (o Ops64) Le(x, y jen.Code) jen.Code     { return o.cmp("<=", x, y) }
func (o Ops64) Gt(x, y jen.Code) jen.Code     { return o.cmp(">", x, y) }
func (o Ops64) Ge(x, y jen.Code) jen.Code     { return o.cmp(">=", x, y) }
func (o Ops64) Eq(x, y jen.Code) jen.Code     { return o.cmp("==", x, y) }
func (o Ops64) Ne(x, y jen.Code) jen.Code     { return o.cmp("!=", x, y) }
func (Ops64) Where(c, x, y jen.Code) jen.Code { return jen.Qual(RuntimePath, "Sel").Call(c, x, y) }
