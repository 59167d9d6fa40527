package asmgen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// Row-local passes (plan.RowLocal). Both passes of a pair are assembled as chunked passes
// (they take rows [lo, hi) of the row dim); one Go wrapper, the first's, runs them on sweeps
// of the rows the pair's schedule says (plan.RowSchedule.Sweep): the first pass, its row
// reductions finished for those rows, the second, its row reductions finished. When the
// schedule cuts the pair into chunks of rows, the chunks' sweeps run concurrently, each on
// its own lane states; the states of the reductions over every row are merged in chunk order
// afterwards, as a chunked pass's are, so results do not depend on the machine or GOMAXPROCS.

// slotRange is the slots [lo·per, hi·per) of a reduction whose slots of row i are
// [i·per, (i+1)·per): the rows [lo, hi) of the sweep being finished.
type slotRange struct{ per int }

func (r *slotRange) from() *jen.Statement { return r.times("lo", r.per) }
func (r *slotRange) to() *jen.Statement   { return r.times("hi", r.per) }

// lanes is the range's state elements of a field with lps lane states per slot.
func (r *slotRange) lanes(field jen.Code, lps int) jen.Code {
	return jen.Add(field).Index(r.times("lo", r.per*lps), r.times("hi", r.per*lps))
}

func (r *slotRange) times(v string, k int) *jen.Statement {
	if k == 1 {
		return jen.Id(v)
	}
	return jen.Id(v).Op("*").Lit(k)
}

// loop is the header of a for loop of k over the range.
func (r *slotRange) loop() []jen.Code {
	return []jen.Code{jen.Id("k").Op(":=").Add(r.from()), jen.Id("k").Op("<").Add(r.to()), jen.Id("k").Op("++")}
}

// rowWrapper emits the Go wrapper of a row-local pair (first, second), named as the first
// pass's wrapper; the second has none.
func (e *emitter) rowWrapper(f *jen.File, first, second *passGen, elem string, nt map[int]bool) {
	rl := first.ps.Row
	name := e.name("pass%dAVX2Go", rl.First.Index)
	goPass := e.name("pass%dGo", rl.First.Index)
	sch := rl.First.Schedule
	if sch.Chunks != nil {
		f.Commentf("%s is how many chunks of rows passes %d and %d run as, concurrently (see %s).", e.chunkVar(rl.First), rl.First.Index, rl.Second.Index, name)
		f.Comment("It is fixed by the generator, so results do not depend on the machine; tests set it.")
		f.Var().Id(e.chunkVar(rl.First)).Op("=").Lit(sch.Chunks.Count)
	}
	f.Commentf("%s runs %s and %s row-locally: on sweeps of %d rows of %s, the second",
		name, e.name("pass%dAVX2", rl.First.Index), e.name("pass%dAVX2", rl.Second.Index), sch.Row.Sweep, rl.Dim.Name)
	f.Comment("reads the rows the first has just read, with the first's per-row reductions finished")
	f.Comment("for them (lossgen explain: row-local), while they are in cache.")
	f.Func().Id(name).Params(e.passParams()...).BlockFunc(func(b *jen.Group) {
		b.Id("st").Op(":=").Id(e.k.Name("avxPool")).Dot("Get").Call().Assert(jen.Op("*").Id(e.k.Name("avxState")))
		b.Defer().Id(e.k.Name("avxPool")).Dot("Put").Call(jen.Id("st"))
		b.Id("run").Op(":=").Func().Params(jen.Id("st").Op("*").Id(e.k.Name("avxState")), jen.List(jen.Id("lo"), jen.Id("hi")).Int()).BlockFunc(func(g *jen.Group) {
			e.initStates(g, first, elem)
			e.initStates(g, second, elem)
			g.For(jen.Id("a").Op(":=").Id("lo"), jen.Id("a").Op("<").Id("hi"), jen.Id("a").Op("+=").Lit(sch.Row.Sweep)).BlockFunc(func(s *jen.Group) {
				s.List(jen.Id("lo"), jen.Id("hi")).Op(":=").List(jen.Id("a"), jen.Min(jen.Id("a").Op("+").Lit(sch.Row.Sweep), jen.Id("hi")))
				for _, pg := range []*passGen{first, second} {
					e.callPass(s, pg, nt[pg.ps.Index] && !readsStores(rl.Second, pg.ps))
					for _, r := range rl.RowReduces(pg.ps) {
						e.finishRows(s, pg, r, elem)
					}
				}
			})
		})
		if sch.Chunks == nil {
			b.Id("run").Call(jen.Id("st"), jen.Lit(0), jen.Lit(rl.Dim.Size))
		} else {
			e.rowChunks(b, first, second)
		}
		e.fallback(b, goPass, first, second)
		e.finishReduces(b, first, elem, e.allRows(first))
		e.finishReduces(b, second, elem, e.allRows(second))
	})
}

// rowChunks emits the run of a row-local pair's sweeps in its schedule's chunks of rows,
// merging the states of the reductions over every row (and the guards of the row ones, which
// the sweeps finished) in chunk order.
func (e *emitter) rowChunks(b *jen.Group, first, second *passGen) {
	rl := first.ps.Row
	var merges []jen.Code
	for _, pg := range []*passGen{first, second} {
		merges = append(merges, e.merges(pg, e.allRows(pg))...)
		for _, r := range rl.RowReduces(pg.ps) {
			if pg.guarded(r) && pg.twins[r.ID] == nil {
				// Finished already; only the guard must see every chunk.
				merges = append(merges, jen.Qual(gogen.RuntimePath, "MergeMask").Call(jen.Id("sts").Index(jen.Lit(0)).Dot(stateField(r, "ok")), jen.Id("sts").Index(jen.Id("c")).Dot(stateField(r, "ok"))))
			}
		}
	}
	e.inChunks(b, e.chunkVar(rl.First), rl.Dim.Size, 1, merges)
}

// readsStores reports whether pass reader loads a buffer pass writer stores: then writer's
// stores must stay in cache for it (no non-temporal variant).
func readsStores(reader, writer *plan.Pass) bool {
	for _, n := range reader.Loads {
		if slices.Contains(writer.Stores, n) {
			return true
		}
	}
	return false
}

// allRows are pg's reductions over every row (the row dim among their axes).
func (e *emitter) allRows(pg *passGen) []*ir.Node {
	var out []*ir.Node
	for _, r := range pg.ps.Reduces {
		if slices.Contains(r.Axes, pg.ps.Row.Dim.Name) {
			out = append(out, r)
		}
	}
	return out
}

// finishRows emits the merge of the lane states of row reduction r for rows [lo, hi) into
// its buffers.
func (e *emitter) finishRows(b *jen.Group, pg *passGen, r *ir.Node, elem string) {
	rl := pg.ps.Row
	lay := pg.layout(r)
	rng := &slotRange{per: rl.SlotsPerRow(r)}
	if !pg.own(r) {
		finishGeneric(b, r, lay, rng)
		e.storeResult(b, r, elem, lay, rng)
		return
	}
	lanes := func(f string) jen.Code { return rng.lanes(jen.Id("st").Dot(f), lay.lps) }
	if pg.knownCount(r) {
		// The kernel tracks no per-lane count when every lane's is the same.
		b.Qual(gogen.RuntimePath, "Fill").Call(lanes(stateField(r, "n")), jen.Lit(float64(r.Args[0].Shape.Numel()/r.Shape.Numel())))
	}
	b.Add(e.finishCall(pg, r, jen.Id("st").Dot("res").Index(rng.from(), rng.to()), lanes))
	e.storeResult(b, r, elem, lay, rng)
}

// rowPasses lists the wrapped passes of a kernel: pgs without the second of each row-local
// pair, whose work its first's wrapper does.
func rowPasses(pgs []*passGen) []*passGen {
	var out []*passGen
	for _, pg := range pgs {
		if gogen.RunsPass(pg.ps) {
			out = append(out, pg)
		}
	}
	return out
}

// rowSecond finds the passGen of a row-local pair's second pass.
func rowSecond(pgs []*passGen, first *passGen) *passGen {
	for _, pg := range pgs {
		if pg.ps == first.ps.Row.Second {
			return pg
		}
	}
	panic(fmt.Sprintf("asmgen: pass %d's row-local partner is not assembled", first.ps.Index))
}
