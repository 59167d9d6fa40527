package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/asmgen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/spec"
)

// benchSizes are the default sizes: working sets in L1, in L2, past the last-level cache
// (about 9 MiB of the example) and well into memory (≥ 256 MiB), for a batch of rank 1 or 2.
var benchSizes = map[int][]map[int]int{
	1: {{0: 256}, {0: 4096}, {0: 1 << 18}, {0: 1 << 24}},
	2: {{0: 1, 1: 256}, {0: 16, 1: 256}, {0: 256, 1: 1024}, {0: 4096, 1: 4096}},
}

// benchHelp follows bench's flags in its usage: what the table holds.
const benchHelp = `
Each size's package is built in a throwaway module and its generated benchmarks run there
(go test -bench Forward): BenchmarkForward and BenchmarkForwardBackward of every backend,
each at 1 thread and at GOMAXPROCS (the sub-benchmarks set it themselves; $GOMAXPROCS
picks the second count). The table has a row per size, backend and call:
  NT ns/element  nanoseconds per batch element at N threads (median of -count runs)
  NT GB/s        bytes the call reads and writes (inputs, outputs, gradients) per second
  NT ×copy       the call's time over a copy() of as many bytes by N goroutines, measured
                 in the same process (1.00: at the copy limit; 2.00: twice a copy's time)
  NT/1T          speed-up of the most threads over one
  FB÷F           ForwardBackward's time over Forward's, at each thread count
  copy GB/s      the copy probe's bandwidth at each thread count
  vs go 1T       speed-up over the pure-Go kernel at one thread
-json prints the same numbers unrounded, one object per backend, call and thread count.
`

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := flags("bench", "[-sizes N=16,T=256;N=4096,T=4096] [-benchtime D] [-count N] [-backend B] [-without rowlocal,sink] [-json] SPEC", stderr)
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(stderr, benchHelp) }
	sizes := fs.String("sizes", "", "semicolon-separated dim settings to run (default: L1, L2, beyond-cache and ≥256 MiB working sets)")
	benchtime := fs.String("benchtime", "", "go test -benchtime (default: 1s, or 10x for working sets over 64 MiB)")
	count := fs.Int("count", 1, "go test -count: runs of each benchmark; the table shows their medians")
	backend := fs.String("backend", "", "measure only this backend (go or avx2); default: every backend the machine runs")
	asJSON := fs.Bool("json", false, "print the results as JSON instead of a table")
	without := fs.String("without", "", "comma-separated planner choices to turn off, to measure what they do: rowlocal (row-local fusion), sink (sinking results into later passes)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return badUsage(fs, stderr, "want one SPEC, got %d", fs.NArg())
	}
	if *count < 1 {
		return badUsage(fs, stderr, "-count %d: want at least 1", *count)
	}
	if !validBenchtime(*benchtime) {
		return badUsage(fs, stderr, "-benchtime %q: want a duration (1s, 500ms) or a count of runs (10x)", *benchtime)
	}
	if *backend != "" && *backend != "go" && *backend != "avx2" {
		return badUsage(fs, stderr, "-backend %q: want go or avx2", *backend)
	}
	opt, err := planOptions(*without)
	if err != nil {
		return badUsage(fs, stderr, "%v", err)
	}
	path := fs.Arg(0)
	c, err := gen.Compile(path)
	if err != nil {
		return err
	}
	warn(stderr, c.Spec)
	settings, err := parseSizes(*sizes, c.Graph.Batch)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		fs.Usage()
		return errUsage
	}
	// Every size is validated, as the spec's own, before any is measured; a default size
	// beyond the spec's limits (a large action dim times the largest batch) is skipped.
	var compiled []*gen.Compiled
	for _, dims := range settings {
		cs, err := gen.CompileDims(path, dims)
		var one *spec.Error
		var list spec.ErrorList
		if err != nil && *sizes == "" && (errors.As(err, &one) || errors.As(err, &list)) {
			fmt.Fprintf(stderr, "bench: skipping %v: %v\n", dims, err)
			continue
		}
		if err != nil && (errors.As(err, &one) || errors.As(err, &list)) {
			// The position is the spec's, the value -sizes': say so first.
			fmt.Fprintf(stderr, "bench: -sizes %s does not fit the spec:\n", dimsText(dims))
		}
		if err != nil {
			return err
		}
		if opt != (plan.Options{}) {
			if err := cs.Replan(opt); err != nil {
				return err
			}
		}
		compiled = append(compiled, cs)
	}
	pattern := "^BenchmarkForward"
	if *backend != "" {
		pattern += "/^" + *backend + "$"
	}
	done, err := scratchDir("bench", stderr)
	if err != nil {
		return err
	}
	defer done()
	var runs []benchRun
	for _, cs := range compiled {
		ws := workingSet(cs.Graph)
		bt := *benchtime
		if bt == "" {
			bt = "1s"
			if ws > 64<<20 {
				bt = "10x"
			}
		}
		m, err := runner.NewTestModule(cs)
		if err != nil {
			return err
		}
		out, err := m.Bench(pattern, bt, *count)
		m.Close()
		if err != nil {
			return err
		}
		res := parseBench(out)
		if len(res) == 0 {
			return fmt.Errorf("bench: no results for %s in the output of go test -bench %s:\n%s", dimsString(cs.Graph), pattern, out)
		}
		runs = append(runs, benchRun{Dims: dimsString(cs.Graph), WorkingSet: ws, Results: res})
		note := ""
		if *backend != "go" {
			note = wideNote(cs)
		}
		fmt.Fprintf(stderr, "bench: %s measured%s\n", dimsString(cs.Graph), note) // progress; the table comes at the end, aligned
	}
	if *asJSON {
		return writeBenchJSON(stdout, runs)
	}
	return writeBenchTable(stdout, runs)
}

// wideNote says, for a package whose AVX2 implementation runs 16-lane AVX-512 variants of
// some passes here, how many (the avx2 rows measure them; LOSSGEN_AVX512=0 turns them off).
func wideNote(c *gen.Compiled) string {
	n := len(asmgen.WidePasses(c.Plan, c.Backward))
	if n == 0 || !runtime.AVX512() {
		return ""
	}
	return fmt.Sprintf(" (avx2 ran the AVX-512 variants of %d passes of Forward and ForwardBackward; LOSSGEN_AVX512=0 measures without)", n)
}

// planOptions reads -without's list.
func planOptions(s string) (plan.Options, error) {
	var opt plan.Options
	if s == "" {
		return opt, nil
	}
	for _, w := range strings.Split(s, ",") {
		switch w = strings.TrimSpace(w); w {
		case "rowlocal":
			opt.NoRowLocal = true
		case "sink":
			opt.NoSink = true
		default:
			return opt, fmt.Errorf("-without %q: no planner choice %q; want a list of rowlocal, sink", s, w)
		}
	}
	return opt, nil
}

// parseSizes reads "N=16,T=256;N=4096,T=4096" into dim settings, or picks the defaults.
func parseSizes(s string, batch ir.Shape) ([]map[string]int, error) {
	var out []map[string]int
	if s == "" {
		presets, ok := benchSizes[len(batch)]
		if !ok {
			return []map[string]int{nil}, nil // the spec's own dims
		}
		for _, p := range presets {
			m := map[string]int{}
			for i, v := range p {
				m[batch[i].Name] = v
			}
			out = append(out, m)
		}
		return out, nil
	}
	for _, set := range strings.Split(s, ";") {
		dims, err := parseDimSizes(set)
		if err != nil {
			return nil, err
		}
		m := map[string]int{}
		for _, d := range dims {
			m[d.Name] = d.Size
		}
		out = append(out, m)
	}
	return out, nil
}

// workingSet is the bytes one Forward reads and writes.
func workingSet(g *ir.Graph) int {
	size := 4
	if g.DType == ir.F64 {
		size = 8
	}
	n := 0
	for _, in := range g.Inputs {
		k := size
		switch in.Kind {
		case ir.Bool:
			k = 1
		case ir.Index:
			k = 8
		}
		n += k * in.Shape.Numel()
	}
	for _, o := range g.Outputs {
		n += size * o.Node.Shape.Numel()
	}
	return n
}

func dimsString(g *ir.Graph) string {
	var parts []string
	for _, d := range g.Batch {
		parts = append(parts, fmt.Sprintf("%s=%d", d.Name, d.Size))
	}
	return strings.Join(parts, ",")
}

func bytesString(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// dimsText is a -sizes setting as written: NAME=SIZE pairs, by name.
func dimsText(dims map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(dims)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, dims[k]))
	}
	return strings.Join(parts, ",")
}

// validBenchtime reports whether s is what go test's -benchtime takes: a positive duration or
// a positive count followed by x; "" leaves bench its defaults.
func validBenchtime(s string) bool {
	if s == "" {
		return true
	}
	if n, ok := strings.CutSuffix(s, "x"); ok {
		k, err := strconv.Atoi(n)
		return err == nil && k > 0
	}
	d, err := time.ParseDuration(s)
	return err == nil && d > 0
}
