package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/ptxgen"
	"github.com/lossgen/lossgen/gen/runner"
	goldenw "github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/runtime/ptxsim"
)

// backends are the kernels eval can run besides the reference interpreter, with the build
// tags that select them: the pure-Go kernel, and the default build's dispatch (AVX2 where the
// CPU has AVX2 and FMA; eval says so when it does not).
// "ptx" is the package's PTX run by lossgen's simulator (runtime/ptxsim), in process: it
// shows what a GPU computes, bit for bit, without one.
var backends = []struct{ name, tags string }{
	{"go", "purego"},
	{"avx2", ""},
	{"ptx", ""},
}

// backendNames lists the backends in the order eval runs and prints them.
func backendNames() []string {
	var names []string
	for _, b := range backends {
		names = append(names, b.name)
	}
	return names
}

func cmdEval(args []string, stdout, stderr io.Writer) error {
	fs := flags("eval", "-spec SPEC [-dims N=16,T=256] -in DATA.npz [-out OUT.npz] [-backend ref|go|avx2|ptx|all] [-grad] [-keep]", stderr)
	specPath := fs.String("spec", "", "spec file (required)")
	dims := fs.String("dims", "", "resize the spec's dims, NAME=SIZE pairs (N=16,T=256), validated as if the spec declared them, as bench -sizes does")
	inPath := fs.String("in", "", "input .npz, arrays named by data key, e.g. next.reward (required)")
	outPath := fs.String("out", "", "write the selected backend's outputs here (with all: OUT.<backend>.npz each)")
	which := fs.String("backend", "all", "ref (the interpreter), go (the generated pure-Go kernel), avx2 (its AVX2 kernel), ptx (its PTX, simulated) or all")
	keep := fs.Bool("keep", false, "keep the temporary module the kernel is built in, and print its path")
	grad := fs.Bool("grad", false, "run ForwardBackward: also compute the gradients (grad.<input data name>) and compare them")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	switch {
	case *specPath == "":
		return badUsage(fs, stderr, "-spec SPEC is required")
	case *inPath == "":
		return badUsage(fs, stderr, "-in DATA.npz is required")
	case fs.NArg() != 0:
		return badUsage(fs, stderr, "unexpected arguments %q (the spec goes after -spec)", fs.Args())
	}
	if !*keep { // a kept module stays where the user was told it is
		done, err := scratchDir("eval", stderr)
		if err != nil {
			return err
		}
		defer done()
	}
	selected := map[string]bool{}
	switch *which {
	case "all":
		selected["ref"] = true
		for _, b := range backends {
			selected[b.name] = true
		}
	case "ref", "go", "avx2", "ptx":
		selected[*which] = true
	default:
		fmt.Fprintf(stderr, "eval: unknown backend %q (allowed: all, avx2, go, ptx, ref)\n", *which)
		fs.Usage()
		return errUsage
	}
	if *outPath != "" {
		if sameFile(*outPath, *inPath) {
			fmt.Fprintf(stderr, "eval: -out %s is the input file; choose another name\n", *outPath)
			return errUsage
		}
		for name := range selected {
			if p := outFile(*outPath, *which, name); sameFile(p, *inPath) {
				fmt.Fprintf(stderr, "eval: -out %s would write %s, the input file; choose another name\n", *outPath, p)
				return errUsage
			}
		}
		if fi, err := os.Stat(*outPath); err == nil && fi.IsDir() {
			fmt.Fprintf(stderr, "eval: -out %s is a directory; give a file name such as %s\n", *outPath, filepath.Join(*outPath, "out.npz"))
			return errUsage
		}
		if fi, err := os.Stat(filepath.Dir(*outPath)); err != nil || !fi.IsDir() {
			fmt.Fprintf(stderr, "eval: -out %s: directory %s does not exist\n", *outPath, filepath.Dir(*outPath))
			return errUsage
		}
	}

	var resize map[string]int
	if *dims != "" {
		ds, err := parseDimSizes(*dims)
		if err != nil {
			return badUsage(fs, stderr, "-dims: %v", err)
		}
		resize = map[string]int{}
		for _, d := range ds {
			resize[d.Name] = d.Size
		}
	}
	c, err := gen.CompileDims(*specPath, resize)
	if err != nil {
		return err
	}
	warn(stderr, c.Spec)
	graph := c.Graph
	if *grad {
		if c.Backward == nil {
			return fmt.Errorf("eval: -grad: %s has no gradients (no loss term reads a differentiable input)", *specPath)
		}
		graph = c.Backward.Graph
	}
	inputs, ignored, narrowed, err := evalInputs(c.Graph, *inPath)
	if err != nil {
		return err
	}
	if len(narrowed) > 0 {
		fmt.Fprintf(stderr, "eval: %s: narrowed float64 arrays to float32 as the spec's dtype: %s\n", *inPath, strings.Join(narrowed, ", "))
	}
	if len(ignored) > 0 {
		fmt.Fprintf(stderr, "eval: note: %s also holds %s, which this spec does not read\n", *inPath, strings.Join(ignored, ", "))
	}
	if w := paddingWithoutDone(c, inputs); w != "" {
		fmt.Fprintf(stderr, "eval: warning: %s\n", w)
	}
	step := func(format string, args ...any) { fmt.Fprintf(stderr, "eval: "+format+"...\n", args...) }

	// Go and AVX2 build the package in a module that points at lossgen's source: without
	// one, the interpreter and the PTX simulator (in process) still run.
	var unbuilt error
	if selected["go"] || selected["avx2"] {
		if _, err := runner.RuntimeRoot(); err != nil {
			fmt.Fprintf(stderr, "eval: the go and avx2 backends cannot run: %v; showing the others\n", err)
			unbuilt = errors.New("eval: the go and avx2 backends did not run: lossgen's runtime module was not found (see above)")
			delete(selected, "go")
			delete(selected, "avx2")
		}
	}

	// The interpreter always runs: it is what every backend is measured against.
	step("computing the reference outputs with the interpreter (float64)")
	ref := golden.Case{Name: "eval", Inputs: inputs}
	if err := cases.Want(graph, &ref); err != nil {
		return rejected(c, inputs, selected, *grad, *keep, stderr, err)
	}
	results := map[string]map[string]golden.Array{"ref": ref.Want}
	for _, b := range backends {
		if !selected[b.name] {
			continue
		}
		if b.name == "ptx" {
			step("running the PTX kernels in lossgen's simulator")
			out, err := runPTX(c, inputs, *grad)
			if err != nil {
				return fmt.Errorf("eval: backend ptx: %w", err)
			}
			results["ptx"] = out
			continue
		}
		step("building and running the %s kernel (go build -tags %q in a temporary module)", b.name, b.tags)
		out, impl, err := runKernel(c, inputs, b.tags, *keep, *grad, stderr)
		if err != nil {
			return fmt.Errorf("eval: backend %s: %w", b.name, err)
		}
		if impl != b.name {
			fmt.Fprintf(stderr, "eval: backend %s is not available on this machine (the build runs %s); skipped\n", b.name, impl)
			delete(selected, b.name)
			continue
		}
		results[b.name] = out
	}
	rows := []string{}
	for _, b := range append([]string{"ref"}, backendNames()...) {
		if _, ran := results[b]; ran && selected[b] { // a skipped backend has no results
			rows = append(rows, b)
		}
	}
	verdict, failed := compareBackends(stdout, graph, inputs, results, rows)

	if *outPath != "" {
		for _, name := range rows {
			out := results[name]
			p := outFile(*outPath, *which, name) // none is the input: checked before running
			b, err := goldenw.EncodeNPZ(out)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			// Whole or not at all: a full disk leaves the old file (or none), never a part. A
			// FIFO, device or symlink is written through, as named.
			if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
				err = os.WriteFile(p, b, 0o644)
				if err != nil {
					return err
				}
			} else if err := writeFile(p, b, true); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s\n", p)
		}
	}
	if failed == nil && unbuilt != nil { // asked for and not run: not an ok
		verdict = "verdict: FAIL: the go and avx2 backends did not run (lossgen's runtime module was not found; see above); " + strings.TrimPrefix(verdict, "verdict: ok: ")
	}
	fmt.Fprintln(stdout, verdict)
	if err := faults(graph, ref.Want); err != nil {
		return err
	}
	if failed == nil && unbuilt != nil {
		return unbuilt
	}
	return failed
}

// rejected is eval's error for inputs the interpreter rejects (the shapes are checked, so an
// index input outside its axis: refErr): the selected backends run too, each to report the
// error it gives — Forward's *runtime.IndexError, the PTX fault buffer's as the simulator
// reads it — and a backend that accepts the inputs is named as such.
func rejected(c *gen.Compiled, inputs map[string]golden.Array, selected map[string]bool, grad, keep bool, stderr io.Writer, refErr error) error {
	msgs := []string{"ref: " + refErr.Error()}
	for _, b := range backends {
		if !selected[b.name] {
			continue
		}
		var err error
		if b.name == "ptx" {
			_, err = runPTX(c, inputs, grad)
		} else {
			_, _, err = runKernel(c, inputs, b.tags, keep, grad, stderr)
		}
		if err == nil {
			err = errors.New("accepted them")
		}
		msgs = append(msgs, b.name+": "+err.Error())
	}
	return fmt.Errorf("eval: the kernels reject the inputs:\n  %s", strings.Join(msgs, "\n  "))
}

// outFile is where eval -out writes backend name's results: the -out path itself, or with
// -backend all one file per backend, <out>.<backend>.npz.
func outFile(out, which, name string) string {
	if which == "all" {
		return strings.TrimSuffix(out, ".npz") + "." + name + ".npz"
	}
	return out
}

// runPTX runs the spec's PTX, as its launch table drives it (ForwardBackward's with grad),
// in the simulator.
func runPTX(c *gen.Compiled, inputs map[string]golden.Array, grad bool) (map[string]golden.Array, error) {
	mod, err := ptxgen.Emit(c.Plan, c.Backward, gogen.Meta{Package: c.Spec.Package, GenVersion: runtime.GenVersion})
	if err != nil {
		return nil, err
	}
	table := mod.Launch
	if grad {
		table = *mod.Backward
	}
	out, _, err := ptxsim.RunTable(string(mod.PTX), table, inputs) // an index fault is a *runtime.IndexError
	return out, err
}

// sameFile reports whether two paths name the same existing file (or the same path).
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// evalInputs reads, from the .npz at file, the graph's inputs and converts them, reporting
// every problem. It reads only those arrays, each bounded by the size its shape in the graph
// implies (so memory follows the spec's shapes, whatever the file's headers claim), and
// returns the names of the arrays it did not read, sorted (those are never decompressed),
// and of the float64 arrays it narrowed to a float32 spec's dtype (cases.Convert).
// A trailing singleton dim (TorchRL's [*batch, 1] layout) is accepted and dropped.
func evalInputs(g *ir.Graph, file string) (inputs map[string]golden.Array, ignored, narrowed []string, err error) {
	z, err := golden.OpenNPZ(file)
	if err != nil {
		return nil, nil, nil, err
	}
	defer z.Close()
	inputs = map[string]golden.Array{}
	var problems []string
	// NPZ errors read "FILE: NAME: ..."; here the file is named once, at the top.
	problem := func(err error) { problems = append(problems, "array "+strings.TrimPrefix(err.Error(), file+": ")) }
	have := z.Names()
	for _, in := range g.Inputs {
		if in.State && !slices.Contains(have, in.Name) {
			// Kernel state (KLPEN's β) starts where the spec says unless the file gives it.
			inputs[in.Name] = cases.Stored(g.DType, in, []float64{in.Init})
			continue
		}
		if !slices.Contains(have, in.Name) {
			problems = append(problems, fmt.Sprintf("no array %q (%s)", in.Name, in.Doc))
			continue
		}
		h, err := z.Header(in.Name)
		if err != nil {
			problem(err)
			continue
		}
		want := in.Shape.Sizes()
		shape := h.Shape
		if len(shape) == len(want)+1 && shape[len(shape)-1] == 1 {
			shape = shape[:len(want)]
		}
		if !slices.Equal(shape, want) {
			problems = append(problems, fmt.Sprintf("array %q has shape %v, want %v %v", in.Name, h.Shape, want, in.Shape.Names()))
			continue
		}
		a, err := z.Read(in.Name, in.Shape.Numel())
		if err != nil {
			problem(err)
			continue
		}
		conv, err := cases.Convert(g.DType, in, a)
		if err != nil {
			msg := "array " + err.Error()
			if h.DType() != a.DType() { // read widened: name the file's own dtype
				msg += fmt.Sprintf(" (the file's dtype: %s)", h.Descr)
			}
			problems = append(problems, msg)
			continue
		}
		if a.DType() == "float64" && conv.DType() == "float32" {
			narrowed = append(narrowed, in.Name)
		}
		inputs[in.Name] = conv
	}
	if len(problems) > 0 {
		return nil, nil, nil, fmt.Errorf("eval: %s:\n  %s\n(arrays in the file: %s)", file, strings.Join(problems, "\n  "), strings.Join(have, ", "))
	}
	for _, name := range have {
		if _, used := inputs[name]; !used {
			ignored = append(ignored, name)
		}
	}
	slices.Sort(narrowed)
	return inputs, ignored, narrowed, nil
}

// runKernel builds the generated package with the given tags and runs it on the inputs.
// It returns the outputs and the name of the implementation that ran.
func runKernel(c *gen.Compiled, inputs map[string]golden.Array, tags string, keep, grad bool, stderr io.Writer) (map[string]golden.Array, string, error) {
	m, err := runner.NewModule(c)
	if err != nil {
		return nil, "", err
	}
	if keep {
		fmt.Fprintln(stderr, "eval: temporary module kept in", m.Dir)
	} else {
		defer m.Close()
	}
	bin, err := m.Build(tags)
	if err != nil {
		return nil, "", err
	}
	impl, err := m.Impl(bin)
	if err != nil {
		return nil, "", err
	}
	run := m.Run
	if grad {
		run = m.RunBackward
	}
	out, err := run(bin, inputs)
	var de *runner.DataError
	if errors.As(err, &de) {
		// The kernel reported the inputs' fault and wrote every output: they are compared
		// like the others, and cmdEval reports the fault from the interpreter's outputs.
		err = nil
	}
	return out, impl, err
}

// faults reports the fault outputs (ir.Fault) that are not 0 in the interpreter's results:
// the inputs break a precondition TorchRL checks at run time, so eval fails after printing
// the comparison.
func faults(g *ir.Graph, ref map[string]golden.Array) error {
	var msgs []string
	for _, o := range g.Outputs {
		if o.Role != ir.Fault {
			continue
		}
		if v := ref[o.Name].Float64s(); len(v) == 1 && v[0] != 0 {
			msgs = append(msgs, fmt.Sprintf("%s = %v: %s", o.Name, v[0], o.Doc))
		}
	}
	if msgs == nil {
		return nil
	}
	return fmt.Errorf("eval: the inputs break a precondition of the kernel (Forward returns a *runtime.DataError): %s", strings.Join(msgs, "; "))
}

// judgement is one output of one backend measured against the interpreter's.
type judgement struct {
	backend, output string
	n               int         // elements of the interpreter's output
	diff            golden.Diff // under the package test's tolerance; Bad counts non-finite mismatches too
	problem         string      // "missing" or "N elements, want M": every element counts as bad
}

// judge measures output o of backend b against the interpreter's under the tolerance the
// generated package's own test uses for it (gen.Tolerance; a gradient's at the interpreter's
// gradient scale).
func judge(g *ir.Graph, o *ir.Output, b string, masked []bool, results map[string]map[string]golden.Array) judgement {
	want := results["ref"][o.Name].Float64s()
	j := judgement{backend: b, output: o.Name, n: len(want)}
	got, ok := results[b][o.Name]
	switch {
	case !ok || got.Data == nil:
		j.problem = "missing"
	case got.Len() != len(want):
		j.problem = fmt.Sprintf("%d elements, want %d", got.Len(), len(want))
	default:
		gv := got.Float64s()
		// An estimator's or a transform's own output at padding is the padding's (§11.18).
		// An estimator's is a scan of garbage there, which the backends may round (and
		// overflow) each in its own order (the AVX2 scan composes 8 steps), so those elements
		// are not judged, and their size sets no tolerance; a transform's is elementwise, the
		// same formula on every backend, and is judged (a non-finite value is no failure).
		padded := o.Role == ir.Estimate || o.Role == ir.Transformed
		if o.Role == ir.Estimate && masked != nil {
			want, gv = slices.Clone(want), slices.Clone(gv)
			for i := range masked {
				if masked[i] && i < len(gv) {
					want[i], gv[i] = 0, 0
				}
			}
		}
		j.diff = golden.Compare(want, gv, gen.OutputTolerance(g.DType, o).At(gen.GradScale(g, results["ref"])))
		// Padding reaches no loss term, metric, gradient or state (SEMANTICS.md §11.16): a
		// NaN or infinity at a masked element of one is a failure even where the interpreter
		// has one too (Compare takes equal non-finite values as agreeing).
		for i := range masked {
			if !padded && masked[i] && i < len(gv) && !isFinite(gv[i]) && !isFinite(want[i]) {
				j.diff.Bad++
			}
		}
		return j
	}
	j.diff = golden.Diff{MaxAbs: math.Inf(1), MaxRel: math.Inf(1), MaxNorm: math.Inf(1), Bad: len(want), First: 0}
	return j
}

// compareBackends prints, for every output, the rows of the backends named in rows (in
// that order; "ref" is the interpreter) with each backend's max abs and rel difference from
// the interpreter and its count of elements out of the package test's tolerance. It returns
// the verdict line, and an error when any output of any backend is out of tolerance.
func compareBackends(w io.Writer, g *ir.Graph, inputs map[string]golden.Array, results map[string]map[string]golden.Array, rows []string) (verdict string, err error) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "output\tshape\tbackend\tvalue\tmax abs diff\tmax rel diff\tout of tol")
	var judged, bad []judgement
	mask := padMask(g, inputs)
	for _, o := range g.Outputs {
		name, shape := o.Name, fmt.Sprint(o.Node.Shape.Sizes())
		for _, b := range rows {
			value, abs, rel, count := "", "", "", ""
			if b == "ref" {
				value = summarize(results["ref"][o.Name].Float64s())
			} else {
				j := judge(g, o, b, maskedElements(g, o.Node.Shape, mask), results)
				judged = append(judged, j)
				if j.diff.Bad > 0 {
					bad = append(bad, j)
				}
				value = j.problem
				if value == "" {
					value = summarize(results[b][o.Name].Float64s())
				}
				abs, rel, count = fmt.Sprintf("%.3g", j.diff.MaxAbs), fmt.Sprintf("%.3g", j.diff.MaxRel), fmt.Sprint(j.diff.Bad)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, shape, b, value, abs, rel, count)
			name, shape = "", ""
		}
	}
	tw.Flush()
	var names []string
	for _, b := range rows {
		if b != "ref" {
			names = append(names, b)
		}
	}
	switch {
	case len(judged) == 0:
		return "verdict: ok: only the interpreter ran; no backend to judge", nil
	case len(bad) == 0:
		return fmt.Sprintf("verdict: ok: every output of %s within the package test's tolerances", strings.Join(names, ", ")), nil
	}
	var what []string
	for _, j := range bad {
		detail := fmt.Sprintf("%d of %d elements", j.diff.Bad, j.n)
		if j.problem != "" {
			detail = j.problem
		}
		what = append(what, fmt.Sprintf("%s %s (%s)", j.backend, j.output, detail))
	}
	return fmt.Sprintf("verdict: FAIL: %d %s out of tolerance: %s", len(bad), plural(len(bad), "output"), strings.Join(what, ", ")),
		fmt.Errorf("eval: %d %s out of the package test's tolerances", len(bad), plural(len(bad), "output"))
}

// paddingWithoutDone checks the data of a spec whose estimator runs before a loss with a
// mask: the estimator runs on unmasked data (SEMANTICS.md §11.18), so a valid step followed
// by padding along time needs done set there, or the padding after it (NaN, ±inf, garbage)
// reaches the valid steps. It says how many such steps the data has, and the first; "" when
// none (or the spec has no estimator, mask or done input).
func paddingWithoutDone(c *gen.Compiled, inputs map[string]golden.Array) string {
	s, g := c.Spec, c.Graph
	if s.Estimator == nil {
		return ""
	}
	var mask, done []float64
	doneName := ""
	for _, in := range g.Inputs {
		if !in.Shape.Equal(g.Batch) {
			continue
		}
		switch in.Key {
		case "mask":
			mask = inputs[in.Name].Float64s()
		case "done":
			done, doneName = inputs[in.Name].Float64s(), in.Name
		}
	}
	n := g.Batch.Numel()
	if len(mask) != n || len(done) != n {
		return ""
	}
	time := lower.TimeDim(s.Estimator, g.Batch)
	ti := g.Batch.Index(time)
	if ti < 0 {
		return ""
	}
	stride, size := g.Batch.Strides()[ti], g.Batch[ti].Size
	count, first := 0, -1
	for i := range n {
		if (i/stride)%size == size-1 || mask[i] == 0 || mask[i+stride] != 0 || done[i] != 0 {
			continue
		}
		if count++; first < 0 {
			first = i
		}
	}
	if count == 0 {
		return ""
	}
	idx := make([]int, len(g.Batch))
	for d, st := range g.Batch.Strides() {
		idx[d] = first / st % g.Batch[d].Size
	}
	return fmt.Sprintf("%d valid %s followed along %s by padding with %s false there (the first at %v): the estimator runs on unmasked data, so the padding after them reaches the valid steps (NaN or ±inf there makes them NaN); set done at each sequence's last valid step (docs/SEMANTICS.md §11.18)",
		count, plural(count, "step"), time, doneName, idx)
}

// padMask is the loss's mask (keys.mask) over the batch, as 0s and 1s, for judging padding:
// nil without a mask, or when a valid (unmasked) element of a float input is NaN or
// infinite: then a non-finite value at padding may come from valid data (a scan carries it
// back through time), as the interpreter's own output shows.
func padMask(g *ir.Graph, inputs map[string]golden.Array) []float64 {
	var mask []float64
	for _, in := range g.Inputs {
		if in.Key == "mask" && in.Shape.Equal(g.Batch) {
			mask = inputs[in.Name].Float64s()
		}
	}
	if mask == nil || len(mask) != g.Batch.Numel() || nonFiniteValid(g, mask, inputs) {
		return nil
	}
	return mask
}

// maskedElements marks the elements of a tensor of shape that lie on a false element of
// mask (padMask's): nil without one, or for a tensor that is not per batch element.
func maskedElements(g *ir.Graph, shape ir.Shape, mask []float64) []bool {
	idx := shape.SubIndex(g.Batch)
	if mask == nil || idx == nil {
		return nil
	}
	out := make([]bool, len(idx))
	for i, m := range idx {
		out[i] = mask[m] == 0
	}
	return out
}

// nonFiniteValid reports whether a float input holds a NaN or infinity at a valid element
// (anywhere, for an input that is not per batch element).
func nonFiniteValid(g *ir.Graph, mask []float64, inputs map[string]golden.Array) bool {
	for _, in := range g.Inputs {
		a, ok := inputs[in.Name]
		if !ok || in.Kind != ir.Float || a.Data == nil {
			continue
		}
		v := a.Float64s()
		idx := in.Shape.SubIndex(g.Batch)
		for i, x := range v {
			if !isFinite(x) && (idx == nil || i >= len(idx) || mask[idx[i]] != 0) {
				return true
			}
		}
	}
	return false
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// summarize shows a scalar in full and a tensor as its mean and range (the range over the
// values that are not NaN, whose count it adds: a NaN makes the mean NaN).
func summarize(x []float64) string {
	if len(x) == 1 {
		return fmt.Sprintf("%.10g", x[0])
	}
	lo, hi, s, nans := math.Inf(1), math.Inf(-1), 0.0, 0
	for _, v := range x {
		if math.IsNaN(v) {
			nans++
		} else {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		s += v
	}
	if nans == len(x) {
		return fmt.Sprintf("all %d NaN", nans)
	}
	out := fmt.Sprintf("mean %.6g in [%.6g, %.6g]", s/float64(len(x)), lo, hi)
	if nans > 0 {
		out += fmt.Sprintf(", %d NaN", nans)
	}
	return out
}
