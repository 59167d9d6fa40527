// Package gen runs lossgen's pipeline for one spec — parse, lower to IR, plan, emit — and is
// the one place that writes generated files: all of a package's files are produced in
// memory first, and Write replaces them together or not at all.
package gen

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/lossgen/lossgen/gen/asmgen"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/passes"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/gen/ptxgen"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/spec"
)

// Compiled is a spec taken through lowering and planning.
type Compiled struct {
	Spec  *spec.Spec
	Graph *ir.Graph  // Forward's graph
	Plan  *plan.Plan // Forward's plan
	// Backward is ForwardBackward's plan: the forward graph with the autodiff pass's gradient
	// outputs (Backward.Graph). nil when no loss term reads a differentiable input.
	Backward *plan.Plan
	Hypers   []lower.Hyper // the hyper-parameters as the kernel uses them
}

// Reference is the graph the golden cases are computed from: ForwardBackward's when the
// package has gradients (its outputs are Forward's and the gradients), else Forward's.
func (c *Compiled) Reference() *ir.Graph {
	if c.Backward != nil {
		return c.Backward.Graph
	}
	return c.Graph
}

// Compile parses, validates, lowers and plans the spec at path. Errors carry file:line:col.
func Compile(path string) (*Compiled, error) { return CompileDims(path, nil) }

// CompileDims is Compile with some dims resized (lossgen bench runs a spec at several
// sizes). The spec is validated at the new sizes, exactly as if it declared them.
func CompileDims(path string, dims map[string]int) (_ *Compiled, err error) {
	defer catch(path, &err)
	src, err := spec.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := spec.ParseResized(path, src, lower.Registry(), dims)
	if err != nil {
		return nil, err
	}
	return compileSpec(path, s)
}

// CompileSource is Compile on a spec held in memory; path names it in errors and generated
// headers (the fuzz test uses it).
func CompileSource(path string, src []byte) (_ *Compiled, err error) {
	defer catch(path, &err)
	s, err := spec.Parse(path, src, lower.Registry())
	if err != nil {
		return nil, err
	}
	return compileSpec(path, s)
}

// compileSpec lowers and plans a parsed spec.
func compileSpec(path string, s *spec.Spec) (*Compiled, error) {
	g, hypers, err := lower.Lower(s)
	if err != nil {
		return nil, err
	}
	if err := checkFieldNames(s, g); err != nil {
		return nil, err
	}
	if err := checkLimits(s, g); err != nil {
		return nil, err
	}
	c, err := CompileGraph(s, g)
	if err != nil {
		return nil, err
	}
	if c.Backward != nil {
		if err := checkLimits(s, c.Backward.Graph); err != nil {
			return nil, err
		}
	}
	// Every backend must generate a spec that compiles: a pass the PTX backend cannot map yet
	// is the spec's batch's limit, reported there rather than when emitting.
	for _, p := range []*plan.Plan{c.Plan, c.Backward} {
		if p == nil {
			continue
		}
		var um *ptxgen.UnmappedError
		if err := ptxgen.Check(p); errors.As(err, &um) {
			return nil, &spec.Error{Pos: s.PosOf("batch"), Msg: fmt.Sprintf("batch: [%s]: the PTX kernels cannot run this batch yet: pass %d computes a %s over %s that %s (README, PTX: \"Not mapped yet\"); merge two of its dims into one", strings.Join(s.Batch, ", "), um.Pass, um.Node.Op, strings.Join(um.Node.Axes, ", "), um.Reason)}
		} else if err != nil {
			return nil, err
		}
	}
	c.Hypers = hypers
	return c, nil
}

// CompileGraph runs the IR passes on a lowered graph and plans it. Tests use it for graphs
// built by hand (s then needs only File and Package).
func CompileGraph(s *spec.Spec, g *ir.Graph) (_ *Compiled, err error) {
	defer catch(s.File, &err)
	g, fb, err := passes.Compile(g, hasGradients(g))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	p, err := plan.Build(g)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	c := &Compiled{Spec: s, Graph: g, Plan: p}
	if fb != nil {
		if c.Backward, err = plan.Build(fb); err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
	}
	return c, nil
}

// Replan rebuilds c's plans with the planner choices opt turns off (lossgen bench -without,
// gen's TestPlanChoicesAB): the same computation, scheduled differently.
func (c *Compiled) Replan(opt plan.Options) error {
	p, err := plan.BuildOptions(c.Plan.Graph, opt)
	if err != nil {
		return err
	}
	c.Plan = p
	if c.Backward != nil {
		if c.Backward, err = plan.BuildOptions(c.Backward.Graph, opt); err != nil {
			return err
		}
	}
	return nil
}

// hasGradients reports whether g has a loss term and a differentiable input: what
// ForwardBackward needs.
func hasGradients(g *ir.Graph) bool {
	diff := false
	for _, in := range g.Inputs {
		diff = diff || in.Differentiable
	}
	return hasLossTerms(g) && diff
}

// checkFieldNames reports, at the spec key responsible, two inputs or two outputs whose
// names become the same Go field (gogen.FieldName: "a_b" and "a.b" are both AB).
func checkFieldNames(s *spec.Spec, g *ir.Graph) error {
	type named struct{ name, key string }
	check := func(what string, xs []named) error {
		by := map[string]named{}
		for _, x := range xs {
			f := gogen.FieldName(x.name)
			if f == "Set" || f == "Get" || (f == "State" && what == "inputs") { // Inputs.Set and Outputs.Get are methods, Inputs.State the kernel state; only a renamed key gets here
				return &spec.Error{Pos: s.PosOf("keys." + x.key), Msg: fmt.Sprintf("keys.%s: %q would become the Go field %s, which the generated Inputs and Outputs already have; choose another name", x.key, x.name, f)}
			}
			if o, dup := by[f]; dup {
				key := x.key
				if key == "" || !s.KeyWritten(key) { // point at the renaming the user wrote
					key = o.key
				}
				return &spec.Error{Pos: s.PosOf("keys." + key), Msg: fmt.Sprintf("keys.%s: %s %q and %q both become the Go field %s; rename one", key, what, o.name, x.name, f)}
			}
			by[f] = x
		}
		return nil
	}
	var ins, outs []named
	for _, in := range g.Inputs {
		ins = append(ins, named{in.Name, in.Key})
	}
	renamed := map[string]string{} // output name -> the logical key a stage wrote it under
	for k, data := range s.Keys {
		if data != nil && s.KeyWritten(k) {
			renamed[spec.DataName(data)] = k
		}
	}
	for _, o := range g.Outputs {
		key := ""
		if o.Role == ir.Estimate || o.Role == ir.Transformed {
			key = renamed[o.Name]
		}
		outs = append(outs, named{o.Name, key})
	}
	if err := check("inputs", ins); err != nil {
		return err
	}
	return check("outputs", outs)
}

// Options controls what Generate emits.
type Options struct {
	// OutDir is where the package will be written; file headers name the spec relative to it,
	// so the bytes do not depend on the working directory.
	OutDir string
	// GoldenDir, when set, is the directory of the package's golden cases; the emitted test
	// loads them (by a path relative to OutDir).
	GoldenDir string
	// Progress, when set, is told of each step that may take over a second (one line, such
	// as "simulating the forward PTX whole once ..."), for a command to show on stderr.
	Progress func(step string)
}

// progressOf is opts.Progress, or a func that drops the steps.
func progressOf(opts Options) func(string) {
	if opts.Progress != nil {
		return opts.Progress
	}
	return func(string) {}
}

// Generate produces every file of the package for the spec at specPath.
func Generate(specPath string, opts Options) (_ *Compiled, _ map[string][]byte, err error) {
	defer catch(specPath, &err)
	c, err := Compile(specPath)
	if err != nil {
		return nil, nil, err
	}
	files, err := Emit(c, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", specPath, err)
	}
	return c, files, nil
}

// Emit produces every file of the package for a compiled spec. c.Spec needs only File and
// Package when the graph was built by hand (tests do).
func Emit(c *Compiled, opts Options) (_ map[string][]byte, err error) {
	defer catch(specFile(c), &err)
	rel, err := relSlash(or(opts.OutDir, "."), c.Spec.File)
	if err != nil {
		return nil, err
	}
	// The spec path goes into every file's first-line comment and the golden path into a Go
	// string: keep both to characters that need no escaping there.
	for _, p := range []string{rel, opts.GoldenDir} {
		if strings.ContainsAny(p, "\"`\\\n\r\t") || strings.ContainsFunc(p, unicode.IsControl) {
			return nil, fmt.Errorf("path %q holds a quote, backslash or control character, which lossgen does not write into generated files; rename it", p)
		}
	}
	m := gogen.Meta{
		Package:    c.Spec.Package,
		SpecFile:   rel,
		GenVersion: runtime.GenVersion,
		Summary:    summary(c.Spec, c.Hypers),
		Params:     params(c.Spec),
		NoGolden:   opts.GoldenDir == "",
		// The doc comments cite SEMANTICS.md sections; a downstream module needs the address.
		SemanticsURL: SemanticsURL(),
	}
	files, err := gogen.Generate(c.Plan, c.Backward, m)
	if err != nil {
		return nil, err
	}
	goldenRel := ""
	if opts.GoldenDir != "" {
		if goldenRel, err = relSlash(or(opts.OutDir, "."), opts.GoldenDir); err != nil {
			return nil, err
		}
	}
	test, err := testFile(c, m, goldenRel)
	if err != nil {
		return nil, err
	}
	files[c.Spec.Package+"_test.go"] = test
	avx, err := asmgen.Generate(c.Plan, c.Backward, m)
	if err != nil {
		return nil, err
	}
	for name, src := range avx {
		files[name] = src
	}
	ptx, err := ptxgen.Generate(c.Plan, c.Backward, m)
	if err != nil {
		return nil, err
	}
	for name, src := range ptx {
		files[name] = src
	}
	if goldenRel != "" {
		st, err := ptxTestFile(c, m, progressOf(opts))
		if err != nil {
			return nil, err
		}
		files[ptxSimTestName] = st
	}
	vt, err := vmathTestFile(c, m)
	if err != nil {
		return nil, err
	}
	files[vmathTestName] = vt
	ex, err := exampleFile(c, m)
	if err != nil {
		return nil, err
	}
	files[exampleName] = ex
	large := c.Graph.Batch.Numel() > LargeBatch
	asmChunks := asmgen.ChunkVars(c.Plan, c.Backward)
	if len(asmChunks) > 0 {
		ct, err := render("chunks_test.go.tmpl", map[string]any{"Header": gogen.Header(m), "Package": m.Package, "ChunkVars": asmChunks, "Large": large})
		if err != nil {
			return nil, err
		}
		files[chunksTestName] = ct
	}
	if wide := asmgen.WidePasses(c.Plan, c.Backward); len(wide) > 0 {
		wt, err := render("avx512_test.go.tmpl", map[string]any{"Header": gogen.Header(m), "Package": m.Package,
			"Passes": strings.Join(wide, ", "), "Grads": c.Backward != nil, "Large": large, "Chunked": len(asmChunks) > 0})
		if err != nil {
			return nil, err
		}
		files[avx512TestName] = wt
	}
	if vars := gogen.ChunkVars(c.Plan, c.Backward); len(vars) > 0 {
		ct, err := render("gochunks_test.go.tmpl", map[string]any{"Header": gogen.Header(m), "Package": m.Package, "ChunkVars": vars, "Large": large})
		if err != nil {
			return nil, err
		}
		files[goChunksTestName] = ct
	}
	// Doc comments built from spec text run long: wrap every file's at gogen.CommentWidth.
	for name, src := range files {
		switch filepath.Ext(name) {
		case ".go":
			files[name] = gogen.WrapComments(src)
		case ".ptx":
			files[name] = gogen.WrapLineComments(src)
		}
	}
	return files, nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// relSlash is target relative to base, with forward slashes.
func relSlash(base, target string) (string, error) {
	ab, err := filepath.Abs(base)
	if err != nil {
		return "", err
	}
	at, err := filepath.Abs(target)
	if err != nil {
		return "", err
	}
	r, err := filepath.Rel(ab, at)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(r), nil
}
