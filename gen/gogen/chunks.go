package gogen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// Chunked passes (plan.Chunking): a pass, or row-local pair, that the plan cuts into chunks
// runs as a function over [lo, hi) of the chunked dim (rows of its first dim, or whole vector
// blocks of a flat domain's axis) that leaves the barrier reductions' states in states of its
// own; the pass function runs the chunks concurrently (runtime.ForChunks, ForBlockChunks) and
// merges their states in chunk order with each reduction's description (ir.ReductionOf), as
// the AVX2 glue does. The chunk count is the plan's, fixed from the shape, so the results are
// the same bits for every GOMAXPROCS.
//
// In one chunk (the plan's count for a pass under plan.ChunkElems elements) a pass computes
// exactly what a one-piece loop does. In more, only the reductions' summation order changes:
// each chunk folds its own elements in order, then the chunks' states merge in order. A
// float64 sum of m terms in any order is within (m−1)·2⁻⁵³·Σ|xᵢ| of the exact sum (Higham,
// Accuracy and Stability of Numerical Algorithms, §4.2), so the chunked and one-piece sums
// differ by at most 2(m−1)·2⁻⁵³·Σ|xᵢ| before they are rounded to the dtype: for m ≤ 2³⁰ that
// is under 2⁻²²·Σ|xᵢ|, a float32 result's ulp unless the terms cancel. Means, variances
// (Chan's update) and logsumexps (rescaled sums) inherit the same bound on their sums.

// chunks is the emission of a chunked pass or row-local pair.
type chunks struct {
	ch     *plan.Chunking
	dom    ir.Shape // the (first) pass's domain
	passes []*plan.Pass
	// pass is the pass function; run the function over one chunk; states its states type;
	// count the variable holding the chunk count.
	pass, run, states, count string
}

// chunksOf describes the chunked function of pass ps (a row-local pair's first), or nil when
// the plan runs it in one piece.
func (e *gen) chunksOf(ps *plan.Pass) *chunks {
	ch := ps.Schedule.Chunks
	if ch == nil {
		return nil
	}
	c := &chunks{ch: ch, dom: ps.Domain, passes: []*plan.Pass{ps}}
	if rl := ps.Row; rl != nil {
		c.passes = []*plan.Pass{rl.First, rl.Second}
	}
	name := func(s string) string { return e.k.Name(fmt.Sprintf("pass%d%s", ps.Index, s)) }
	c.pass, c.run, c.states, c.count = name("Go"), name("GoChunk"), name("GoStates"), name("GoChunks")
	return c
}

// size is how many indices the chunked dim has; units how many chunks it can make at most.
func (c *chunks) size() int  { return c.dom[c.dom.Index(c.ch.Dim)].Size }
func (c *chunks) units() int { return max(1, c.ch.Units(c.dom)) }

// merged reports whether r's states are a chunk's (merged across chunks).
func (c *chunks) merged(r *ir.Node) bool { return c != nil && slices.Contains(c.ch.Merge, r) }

// unit says what a chunk is made of.
func (c *chunks) unit() string {
	if c.ch.Align > 1 {
		return fmt.Sprintf("whole %d-element blocks of %s", c.ch.Align, c.ch.Dim)
	}
	return "rows of " + c.ch.Dim
}

// ChunkVars lists the variables of the generated Go kernels that hold the chunk counts of
// the chunked passes of Forward's plan p and ForwardBackward's fb (tests set them to run the
// chunked form on small batches).
func ChunkVars(p, fb *plan.Plan) []string {
	var out []string
	for _, k := range Kernels(p, fb) {
		e := &gen{k: k}
		for _, ps := range k.Plan.Passes {
			if c := e.chunksOf(ps); c != nil && RunsPass(ps) {
				out = append(out, c.count)
			}
		}
	}
	return out
}

// chunkedPass emits a chunked pass or pair: its chunk count, its states type and their merge,
// the function over one chunk, and the pass function that runs the chunks and finishes the
// reductions. doc is the pass function's doc comment.
func (e *gen) chunkedPass(f *jen.File, c *chunks, doc string) {
	f.Commentf("%s is how many chunks of %s %s runs as, concurrently, each with its own reduction states merged in chunk order afterwards (1: in one piece). It is the plan's count (lossgen explain), fixed from the pass's size, so results do not depend on the machine; tests set it to check the chunked run.", c.count, c.unit(), c.pass)
	f.Var().Id(c.count).Op("=").Lit(c.ch.Count)
	f.Line()
	params := e.passParams(e.k)
	if len(c.ch.Merge) > 0 {
		e.statesType(f, c)
		f.Line()
		f.Commentf("%s runs %s over indices [lo, hi) of %s, its reduction states into st.", c.run, c.pass, c.ch.Dim)
		params = append(params, jen.Id("st").Op("*").Id(c.states))
	} else {
		f.Commentf("%s runs %s over indices [lo, hi) of %s.", c.run, c.pass, c.ch.Dim)
	}
	f.Func().Id(c.run).Params(append(params, jen.List(jen.Id("lo"), jen.Id("hi")).Int())...).BlockFunc(func(b *jen.Group) {
		if len(c.passes) == 2 {
			e.rowChunkBody(b, c)
		} else {
			e.chunkBody(b, c)
		}
	})
	f.Line()
	f.Comment(doc)
	f.Func().Id(c.pass).Params(e.passParams(e.k)...).BlockFunc(func(b *jen.Group) {
		if len(c.passes) == 2 {
			// The row reductions finish row by row in the scratch, each chunk its own rows.
			for _, ps := range c.passes {
				e.initAccs(b, ps.Row.RowReduces(ps), "s")
			}
		}
		e.runChunks(b, c)
		e.finishReduces(b, c.ch.Merge, "st")
	})
}

// statesType emits the states of one chunk: a field per merged reduction (a slice of them for
// one that keeps a dim), and their merge.
func (e *gen) statesType(f *jen.File, c *chunks) {
	var fields []jen.Code
	for _, r := range c.ch.Merge {
		t := e.accType(r)
		if len(r.Shape) > 0 {
			t = jen.Index().Add(t)
		}
		fields = append(fields, jen.Id(e.accName(r)).Add(t).Comment(r.Formula(e.names)))
	}
	f.Commentf("%s are the reduction states of %s over one chunk of %s.", c.states, c.pass, c.ch.Dim)
	f.Type().Id(c.states).Struct(fields...)
	f.Line()
	f.Comment("merge merges b, the states of the chunk after a's, into a.")
	f.Func().Params(jen.Id("a").Op("*").Id(c.states)).Id("merge").Params(jen.Id("b").Op("*").Id(c.states)).BlockFunc(func(g *jen.Group) {
		for _, r := range c.ch.Merge {
			if e.mergeOps[r.Op] == nil {
				e.mergeOps[r.Op] = r
			}
			a, b := jen.Id("a").Dot(e.accName(r)), jen.Id("b").Dot(e.accName(r))
			if len(r.Shape) == 0 {
				g.Id(mergerName(r.Op)).Call(jen.Op("&").Add(a), b)
				continue
			}
			g.For(jen.Id("k").Op(":=").Range().Add(a)).Block(
				jen.Id(mergerName(r.Op)).Call(jen.Op("&").Add(a).Index(jen.Id("k")), jen.Add(b).Index(jen.Id("k"))))
		}
	})
}

// mergerName is the generated function that merges two accumulators of reductions op.
func mergerName(op ir.Op) string { return "merge" + ir.CamelCase(op.String(), true) }

// mergers emits the merge function of each reduction op the chunked passes merge: the op's
// description's Merge (ir.ReductionOf) on the accumulator's fields.
func (e *gen) mergers(f *jen.File) {
	ops := make([]ir.Op, 0, len(e.mergeOps))
	for op := range e.mergeOps {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	for _, op := range ops {
		r := e.mergeOps[op]
		a := jen.Id("a")
		if ac, ok := e.acc(r); ok && ac.fields == nil {
			a = jen.Op("*").Id("a") // a float64
		}
		fa, fb := e.accFields(r, a), e.accFields(r, jen.Id("b"))
		f.Commentf("%s merges b, the state of the elements after a's, into a: %s's merge (its description, lossgen's ir.ReductionOf).", mergerName(op), op)
		f.Func().Id(mergerName(op)).Params(jen.Id("a").Op("*").Add(e.accType(r)), jen.Id("b").Add(e.accType(r))).Block(
			jen.List(fa...).Op("=").List(red(r).Merge(Ops64{}, fa, fb)...))
	}
}

// chunkBody emits the function over one chunk of a pass: its loop nest with the chunked dim
// over [lo, hi), its reductions' states left in st.
func (e *gen) chunkBody(b *jen.Group, c *chunks) {
	ps := c.passes[0]
	p := &pass{e: e, ps: ps, alias: map[int]*ir.Node{}, chunks: c}
	consts := e.declareConsts(b, ps)
	e.initAccs(b, c.ch.Merge, "st")
	p.localCarries(b)
	for _, s := range p.nest(0) {
		b.Add(s)
	}
	e.markConstsUsed(b, consts, p)
	e.keepStates(b, c)
}

// keepStates stores the chunk's scalar reductions' local accumulators in st.
func (e *gen) keepStates(b *jen.Group, c *chunks) {
	for _, r := range c.ch.Merge {
		if len(r.Shape) == 0 {
			b.Id("st").Dot(e.accName(r)).Op("=").Id(e.accName(r))
		}
	}
}

// runChunks emits the run of c's chunks into st: in one piece when the count is 1, else
// concurrently on states of their own, merged in chunk order.
func (e *gen) runChunks(b *jen.Group, c *chunks) {
	if len(c.ch.Merge) == 0 {
		e.runStateless(b, c)
		return
	}
	b.Var().Id("st").Id(c.states)
	var kept []*ir.Node // merged reductions keeping a dim: their states are slices
	for _, r := range c.ch.Merge {
		if len(r.Shape) > 0 {
			kept = append(kept, r)
			b.Id("st").Dot(e.accName(r)).Op("=").Id("s").Dot(e.accName(r))
		}
	}
	call := func(st jen.Code, lo, hi jen.Code) jen.Code {
		return jen.Id(c.run).Call(append(e.passArgs(), st, lo, hi)...)
	}
	b.If(jen.Id("n").Op(":=").Min(jen.Id(c.count), jen.Lit(c.units())), jen.Id("n").Op("<=").Lit(1)).Block(
		call(jen.Op("&").Id("st"), jen.Lit(0), jen.Lit(c.size())),
	).Else().BlockFunc(func(g *jen.Group) {
		g.Id("sts").Op(":=").Make(jen.Index().Id(c.states), jen.Id("n"))
		if len(kept) > 0 {
			g.For(jen.Id("c").Op(":=").Range().Id("sts")).BlockFunc(func(g *jen.Group) {
				for _, r := range kept {
					g.Id("sts").Index(jen.Id("c")).Dot(e.accName(r)).Op("=").Make(jen.Index().Add(e.accType(r)), jen.Lit(r.Shape.Numel()))
				}
			})
		}
		g.Add(c.forChunks(jen.Func().Params(jen.List(jen.Id("c"), jen.Id("lo"), jen.Id("hi")).Int()).Block(
			call(jen.Op("&").Id("sts").Index(jen.Id("c")), jen.Id("lo"), jen.Id("hi")))))
		g.Id("st").Op("=").Id("sts").Index(jen.Lit(0))
		g.For(jen.Id("c").Op(":=").Lit(1), jen.Id("c").Op("<").Id("n"), jen.Id("c").Op("++")).Block(
			jen.Id("st").Dot("merge").Call(jen.Op("&").Id("sts").Index(jen.Id("c"))))
	})
}

// runStateless emits the run of c's chunks when they have no states to merge.
func (e *gen) runStateless(b *jen.Group, c *chunks) {
	call := func(lo, hi jen.Code) jen.Code { return jen.Id(c.run).Call(append(e.passArgs(), lo, hi)...) }
	body := jen.Func().Params(jen.Id("_"), jen.Id("lo"), jen.Id("hi").Int()).Block(call(jen.Id("lo"), jen.Id("hi")))
	b.If(jen.Id("n").Op(":=").Min(jen.Id(c.count), jen.Lit(c.units())), jen.Id("n").Op("<=").Lit(1)).Block(
		call(jen.Lit(0), jen.Lit(c.size())),
	).Else().Block(c.forChunks(body))
}

// forChunks is ChunkLoop over c's chunked dim.
func (c *chunks) forChunks(body jen.Code) jen.Code { return ChunkLoop(c.size(), c.ch.Align, body) }

// ChunkLoop is the generated runtime call that runs body, a func(c, lo, hi int), on the
// variable n's chunks of size indices: whole blocks of align indices when align > 1 (a flat
// domain's vector axis, runtime.ForBlockChunks), else rows (runtime.ForChunks). The Go and
// AVX2 glue both run their chunks with it.
func ChunkLoop(size, align int, body jen.Code) jen.Code {
	if align > 1 {
		return jen.Qual(RuntimePath, "ForBlockChunks").Call(jen.Id("n"), jen.Lit(size), jen.Lit(align), body)
	}
	return jen.Qual(RuntimePath, "ForChunks").Call(jen.Id("n"), jen.Lit(size), body)
}

// passArgs are the arguments that pass a pass function's parameters on.
func (e *gen) passArgs() []jen.Code {
	args := []jen.Code{jen.Id("in"), jen.Id("out")}
	if e.fb != nil {
		args = append(args, jen.Id("grads"))
	}
	return append(args, jen.Id("s"))
}

// localCarries declares, in a chunk function, the carries of the scans that keep one per
// index of the dims inside their axis (in the scratch in a one-piece pass): chunks run
// concurrently, so each needs its own.
func (p *pass) localCarries(b *jen.Group) {
	for _, n := range p.ps.Compute {
		if n.Op == ir.OpScan {
			if inner := carryDims(p.ps, n); len(inner) > 0 {
				b.Id(p.e.carryName(n)).Op(":=").Make(jen.Index().Add(p.e.elem), jen.Lit(inner.Numel()))
			}
		}
	}
}

// carries is scan n's carries (of a scan keeping one per index of the dims inside its axis):
// the scratch's, or a chunk function's own.
func (p *pass) carries(n *ir.Node) *jen.Statement {
	if p.chunks != nil {
		return jen.Id(p.e.carryName(n))
	}
	return jen.Id("s").Dot(p.e.carryName(n))
}
