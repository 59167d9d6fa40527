// Package ptxgen is the PTX backend: for every pass of the fusion plan it emits a CUDA PTX
// kernel (PTX ISA 7.0, sm_80, 64-bit addresses), generic over the IR like the other backends,
// plus a merge kernel where a reduction spans thread blocks, and the launch table that says
// which buffers to allocate and which kernels to launch in order. The module and kernel
// frames are text/templates (templates/ptx); the instructions come from the op expansions
// here. Results are deterministic: no floating-point atomics, fixed reduction trees (the only
// atomics count index faults: integer adds and mins, fault.go).
//
// A row-local pair of passes (plan.RowLocal) over a [rows, columns] domain runs as one kernel
// with one block per row (rowlocal.go); a pair over more dims runs as its two kernels, one
// launch after the other, as any two passes do.
package ptxgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/templates"
)

// Target is the PTX .target of every module.
const Target = "sm_80"

// The backend's files.
const (
	PTXFile            = "kernels.ptx"
	LaunchFile         = "launch.json"
	LaunchBackwardFile = "launch_backward.json"
	GoFile             = "ptx.go"
)

// emitter emits one kernel: Forward's plan, or ForwardBackward's (prefix "fb_" on its
// kernel, constant and scratch names, which share the module with Forward's).
type emitter struct {
	g      *ir.Graph
	p      *plan.Plan
	f64    bool
	prefix string
	names  map[int]string // the nodes' names, as the Go kernels name them (comments, parameters)
	// indexSize is the range each index input's gathers check (fault.go).
	indexSize map[*ir.Input]int
}

func (e *emitter) esz() int {
	if e.f64 {
		return 8
	}
	return 4
}

// bufName is the launch-table buffer holding node n: in/<data name> for an input,
// out/<name> for an output, scratch/<name> for the rest (an input and an output may share a
// name: ClipPPO reads "entropy" and reports "entropy").
func (e *emitter) bufName(n *ir.Node) string {
	if n.Op == ir.OpInput {
		return "in/" + n.Input.Name
	}
	return e.bufNames(n)[0]
}

// bufNames are the buffers a store of n writes: out/<name> for each output it is, or its
// scratch buffer.
func (e *emitter) bufNames(n *ir.Node) []string {
	var out []string
	for _, buf := range e.p.Buffers(n) {
		out = append(out, bufferName(buf))
	}
	if out == nil {
		panic(fmt.Sprintf("ptxgen: v%d is not stored", n.ID))
	}
	return out
}

// bufferName is a plan buffer's launch-table name: out/<output>, grad/<input data name> for
// a gradient, scratch/<name>.
func bufferName(buf *plan.Buffer) string {
	switch {
	case buf.Output != nil && buf.Output.Role == ir.Gradient:
		return "grad/" + strings.TrimPrefix(buf.Name, "grad.")
	case buf.Output != nil:
		return "out/" + buf.Name
	}
	return "scratch/" + buf.Name
}

func (e *emitter) constName(n *ir.Node) string { return fmt.Sprintf("lg%sconst%d", e.prefix, n.ID) }

type constDecl struct {
	Doc, Type, Name, Values string
	Len                     int
}

type kernelView struct {
	Doc    string
	Name   string
	Params []string
	Block  int // .reqntid: the launch table's block, which the code assumes (warp slots, strides)
	Regs   []regDecl
	Shared int
	Text   string
}

// Module is the emitted PTX and its launch tables.
type Module struct {
	PTX    []byte
	Launch runtime.LaunchTable
	// Backward runs ForwardBackward: the outputs and the gradients (grad/<input> buffers);
	// nil for a package without gradients.
	Backward *runtime.LaunchTable
}

// Emit builds the PTX module and launch tables for Forward's plan p and ForwardBackward's fb
// (nil for a package without gradients).
func Emit(p, fb *plan.Plan, m gogen.Meta) (*Module, error) {
	var kernels []kernelView
	var consts []constDecl
	mod := &Module{}
	for i, pl := range []*plan.Plan{p, fb} {
		if pl == nil {
			continue
		}
		e := &emitter{g: pl.Graph, p: pl, f64: pl.Graph.DType == ir.F64, names: gogen.Identifiers(pl.Graph)}
		if i == 1 {
			e.prefix = "fb_"
		}
		table, ks, cs, err := e.emit(m)
		if err != nil {
			return nil, err
		}
		kernels, consts = append(kernels, ks...), append(consts, cs...)
		if i == 0 {
			mod.Launch = table
		} else {
			mod.Backward = &table
		}
	}
	src, err := render(moduleView{Header: gogen.Header(m), Package: m.Package, DType: p.Graph.DType.String(), Consts: consts, Kernels: kernels})
	if err != nil {
		return nil, err
	}
	mod.PTX = src
	return mod, nil
}

// emit builds one kernel's entries, constants and launch table.
func (e *emitter) emit(m gogen.Meta) (runtime.LaunchTable, []kernelView, []constDecl, error) {
	g, p := e.g, e.p
	table := runtime.LaunchTable{Package: m.Package, DType: g.DType.String(), Target: Target, PTX: PTXFile}
	for _, in := range g.Inputs {
		dt := g.DType.String()
		switch in.Kind {
		case ir.Bool:
			dt = "bool"
		case ir.Index:
			dt = "int64"
		}
		table.Buffers = append(table.Buffers, runtime.Buffer{Name: "in/" + in.Name, Role: "input", DType: dt, Length: in.Shape.Numel(), Shape: in.Shape.Sizes()})
	}
	for _, o := range g.Outputs {
		role := "output"
		switch o.Role {
		case ir.Gradient:
			role = "gradient"
		case ir.Fault:
			role = "fault" // an output the driver must check: not 0 means the inputs are invalid
		}
		name := bufferName(&plan.Buffer{Name: o.Name, Output: o})
		table.Buffers = append(table.Buffers, runtime.Buffer{Name: name, Role: role, DType: g.DType.String(), Length: o.Node.Shape.Numel(), Shape: o.Node.Shape.Sizes()})
	}
	for _, s := range p.Scratch {
		table.Buffers = append(table.Buffers, runtime.Buffer{Name: "scratch/" + s.Name, Role: "scratch", DType: g.DType.String(), Length: s.Node.Shape.Numel(), Shape: s.Node.Shape.Sizes()})
	}
	var kernels []kernelView
	if faults := e.faultBuffers(&table); len(faults) > 0 {
		k := e.faultsInit(faults)
		kernels = append(kernels, view(k, 32, faultDoc(k, faults), e.names))
		table.Launches = append(table.Launches, runtime.Launch{Kernel: k.Name, Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, Params: k.Params})
	}
	for _, ps := range p.Passes {
		var k *passK
		switch rs := ps.Schedule.Row; {
		case rs != nil && rs.GPU.Fused && ps == ps.Row.Second:
			continue // run by the first's kernel
		case rs != nil && rs.GPU.Fused:
			k = e.rowKernel(ps.Row)
		default:
			var err error
			if k, err = e.passKernel(ps); err != nil {
				return table, nil, nil, err
			}
		}
		kernels = append(kernels, view(k.kernel, k.block, fmt.Sprintf("%s: pass %d over %s (lossgen explain); %s.", k.Name, ps.Index, ps.Domain, k.describe()), e.names))
		table.Launches = append(table.Launches, runtime.Launch{Kernel: k.Name, Grid: [3]int{k.grid, 1, 1}, Block: [3]int{k.block, 1, 1}, Params: k.Params})
		if mk := k.mergeKernel(); mk != nil {
			slots := 0
			for _, rk := range k.reds {
				if rk.block {
					slots = max(slots, rk.r.Shape.Numel())
				}
			}
			grid, block := plan.GridFor(slots)
			kernels = append(kernels, view(mk, block, fmt.Sprintf("%s: folds the %d block partials of pass %d's reductions, one thread per slot, blocks in order.", mk.Name, k.grid, ps.Index), e.names))
			table.Launches = append(table.Launches, runtime.Launch{Kernel: mk.Name, Grid: [3]int{grid, 1, 1}, Block: [3]int{block, 1, 1}, Params: mk.Params})
		}
		for _, pb := range k.partials {
			table.Buffers = append(table.Buffers, runtime.Buffer{Name: pb.name, Role: "scratch", DType: "float64", Length: pb.length, Shape: []int{pb.length}})
		}
	}
	var consts []constDecl
	for _, n := range g.Nodes {
		if n.Op != ir.OpConst || len(n.Shape) == 0 {
			continue
		}
		k := &kernel{f64: e.f64}
		var vals []string
		for _, v := range n.Value {
			vals = append(vals, k.imm(v))
		}
		consts = append(consts, constDecl{Doc: n.String(), Type: k.t(), Name: e.constName(n), Values: strings.Join(vals, ", "), Len: len(vals)})
	}
	return table, kernels, consts, nil
}

// moduleView is what templates/ptx/module.ptx.tmpl renders.
type moduleView struct {
	Header, Package, DType string
	Consts                 []constDecl
	Kernels                []kernelView
}

func render(v moduleView) ([]byte, error) {
	tmpl, err := templates.PTX()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	data := map[string]any{"Header": v.Header, "Package": v.Package, "DType": v.DType, "Target": Target, "Consts": v.Consts, "Kernels": v.Kernels}
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("ptxgen: %w", err)
	}
	return buf.Bytes(), nil
}

// view is what the template needs of kernel k, launched with block threads; names are the
// graph's node names (see paramIdents), nil for a kernel of no graph.
func view(k *kernel, block int, doc string, names map[int]string) kernelView {
	idents := paramIdents(k.Params, names)
	return kernelView{Doc: doc, Name: k.Name, Params: idents, Block: block, Regs: k.Regs, Shared: k.Shared, Text: k.text(idents)}
}

// Generate returns the backend's files: kernels.ptx, launch.json (and, with gradients,
// launch_backward.json) and ptx.go (which embeds the PTX and declares the launch tables as
// the variables Launch and LaunchBackward).
func Generate(p, fb *plan.Plan, m gogen.Meta) (map[string][]byte, error) {
	mod, err := Emit(p, fb, m)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{PTXFile: mod.PTX}
	tables := map[string]*runtime.LaunchTable{LaunchFile: &mod.Launch, LaunchBackwardFile: mod.Backward}
	for name, t := range tables {
		if t == nil {
			continue
		}
		marked := *t
		marked.Generated = gogen.Header(m)
		js, err := json.MarshalIndent(marked, "", "  ")
		if err != nil {
			return nil, err
		}
		files[name] = append(js, '\n')
	}
	goSrc, err := goFile(mod, m)
	if err != nil {
		return nil, err
	}
	files[GoFile] = goSrc
	return files, nil
}

// goFile emits ptx.go.
func goFile(mod *Module, m gogen.Meta) ([]byte, error) {
	f := jen.NewFile(m.Package)
	f.HeaderComment(gogen.Header(m))
	f.ImportName(gogen.RuntimePath, "runtime")
	f.Anon("embed")
	f.Comment("PTX is the CUDA PTX module of this package's kernels (kernels.ptx): load it with")
	f.Comment("cuModuleLoadData (append a NUL byte: it takes a C string) and run Launch's launches in")
	f.Comment("order (see lossgen's README).")
	f.Comment("")
	f.Comment("//go:embed " + PTXFile)
	f.Var().Id("PTX").String()
	f.Comment("Launch is the launch table of Forward's kernels in PTX (also written as " + LaunchFile + "):")
	f.Comment("the buffers to allocate (reusable across calls, no clearing needed) and the kernels to")
	f.Comment("launch in order with their grid, block and arguments (device pointers to the named buffers).")
	f.Var().Id("Launch").Op("=").Add(tableLit(mod.Launch))
	if mod.Backward != nil {
		f.Comment("LaunchBackward is ForwardBackward's launch table (also written as " + LaunchBackwardFile + "):")
		f.Comment("the same, computing the outputs and the gradients (grad/<input data name> buffers).")
		f.Var().Id("LaunchBackward").Op("=").Add(tableLit(*mod.Backward))
	}
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, err
	}
	// jennifer cannot place a directive right above a declaration: move the embed comment.
	src := strings.Replace(buf.String(), "// //go:embed "+PTXFile+"\n", "//go:embed "+PTXFile+"\n", 1)
	return []byte(src), nil
}

// tableLit is a launch table as a Go composite literal.
func tableLit(t runtime.LaunchTable) jen.Code {
	buffers := jen.Index().Qual(gogen.RuntimePath, "Buffer").ValuesFunc(func(g *jen.Group) {
		for _, b := range t.Buffers {
			d := jen.Dict{
				jen.Id("Name"): jen.Lit(b.Name), jen.Id("Role"): jen.Lit(b.Role), jen.Id("DType"): jen.Lit(b.DType),
				jen.Id("Length"): jen.Lit(b.Length), jen.Id("Shape"): jen.Index().Int().ValuesFunc(func(s *jen.Group) {
					for _, x := range b.Shape {
						s.Lit(x)
					}
				}),
			}
			if b.Input != "" {
				d[jen.Id("Input")], d[jen.Id("Size")] = jen.Lit(b.Input), jen.Lit(b.Size)
			}
			g.Values(d)
		}
	})
	launches := jen.Index().Qual(gogen.RuntimePath, "Launch").ValuesFunc(func(g *jen.Group) {
		for _, l := range t.Launches {
			g.Values(jen.Dict{
				jen.Id("Kernel"): jen.Lit(l.Kernel),
				jen.Id("Grid"):   jen.Index(jen.Lit(3)).Int().Values(jen.Lit(l.Grid[0]), jen.Lit(l.Grid[1]), jen.Lit(l.Grid[2])),
				jen.Id("Block"):  jen.Index(jen.Lit(3)).Int().Values(jen.Lit(l.Block[0]), jen.Lit(l.Block[1]), jen.Lit(l.Block[2])),
				jen.Id("Params"): jen.Index().String().ValuesFunc(func(s *jen.Group) {
					for _, p := range l.Params {
						s.Lit(p)
					}
				}),
			})
		}
	})
	return jen.Qual(gogen.RuntimePath, "LaunchTable").Values(jen.Dict{
		jen.Id("Package"): jen.Lit(t.Package), jen.Id("DType"): jen.Lit(t.DType), jen.Id("Target"): jen.Lit(t.Target),
		jen.Id("PTX"): jen.Lit(t.PTX), jen.Id("Buffers"): buffers, jen.Id("Launches"): launches,
	})
}
