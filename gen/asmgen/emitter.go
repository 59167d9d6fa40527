package asmgen

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
)

// emitter holds what the passes of one kernel (Forward's, or ForwardBackward's) share.
type emitter struct {
	a        *asm
	g        *ir.Graph
	p        *plan.Plan
	k        gogen.Kernel
	grads    bool // the package has ForwardBackward: pass functions take g *Grads
	inField  map[string]string
	outField map[string]string
	names    map[int]string // the nodes' names in comments, as the Go kernels name them

	wide map[int][]param // passes with a 16-lane variant (wide.go): its arguments, by pass index

	states     []stateArray   // the reduction state arrays inside avxState.buf, in order
	stateAt    map[string]int // byte offset of each, by stateField name
	stateBytes int            // the buffer's size
}

// stateArray is one reduction state array: n elements of float64, or of the kernel's element
// type, at byte offset off of the state buffer.
type stateArray struct {
	name   string
	elem   bool
	n, off int
}

// layoutStates places every state array of every pass in one buffer. Each starts on a
// 64-byte line, one line after the previous array's end: large buffers are page-aligned,
// and arrays whose sizes are multiples of 4 KiB would otherwise start at the same low 12
// address bits, where a block's loads from one wait on its stores to another (4K aliasing).
//
// Besides barrier reductions' lane states it holds each inner logsumexp's guard (one vector
// per pass), the pass's overflow guard (guard.go) and the carries of scans along an outer dim
// (one per index of the dims inside).
func (e *emitter) layoutStates(p *plan.Plan) {
	e.states, e.stateAt = nil, map[string]int{}
	end := 0
	place := func(name string, elem bool, n, size int) {
		if _, ok := e.stateAt[name]; ok {
			// An inner logsumexp two passes recompute: each pass sets its guard before it
			// runs and reads it after, so they share one.
			return
		}
		off := (end + 64 + 63) / 64 * 64
		a := stateArray{name: name, elem: elem, n: n, off: off}
		e.states = append(e.states, a)
		e.stateAt[a.name] = off
		end = off + a.n*size
	}
	for _, ps := range p.Passes {
		pg := &passGen{asm: e.a, e: e, ps: ps, dom: ps.Domain, twins: e.twinsOf(ps)}
		for _, r := range ps.Reduces {
			lay := pg.layout(r)
			for _, f := range pg.fields(r) {
				size := 8
				if f.elem {
					size = pg.esz()
				}
				place(stateField(r, f.name), f.elem, lay.slots*lay.lps+8, size)
			}
		}
		for _, r := range ps.Inner {
			if pg.guarded(r) {
				place(stateField(r, "ok"), true, 8, pg.esz())
			}
		}
		if pg.needsGuard() {
			place(guardField(ps), true, 8, pg.esz())
		}
		for _, n := range ps.Compute {
			if n.Op == ir.OpScan && n.Axes[0] != pg.vaxis() {
				inner := ps.Domain[ps.Domain.Index(n.Axes[0])+1:]
				place(carryField(n), true, inner.Numel()+8, pg.esz())
			}
		}
	}
	e.stateBytes = (end + 63) / 64 * 64
}

// guards are the logsumexps of a pass whose fast path keeps a guard mask: its barrier ones
// (but twins, which share their base's) and its inner ones.
func guards(pg *passGen) []*ir.Node {
	var out []*ir.Node
	for _, r := range pg.ps.Reduces {
		if pg.guarded(r) && pg.twins[r.ID] == nil {
			out = append(out, r)
		}
	}
	for _, r := range pg.ps.Inner {
		if pg.guarded(r) {
			out = append(out, r)
		}
	}
	return out
}

// bufAddrs are the Go expressions for the address of the first element of each of a stored
// node's buffers.
func (e *emitter) bufAddrs(n *ir.Node) []string {
	var out []string
	for _, buf := range e.p.Buffers(n) {
		var f string
		grad := buf.Output != nil && buf.Output.Role == ir.Gradient
		switch {
		case grad:
			f = "g." + gogen.GradField(buf.Name)
		case buf.Output != nil:
			f = "out." + e.outField[buf.Name]
		default:
			f = "s." + buf.Name
		}
		// A scalar output is a plain field; a scalar input's gradient is a one-element slice,
		// like the input (SAC's log_alpha).
		if len(n.Shape) == 0 && !grad {
			out = append(out, "&"+f)
		} else {
			out = append(out, "&"+f+"[0]")
		}
	}
	return out
}

// Files are the AVX2 backend's files for one package.
const (
	AsmFile      = "kernels_amd64.s"
	StubsFile    = "kernels_amd64.go"
	DispatchFile = "dispatch_amd64.go"
	// WideAsmFile holds the 16-lane AVX-512 variants (wide.go) of a package's passes that
	// have one, WideStubsFile their Go declarations; a package with none has neither.
	WideAsmFile   = "kernels_avx512_amd64.s"
	WideStubsFile = "kernels_avx512_amd64.go"
)

// Generate emits the AVX2 kernels of every pass of Forward's plan p and ForwardBackward's fb
// (nil for a package without gradients), the vector math functions the tests sweep, their Go
// declarations, and the Go glue that runs them (dispatch_amd64.go); for a float32 package
// with passes that have them (WidePasses), the 16-lane AVX-512 variants and their
// declarations (WideAsmFile, WideStubsFile), which the glue runs where runtime.AVX512 holds.
func Generate(p, fb *plan.Plan, m gogen.Meta) (map[string][]byte, error) {
	var ems []*emitter
	for _, k := range gogen.Kernels(p, fb) {
		g := k.Plan.Graph
		e := &emitter{g: g, p: k.Plan, k: k, grads: fb != nil, inField: map[string]string{}, outField: map[string]string{}, names: gogen.Identifiers(k.Plan.Graph)}
		for _, in := range g.Inputs {
			e.inField[in.Name] = gogen.InputField(in)
		}
		for _, o := range g.Outputs {
			e.outField[o.Name] = gogen.FieldName(o.Name)
		}
		ems = append(ems, e)
	}
	header := gogen.Header(m)
	files := map[string][]byte{}
	if len(WidePasses(p, fb)) > 0 {
		wideSrc, wideStubs, err := assemble(m.Package, header, false, true, func(a *asm) {
			for _, e := range ems {
				e.a = a
				e.layoutStates(e.p)
				e.wide = map[int][]param{}
				for _, ps := range e.p.Passes {
					if wideEligible(e.g, ps) {
						e.wide[ps.Index] = e.emitPass(ps, ps.Schedule.NonTemporal()).params
					}
				}
			}
		})
		if err != nil {
			return nil, fmt.Errorf("the AVX-512 variants: %w", err)
		}
		files[WideAsmFile], files[WideStubsFile] = wideSrc, wideStubs
	}
	pgs := map[*emitter][]*passGen{}
	nt := map[*emitter]map[int]bool{}
	asmSrc, stubs, err := assemble(m.Package, header, p.Graph.DType == ir.F64, false, func(a *asm) {
		clear(pgs) // a fresh attempt (assemble may run this again with a smaller budget)
		clear(nt)
		for _, e := range ems {
			e.a = a
			e.layoutStates(e.p)
			nt[e] = map[int]bool{}
			for _, ps := range e.p.Passes {
				pg := e.emitPass(ps, false)
				pgs[e] = append(pgs[e], pg)
				if ps.Schedule.NonTemporal() {
					nt[e][ps.Index] = true
					if v := e.emitPass(ps, true); fmt.Sprint(v.params) != fmt.Sprint(pg.params) {
						panic("asmgen: the non-temporal variant of a pass takes other arguments")
					}
				}
			}
		}
		for _, b := range bulkFuncs {
			a.emitBulk(b.name, b.fn)
		}
	})
	if err != nil {
		return nil, err
	}
	f := jen.NewFile(m.Package)
	f.HeaderComment(gogen.Header(m))
	f.HeaderComment("//go:build !purego")
	f.ImportName(gogen.RuntimePath, "runtime")
	reg := jen.Dict{jen.Id("name"): jen.Lit("avx2")}
	if files[WideAsmFile] != nil {
		f.Comment("useAVX512 says whether the passes with a 16-lane AVX-512 variant run it")
		f.Comment("(runtime.AVX512); the variants give the AVX2 passes' results bit for bit. Tests set it")
		f.Comment("to compare the two.")
		f.Var().Id("useAVX512").Op("=").Qual(gogen.RuntimePath, "AVX512").Call()
	}
	f.Comment("avx2Fallbacks counts the pass calls whose AVX2 result a guard rejected, so that the")
	f.Comment("pure-Go pass recomputed it (see the pass wrappers). Tests read it: ordinary data")
	f.Comment("must never need it.")
	f.Var().Id("avx2Fallbacks").Qual("sync/atomic", "Uint64")
	for _, e := range ems {
		e.glue(f, pgs[e], nt[e])
		reg[jen.Id(e.k.Name("passes"))] = jen.Index().Add(e.passType()).ValuesFunc(func(g *jen.Group) {
			for _, pg := range rowPasses(pgs[e]) {
				g.Id(e.name("pass%dAVX2Go", pg.ps.Index))
			}
		})
	}
	f.Comment("init registers the AVX2 implementation when runtime.AVX2 holds (the CPU has AVX2 and")
	f.Comment("FMA, and LOSSGEN_PUREGO is not set). Forward then runs it.")
	f.Func().Id("init").Params().Block(
		jen.If(jen.Op("!").Qual(gogen.RuntimePath, "AVX2").Call()).Block(jen.Return()),
		jen.Id("impls").Op("=").Append(jen.Id("impls"), jen.Id("impl").Values(reg)),
	)
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("asmgen: %s: %w", DispatchFile, err)
	}
	files[AsmFile], files[StubsFile], files[DispatchFile] = asmSrc, stubs, buf.Bytes()
	return files, nil
}

// name is a kernel's identifier: fmt.Sprintf(format, i) with the kernel's prefix
// (pass0AVX2Go, fbPass0AVX2Go).
func (e *emitter) name(format string, args ...any) string {
	return e.k.Name(fmt.Sprintf(format, args...))
}

// passParams and passType are the pass functions' (as gogen's).
func (e *emitter) passParams() []jen.Code {
	ps := []jen.Code{jen.Id("in").Op("*").Id("Inputs"), jen.Id("out").Op("*").Id("Outputs")}
	if e.grads {
		ps = append(ps, jen.Id("g").Op("*").Id("Grads"))
	}
	return append(ps, jen.Id("s").Op("*").Id(e.k.Name("scratch")))
}

func (e *emitter) passType() jen.Code {
	ts := []jen.Code{jen.Op("*").Id("Inputs"), jen.Op("*").Id("Outputs")}
	if e.grads {
		ts = append(ts, jen.Op("*").Id("Grads"))
	}
	return jen.Func().Params(append(ts, jen.Op("*").Id(e.k.Name("scratch")))...)
}

// passArgs are a pass function's arguments, to call the Go pass from its wrapper.
func (e *emitter) passArgs() []jen.Code {
	as := []jen.Code{jen.Id("in"), jen.Id("out")}
	if e.grads {
		as = append(as, jen.Id("g"))
	}
	return append(as, jen.Id("s"))
}

// glue emits the kernel's part of dispatch_amd64.go: its lane-state type and one wrapper
// per pass (initialise the states, call the assembly, merge the states into the reductions'
// buffers).
func (e *emitter) glue(f *jen.File, pgs []*passGen, nt map[int]bool) {
	elem := e.g.DType.String()
	st, pool := e.k.Name("avxState"), e.k.Name("avxPool")

	// State arrays: per reduction and field, slots·lanes values plus a vector of padding (a
	// block whose lanes are slots may run past the last slot; its tail lanes are masked),
	// views of one buffer (see layoutStates).
	fields := []jen.Code{jen.Id("buf").Index().Float64()}
	views := []jen.Code{jen.Id("st").Op(":=").Op("&").Id(st).Values(jen.Dict{
		jen.Id("buf"): jen.Make(jen.Index().Float64(), jen.Lit(e.stateBytes/8)),
	})}
	maxSlots := 1
	for _, pg := range pgs {
		for _, r := range pg.ps.Reduces {
			maxSlots = max(maxSlots, pg.layout(r).slots)
		}
	}
	for _, a := range e.states {
		t := jen.Float64()
		view := jen.Id("st").Dot("buf").Index(jen.Lit(a.off/8), jen.Lit(a.off/8+a.n))
		if a.elem {
			t = jen.Id(elem)
			if elem != "float64" {
				view = jen.Qual("unsafe", "Slice").Call(jen.Parens(jen.Op("*").Id(elem)).Call(jen.Qual("unsafe", "Pointer").Call(jen.Op("&").Id("st").Dot("buf").Index(jen.Lit(a.off/8)))), jen.Lit(a.n))
			}
		}
		fields = append(fields, jen.Id(a.name).Index().Add(t))
		views = append(views, jen.Id("st").Dot(a.name).Op("=").Add(view))
	}
	fields = append(fields, jen.Id("res").Index().Float64())
	views = append(views, jen.Id("st").Dot("res").Op("=").Make(jen.Index().Float64(), jen.Lit(maxSlots)), jen.Return(jen.Id("st")))
	f.Commentf("%s holds the AVX2 kernels' per-lane reduction states, views of one buffer", st)
	f.Comment("whose address the kernels take, and a buffer for the merged results.")
	f.Type().Id(st).Struct(fields...)
	f.Var().Id(pool).Op("=").Qual("sync", "Pool").Values(jen.Dict{
		jen.Id("New"): jen.Func().Params().Any().Block(views...),
	})

	for _, pg := range rowPasses(pgs) {
		if pg.ps.Row != nil {
			e.rowWrapper(f, pg, rowSecond(pgs, pg), elem, nt)
			continue
		}
		if ch := pg.ps.Schedule.Chunks; ch != nil {
			what := "rows"
			if pg.flat {
				what = fmt.Sprintf("whole %d-element blocks of %s", ch.Align, ch.Dim)
			}
			f.Comment(fmt.Sprintf("%s is how many chunks of %s pass %d runs as, concurrently, each with its own reduction states merged in chunk order afterwards (1: in one piece). The plan fixes it from the pass's size, so results do not depend on the machine; tests set it to check the chunked run.", e.chunkVar(pg.ps), what, pg.ps.Index))
			f.Var().Id(e.chunkVar(pg.ps)).Op("=").Lit(ch.Count)
		}
		e.wrapper(f, pg, elem, nt[pg.ps.Index])
	}
}

// fill is a state field's starting value (passGen.identity) as a Go value of type elem, or
// float64 for a float64 field.
func fill(v float64, f field, elem string) jen.Code {
	t := "float64"
	if f.elem {
		t = elem
	}
	switch {
	case v == 0:
		return jen.Lit(0)
	case math.IsInf(v, 0):
		sign := 1
		if v < 0 {
			sign = -1
		}
		return jen.Id(t).Call(jen.Qual("math", "Inf").Call(jen.Lit(sign)))
	}
	return jen.Id(t).Call(jen.Lit(v))
}

// runPass emits the initialisation of st's states for pg's pass and the call of its kernel
// (the non-temporal variant when the stored buffers are aligned for it).
func (e *emitter) runPass(b *jen.Group, pg *passGen, elem string, nt bool) {
	e.initStates(b, pg, elem)
	e.callPass(b, pg, nt)
}

// initStates emits the initialisation of st's states for pg's pass.
func (e *emitter) initStates(b *jen.Group, pg *passGen, elem string) {
	ps := pg.ps
	rt := gogen.RuntimePath
	for _, r := range ps.Reduces {
		for _, fld := range pg.fields(r) {
			switch {
			case fld.name == "ok":
				b.Qual(rt, "SetMask").Call(jen.Id("st").Dot(stateField(r, fld.name)))
			case fld.name == "n" && pg.chunkRows() && pg.knownCount(r):
				// A variance whose lanes all see the same count tracks none in the kernel:
				// the chunk's is its rows times the elements per row.
				perRow := r.Args[0].Shape.Numel() / r.Shape.Numel() / ps.Domain[0].Size
				b.Qual(rt, "Fill").Call(jen.Id("st").Dot(stateField(r, fld.name)), jen.Float64().Call(jen.Parens(jen.Id("hi").Op("-").Id("lo")).Op("*").Lit(perRow)))
			default:
				b.Qual(rt, "Fill").Call(jen.Id("st").Dot(stateField(r, fld.name)), fill(pg.identity(r, fld.name), fld, elem))
			}
		}
	}
	for _, r := range ps.Inner {
		if pg.guarded(r) {
			b.Qual(rt, "SetMask").Call(jen.Id("st").Dot(stateField(r, "ok")))
		}
	}
	if pg.needsGuard() {
		b.Qual(rt, "SetMask").Call(jen.Id("st").Dot(guardField(ps)))
	}
}

// callPass emits the call of pg's kernel on st (the non-temporal variant when the stored
// buffers are aligned for it).
func (e *emitter) callPass(b *jen.Group, pg *passGen, nt bool) {
	ps := pg.ps
	// call calls a pass function, with the variables of rename in place of lo or hi.
	call := func(name string, params []param, rename map[string]string) *jen.Statement {
		return jen.Id(name).CallFunc(func(c *jen.Group) {
			for _, p := range params {
				if r, ok := rename[p.goExpr]; ok {
					c.Id(r)
					continue
				}
				c.Op(p.goExpr)
			}
		})
	}
	// withWide runs the 16-lane variant fn instead of AVX2's on a machine with AVX-512 (ok):
	// a flat batch's tail chunk runs its last part with AVX2's (wideFlat).
	withWide := func(ok jen.Code, fn, avx2fn string) *jen.Statement {
		avx2 := call(avx2fn, pg.params, nil)
		wp, has := e.wide[ps.Index]
		if !has {
			return avx2
		}
		wide := call(fn, wp, nil)
		if flatChunks(ps) {
			wide = e.wideFlat(call(fn, wp, map[string]string{"hi": "m"}), call(avx2fn, pg.params, map[string]string{"lo": "m"}))
		}
		return jen.If(ok).Block(wide).Else().Block(avx2)
	}
	avx2 := e.name("pass%dAVX2", ps.Index)
	switch {
	case !nt && ps.Schedule.NonTemporal(): // its variant stores non-temporally: not here
		b.Add(call(avx2, pg.params, nil))
		return
	case !nt:
		b.Add(withWide(jen.Id("useAVX512"), e.name("pass%dAVX512", ps.Index), avx2))
		return
	}
	// Non-temporal stores need 32-byte aligned buffers (64-byte for the 16-lane variant's):
	// large slices from make are, a user's sub-slice may not be.
	aligned := func(bytes int) *jen.Statement {
		var cond *jen.Statement
		for _, n := range ps.Stores {
			if ps.Schedule.Stores[n.ID] != plan.NonTemporal {
				continue
			}
			for _, addr := range e.bufAddrs(n) {
				a := jen.Uintptr().Call(jen.Qual("unsafe", "Pointer").Call(jen.Op(addr))).Op("%").Lit(bytes).Op("==").Lit(0)
				if cond == nil {
					cond = a
				} else {
					cond = cond.Op("&&").Add(a)
				}
			}
		}
		return cond
	}
	b.If(aligned(32)).Block(
		withWide(jen.Id("useAVX512").Op("&&").Add(aligned(64)), e.name("pass%dAVX512NT", ps.Index), avx2+"NT"),
	).Else().Block(call(avx2, pg.params, nil))
}

// wideFlat is the 16-lane run of a flat batch's chunk [lo, hi): lo is a multiple of 16
// (plan.Chunking.Align); the chunk that ends in the batch's tail runs the variant up to the
// last flush before it (a multiple of 64 elements from lo, partialBlocks 8-lane blocks) and
// the AVX2 pass from there, which starts its partials where the one-piece AVX2 loop flushed
// them: the same states as the AVX2 pass on [lo, hi).
func (e *emitter) wideFlat(wide, avx2 jen.Code) *jen.Statement {
	flush := 8 * partialBlocks
	return jen.Id("m").Op(":=").Id("hi").Line().
		If(jen.Id("hi").Op("%").Lit(16).Op("!=").Lit(0)).Block(
		jen.Id("m").Op("-=").Parens(jen.Id("hi").Op("-").Id("lo")).Op("%").Lit(flush),
	).Line().
		If(jen.Id("m").Op(">").Id("lo")).Block(wide).Line().
		If(jen.Id("m").Op("<").Id("hi")).Block(avx2)
}

// chunkVar names the variable holding a chunkable pass's chunk count.
func (e *emitter) chunkVar(ps *plan.Pass) string { return e.name("pass%dChunks", ps.Index) }

// runChunks emits the run of a chunkable pass: in one piece on st, or as chunks (of rows,
// or of whole blocks of a flat domain's vector axis) on their own states, run concurrently
// and merged into st in chunk order.
func (e *emitter) runChunks(b *jen.Group, pg *passGen) {
	ch := pg.ps.Schedule.Chunks
	size := pg.ps.Domain[pg.ps.Domain.Index(ch.Dim)].Size
	e.inChunks(b, e.chunkVar(pg.ps), size, ch.Align, e.merges(pg, pg.ps.Reduces))
}

// inChunks emits the call of run (a func(st, lo, hi)) over [0, size) of the chunked dim: on
// st when the chunk variable says 1, else as that many chunks on their own states,
// concurrently, merged into st in chunk order by merges. With align > 1 the chunks are whole
// blocks of align indices (a flat domain's vector axis), the last one taking the tail.
func (e *emitter) inChunks(b *jen.Group, chunkVar string, size, align int, merges []jen.Code) {
	b.Id("n").Op(":=").Min(jen.Id(chunkVar), jen.Lit(max(1, size/align)))
	b.If(jen.Id("n").Op("<=").Lit(1)).Block(
		jen.Id("run").Call(jen.Id("st"), jen.Lit(0), jen.Lit(size)),
	).Else().BlockFunc(func(g *jen.Group) {
		g.Id("sts").Op(":=").Make(jen.Index().Op("*").Id(e.k.Name("avxState")), jen.Id("n"))
		g.Id("sts").Index(jen.Lit(0)).Op("=").Id("st")
		g.For(jen.Id("c").Op(":=").Lit(1), jen.Id("c").Op("<").Id("n"), jen.Id("c").Op("++")).Block(
			jen.Id("sts").Index(jen.Id("c")).Op("=").Id(e.k.Name("avxPool")).Dot("Get").Call().Assert(jen.Op("*").Id(e.k.Name("avxState"))),
			jen.Defer().Id(e.k.Name("avxPool")).Dot("Put").Call(jen.Id("sts").Index(jen.Id("c"))),
		)
		body := jen.Func().Params(jen.List(jen.Id("c"), jen.Id("lo"), jen.Id("hi")).Int()).Block(
			jen.Id("run").Call(jen.Id("sts").Index(jen.Id("c")), jen.Id("lo"), jen.Id("hi")),
		)
		g.Add(gogen.ChunkLoop(size, align, body))
		g.For(jen.Id("c").Op(":=").Lit(1), jen.Id("c").Op("<").Id("n"), jen.Id("c").Op("++")).Block(merges...)
	})
}

// merges are the statements that merge chunk c's states of reductions rs of pg's pass (and
// its overflow guard) into chunk 0's.
func (e *emitter) merges(pg *passGen, rs []*ir.Node) []jen.Code {
	ps := pg.ps
	rt := gogen.RuntimePath
	at := func(c jen.Code, r *ir.Node, f string) *jen.Statement {
		return jen.Id("sts").Index(c).Dot(stateField(r, f))
	}
	c0, c := jen.Lit(0), jen.Id("c")
	var merges []jen.Code
	for _, r := range rs {
		if !pg.own(r) {
			merges = append(merges, mergeGeneric(r, c))
			continue
		}
		switch r.Op {
		case ir.OpSum, ir.OpMean:
			merges = append(merges, jen.Qual(rt, "MergeSum").Call(at(c0, r, "s"), at(c, r, "s")))
		case ir.OpLogSumExp:
			merges = append(merges, jen.Qual(rt, "MergeSum").Call(at(c0, r, "s"), at(c, r, "s")))
			if pg.twins[r.ID] == nil {
				merges = append(merges, jen.Qual(rt, "MergeMask").Call(at(c0, r, "ok"), at(c, r, "ok")))
			}
		case ir.OpVar, ir.OpStd:
			merges = append(merges, jen.Qual(rt, "MergeVar").Call(at(c0, r, "n"), at(c0, r, "mean"), at(c0, r, "m2"), at(c, r, "n"), at(c, r, "mean"), at(c, r, "m2")))
		}
	}
	if pg.needsGuard() {
		merges = append(merges, jen.Qual(rt, "MergeMask").Call(jen.Id("sts").Index(c0).Dot(guardField(ps)), jen.Id("sts").Index(c).Dot(guardField(ps))))
	}
	return merges
}

func (e *emitter) wrapper(f *jen.File, pg *passGen, elem string, nt bool) {
	ps := pg.ps
	name := e.name("pass%dAVX2Go", ps.Index)
	f.Commentf("%s runs %s and merges its reductions' lane states pairwise into their buffers.", name, e.name("pass%dAVX2", ps.Index))
	f.Func().Id(name).Params(e.passParams()...).BlockFunc(func(b *jen.Group) {
		b.Id("st").Op(":=").Id(e.k.Name("avxPool")).Dot("Get").Call().Assert(jen.Op("*").Id(e.k.Name("avxState")))
		b.Defer().Id(e.k.Name("avxPool")).Dot("Put").Call(jen.Id("st"))
		if pg.chunked {
			b.Id("run").Op(":=").Func().Params(jen.Id("st").Op("*").Id(e.k.Name("avxState")), jen.List(jen.Id("lo"), jen.Id("hi")).Int()).BlockFunc(func(g *jen.Group) {
				e.runPass(g, pg, elem, nt)
			})
			e.runChunks(b, pg)
		} else {
			e.runPass(b, pg, elem, nt)
		}
		e.fallback(b, e.name("pass%dGo", ps.Index), pg)
		e.finishReduces(b, pg, elem, ps.Reduces)
	})
}

// fallback emits the check of the passes' guards: logsumexp's fast path holds only while
// every x stayed where e^x is normal, the overflow guard while nothing could overflow in one
// order and not the other; otherwise the pure-Go pass goPass recomputes everything exactly.
func (e *emitter) fallback(b *jen.Group, goPass string, pgs ...*passGen) {
	var failed *jen.Statement
	for _, pg := range pgs {
		var oks []string
		for _, r := range guards(pg) {
			oks = append(oks, stateField(r, "ok"))
		}
		if pg.needsGuard() {
			oks = append(oks, guardField(pg.ps))
		}
		for _, ok := range oks {
			f := jen.Op("!").Qual(gogen.RuntimePath, "MaskSet").Call(jen.Id("st").Dot(ok).Index(jen.Op(":").Lit(pg.lanes())))
			if failed == nil {
				failed = f
			} else {
				failed = failed.Op("||").Add(f)
			}
		}
	}
	if failed != nil {
		b.If(failed).Block(
			jen.Id("avx2Fallbacks").Dot("Add").Call(jen.Lit(1)),
			jen.Id(goPass).Call(e.passArgs()...),
			jen.Return(),
		)
	}
}

// finishReduces merges the lane states of pg's reductions rs into their buffers.
func (e *emitter) finishReduces(b *jen.Group, pg *passGen, elem string, rs []*ir.Node) {
	for _, r := range rs {
		lay := pg.layout(r)
		if !pg.own(r) {
			finishGeneric(b, r, lay, nil)
			e.storeResult(b, r, elem, lay, nil)
			continue
		}
		if pg.knownCount(r) && !pg.chunkRows() {
			// The kernel tracks no per-lane count when every lane's is the same (a
			// chunked pass's run filled it).
			b.Qual(gogen.RuntimePath, "Fill").Call(jen.Id("st").Dot(stateField(r, "n")), jen.Lit(float64(r.Args[0].Shape.Numel()/r.Shape.Numel())))
		}
		whole := func(f string) jen.Code { return jen.Id("st").Dot(f) }
		b.Add(e.finishCall(pg, r, jen.Id("st").Dot("res").Index(jen.Op(":").Lit(lay.slots)), whole))
		e.storeResult(b, r, elem, lay, nil)
	}
}

// finishCall is the runtime call that merges r's lane states (field(name) is the state array
// of a field, or the part of it to finish) into res.
func (e *emitter) finishCall(pg *passGen, r *ir.Node, res jen.Code, field func(string) jen.Code) jen.Code {
	args := []jen.Code{res}
	switch r.Op {
	case ir.OpLogSumExp:
		args = append(args, field(stateField(r, "s")))
	default:
		for _, fld := range pg.fields(r) {
			if !partialField(fld.name) {
				args = append(args, field(stateField(r, fld.name)))
			}
		}
	}
	args = append(args, jen.Lit(pg.layout(r).lps))
	switch r.Op {
	case ir.OpMean:
		args = append(args, jen.Lit(float64(r.Args[0].Shape.Numel()/r.Shape.Numel())))
	case ir.OpVar, ir.OpStd:
		args = append(args, jen.Lit(r.Corr))
	}
	return jen.Qual(gogen.RuntimePath, laneCode[r.Op]).Call(args...)
}

// storeResult copies r's finished values (those of rng; nil: all) from st.res into its
// buffers.
func (e *emitter) storeResult(b *jen.Group, r *ir.Node, elem string, lay redLayout, rng *slotRange) {
	for _, addr := range e.bufAddrs(r) {
		dst := strings.TrimPrefix(addr, "&")
		switch {
		case len(r.Shape) == 0:
			b.Op(dst).Op("=").Id(elem).Call(jen.Id("st").Dot("res").Index(jen.Lit(0)))
		case rng != nil:
			slice := strings.TrimSuffix(dst, "[0]")
			b.For(rng.loop()...).Block(
				jen.Op(slice).Index(jen.Id("k")).Op("=").Id(elem).Call(jen.Id("st").Dot("res").Index(jen.Id("k"))),
			)
		default:
			slice := strings.TrimSuffix(dst, "[0]")
			b.For(jen.List(jen.Id("k"), jen.Id("v")).Op(":=").Range().Id("st").Dot("res").Index(jen.Op(":").Lit(lay.slots))).Block(
				jen.Op(slice).Index(jen.Id("k")).Op("=").Id(elem).Call(jen.Id("v")),
			)
		}
	}
}

// finishGeneric emits the Go that merges each slot's lane states of r (those of rng; nil:
// all) in lane order with r's description and finishes them into st.res.
func finishGeneric(b *jen.Group, r *ir.Node, lay redLayout, rng *slotRange) {
	red := ir.ReductionOf[jen.Code](r.Op)
	lane := func(i jen.Code) []jen.Code {
		var st []jen.Code
		for _, f := range red.Fields {
			st = append(st, jen.Id("st").Dot(stateField(r, f)).Index(jen.Id("k").Op("*").Lit(lay.lps).Op("+").Add(i)))
		}
		return st
	}
	a := gogen.State(jen.Id("a"), len(red.Fields))
	o := gogen.Ops64{}
	head := []jen.Code{jen.Id("k").Op(":=").Range().Id("st").Dot("res").Index(jen.Op(":").Lit(lay.slots))}
	if rng != nil {
		head = rng.loop()
	}
	b.For(head...).Block(
		jen.Id("a").Op(":=").Index(jen.Lit(len(red.Fields))).Float64().Values(lane(jen.Lit(0))...),
		jen.For(jen.Id("i").Op(":=").Lit(1), jen.Id("i").Op("<").Lit(lay.lps), jen.Id("i").Op("++")).Block(
			jen.Id("a").Op("=").Index(jen.Lit(len(red.Fields))).Float64().Values(red.Merge(o, a, lane(jen.Id("i")))...),
		),
		jen.Id("st").Dot("res").Index(jen.Id("k")).Op("=").Add(red.Finish(o, a, r.Corr)),
	)
}

// twinsOf is twinsOf(g, ps) for the logsumexps on their fast path.
func (e *emitter) twinsOf(ps *plan.Pass) map[int]*ir.Node {
	if e.g.GenericReductions {
		return map[int]*ir.Node{}
	}
	return twinsOf(e.g, ps)
}

// mergeGeneric emits the Go that merges chunk c's lane states of r into chunk 0's with r's
// description, lane by lane.
func mergeGeneric(r *ir.Node, c jen.Code) jen.Code {
	red := ir.ReductionOf[jen.Code](r.Op)
	field := func(chunk jen.Code, f string) *jen.Statement {
		return jen.Id("sts").Index(chunk).Dot(stateField(r, f))
	}
	var a, b, dst []jen.Code
	for _, f := range red.Fields {
		a = append(a, field(jen.Lit(0), f).Index(jen.Id("i")))
		b = append(b, field(c, f).Index(jen.Id("i")))
		dst = append(dst, field(jen.Lit(0), f).Index(jen.Id("i")))
	}
	return jen.For(jen.Id("i").Op(":=").Range().Add(field(jen.Lit(0), red.Fields[0]))).Block(
		jen.List(dst...).Op("=").List(red.Merge(gogen.Ops64{}, a, b)...),
	)
}
