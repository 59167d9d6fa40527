package gogen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// Row-local passes (plan.RowLocal): the pair's first pass's function runs both, row by row,
// and the second has no function of its own.

// RunsPass reports whether ps has a pass function of its own: every pass but the second of
// a row-local pair, which its first's function runs.
func RunsPass(ps *plan.Pass) bool { return ps.Row == nil || ps.Row.First == ps }

// rowLocalBody emits the function of a row-local pair: for each row, the first pass's loops
// over the row, its row reductions finished for the row, the second pass's loops over it and
// its row reductions finished; then the reductions over every row. Each accumulates in the
// same order as the two passes run one after the other, so the results are the same bits.
func (e *gen) rowLocalBody(b *jen.Group, rl *plan.RowLocal) {
	consts := e.declareConsts(b, rl.First, rl.Second)
	for _, ps := range []*plan.Pass{rl.First, rl.Second} {
		e.initAccs(b, ps.Reduces, "s")
	}
	e.markConstsUsed(b, consts, e.rows(b, rl, nil)...)
	for _, ps := range []*plan.Pass{rl.First, rl.Second} {
		var rest []*ir.Node
		for _, r := range ps.Reduces {
			if !slices.Contains(rl.RowReduces(ps), r) {
				rest = append(rest, r)
			}
		}
		e.finishReduces(b, rest, "")
	}
}

// rowChunkBody emits the function over chunk c of a row-local pair's rows: the pair's rows
// [lo, hi), its reductions over every row left in st (the pass function starts and finishes
// the row reductions, each chunk's rows their own slots).
func (e *gen) rowChunkBody(b *jen.Group, c *chunks) {
	rl := c.passes[0].Row
	consts := e.declareConsts(b, rl.First, rl.Second)
	e.initAccs(b, c.ch.Merge, "st")
	e.markConstsUsed(b, consts, e.rows(b, rl, c)...)
	e.keepStates(b, c)
}

// rows emits the loop over a row-local pair's rows (all, or with c those of [lo, hi)) that runs
// both passes over each row and finishes its row reductions; it returns the two passes.
func (e *gen) rows(b *jen.Group, rl *plan.RowLocal, c *chunks) []*pass {
	p1 := &pass{e: e, ps: rl.First, alias: map[int]*ir.Node{}, chunks: c}
	p2 := &pass{e: e, ps: rl.Second, alias: map[int]*ir.Node{}, chunks: c}
	iv := loopVar(rl.Dim.Name)
	var row []jen.Code
	for _, p := range []*pass{p1, p2} {
		if c != nil {
			p.localCarries(b)
		}
		row = append(row, p.nest(1)...)
		row = append(row, e.finishRow(rl, p.ps, iv)...)
	}
	lo, hi := jen.Lit(0), jen.Lit(rl.Dim.Size)
	if c != nil {
		lo, hi = jen.Id("lo"), jen.Id("hi")
	}
	b.For(jen.Id(iv).Op(":=").Add(lo), jen.Id(iv).Op("<").Add(hi), jen.Id(iv).Op("++")).Block(row...)
	return []*pass{p1, p2}
}

// finishRow finishes ps's row reductions for the row whose index is in variable iv.
func (e *gen) finishRow(rl *plan.RowLocal, ps *plan.Pass, iv string) []jen.Code {
	var out []jen.Code
	for _, r := range rl.RowReduces(ps) {
		per := rl.SlotsPerRow(r)
		sets := func(k jen.Code) []jen.Code {
			var sets []jen.Code
			acc := jen.Id("s").Dot(e.accName(r)).Index(k)
			for _, buf := range e.bufExprs(r) {
				sets = append(sets, jen.Add(buf).Index(k).Op("=").Add(e.conv(e.accResult(r, acc))))
			}
			return sets
		}
		if per == 1 {
			out = append(out, sets(jen.Id(iv))...)
			continue
		}
		out = append(out, jen.For(jen.Id("k").Op(":=").Id(iv).Op("*").Lit(per), jen.Id("k").Op("<").Parens(jen.Id(iv).Op("+").Lit(1)).Op("*").Lit(per), jen.Id("k").Op("++")).Block(sets(jen.Id("k"))...))
	}
	return out
}

// rowLocalDoc is the doc comment of a row-local pair's function.
func rowLocalDoc(name, what string, rl *plan.RowLocal) string {
	return fmt.Sprintf("%s runs passes %d and %d of %s's plan (lossgen explain) row by row over %s: %s, then %s, each row swept by the second while it is in cache.",
		name, rl.First.Index, rl.Second.Index, what, rl.Dim.Name, passSummary(rl.First), passSummary(rl.Second))
}
