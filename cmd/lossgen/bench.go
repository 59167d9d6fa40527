package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/spec"
)

// benchSizes are the default sizes: working sets in L1, in L2, past the last-level cache
// (about 9 MiB of the example) and well into memory (≥ 256 MiB), for a batch of rank 1 or 2.
var benchSizes = map[int][]map[int]int{
	1: {{0: 256}, {0: 4096}, {0: 1 << 18}, {0: 1 << 24}},
	2: {{0: 1, 1: 256}, {0: 16, 1: 256}, {0: 256, 1: 1024}, {0: 4096, 1: 4096}},
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := flags("bench", "[-sizes N=16,T=256;N=4096,T=4096] [-benchtime D] SPEC", stderr)
	sizes := fs.String("sizes", "", "semicolon-separated dim settings to run (default: L1, L2, beyond-cache and ≥256 MiB working sets)")
	benchtime := fs.String("benchtime", "", "go test -benchtime (default: 1s, or 10x for working sets over 64 MiB)")
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	if fs.NArg() != 1 {
		return badUsage(fs, stderr, "want one SPEC, got %d", fs.NArg())
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
		if err != nil {
			return err
		}
		compiled = append(compiled, cs)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "dims\tworking set\tbackend\tcall\tns/element\tGB/s\tcopy GB/s\tratio to copy\tspeed-up vs go\tbackward/forward\t")
	for _, cs := range compiled {
		m, err := runner.NewTestModule(cs)
		if err != nil {
			return err
		}
		ws := workingSet(cs.Graph)
		bt := *benchtime
		if bt == "" {
			bt = "1s"
			if ws > 64<<20 {
				bt = "10x"
			}
		}
		out, err := m.Bench(".", bt)
		m.Close()
		if err != nil {
			return err
		}
		res := parseBench(out)
		for _, name := range sortedImpls(res) {
			call, impl, _ := strings.Cut(name, "/")
			r := res[name]
			speed, ratio := "", ""
			if goNs := res[call+"/go"]["ns/element"]; goNs > 0 && r["ns/element"] > 0 {
				speed = fmt.Sprintf("%.2f×", goNs/r["ns/element"])
			}
			if fwd := res["Forward/"+impl]["ns/element"]; call == "ForwardBackward" && fwd > 0 {
				ratio = fmt.Sprintf("%.2f", r["ns/element"]/fwd)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%.2f\t%.2f\t%.3f\t%s\t%s\t\n", dimsString(cs.Graph), bytesString(ws),
				impl, call, r["ns/element"], r["MB/s"]/1000, res["CopyProbe"]["MB/s"]/1000, r["copy-ratio"], speed, ratio)
		}
		fmt.Fprintf(stderr, "bench: %s measured\n", dimsString(cs.Graph)) // progress; the table comes at the end, aligned
	}
	return tw.Flush()
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

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// parseBench reads `go test -bench` lines into name -> unit -> value.
func parseBench(out string) map[string]map[string]float64 {
	res := map[string]map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		vals := map[string]float64{}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				vals[f[i+1]] = v
			}
		}
		res[m[1]] = vals
	}
	return res
}

// sortedImpls lists the Forward and ForwardBackward results, by backend then call.
func sortedImpls(res map[string]map[string]float64) []string {
	var out []string
	for k := range res {
		if strings.HasPrefix(k, "Forward/") || strings.HasPrefix(k, "ForwardBackward/") {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ci, ii, _ := strings.Cut(out[i], "/")
		cj, ij, _ := strings.Cut(out[j], "/")
		if ii != ij {
			return ii < ij
		}
		return ci < cj
	})
	return out
}
