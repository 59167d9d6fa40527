package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// benchResult is one measurement of a generated package's BenchmarkForward or
// BenchmarkForwardBackward sub-benchmark: Call ("Forward", "ForwardBackward") of backend Impl
// ("go", "avx2") at Threads (its GOMAXPROCS), the median of its repeated runs (go test
// -count).
type benchResult struct {
	Call, Impl string
	Threads    int
	// NsPerElement is nanoseconds per batch element; MBps the megabytes (10^6) a second of
	// the bytes a call reads and writes; CopyRatio that bandwidth over the copy probe's at
	// the same thread count (1/CopyRatio: the call's time over a copy of its bytes).
	NsPerElement, MBps, CopyRatio float64
	Runs                          int // how many runs the medians are of
}

// copyTime is the call's time over the time of a copy() of its bytes at the same thread
// count (0 when the probe was not reported).
func (r benchResult) copyTime() float64 {
	if r.CopyRatio == 0 {
		return 0
	}
	return 1 / r.CopyRatio
}

// copyGBps is the copy probe's bandwidth, GB/s, at r's thread count.
func (r benchResult) copyGBps() float64 {
	if r.CopyRatio == 0 {
		return 0
	}
	return r.MBps / r.CopyRatio / 1000
}

// benchLine is one result line of go test -bench: the name without "Benchmark" and without
// the -GOMAXPROCS suffix go test adds, the iteration count, then value-unit pairs.
var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// benchName is a generated benchmark's sub-benchmark name: Forward/avx2/threads=2.
var benchName = regexp.MustCompile(`^(Forward|ForwardBackward)/([^/]+)/threads=(\d+)$`)

// parseBench reads the Forward and ForwardBackward results of `go test -bench` output, in
// the order they first appear; repeated lines of one sub-benchmark (-count, -cpu) give the
// median of each metric. Other lines (the copy probe, log output) are skipped.
func parseBench(out string) []benchResult {
	type key struct {
		call, impl string
		threads    int
	}
	var order []key
	runs := map[key]map[string][]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		n := benchName.FindStringSubmatch(m[1])
		if n == nil {
			continue
		}
		threads, err := strconv.Atoi(n[3])
		if err != nil {
			continue
		}
		k := key{n[1], n[2], threads}
		if runs[k] == nil {
			runs[k] = map[string][]float64{}
			order = append(order, k)
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				runs[k][f[i+1]] = append(runs[k][f[i+1]], v)
			}
		}
	}
	var res []benchResult
	for _, k := range order {
		r := runs[k]
		res = append(res, benchResult{Call: k.call, Impl: k.impl, Threads: k.threads,
			NsPerElement: median(r["ns/element"]), MBps: median(r["MB/s"]), CopyRatio: median(r["copy-ratio"]),
			Runs: len(r["ns/element"])})
	}
	return res
}

// median is the median of xs (the mean of the middle two for an even count); 0 when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchRun is the results at one size: its dims (N=4096,T=4096) and working set (bytes one
// Forward reads and writes).
type benchRun struct {
	Dims       string
	WorkingSet int
	Results    []benchResult
}

// benchThreads lists the thread counts of runs' results, ascending.
func benchThreads(runs []benchRun) []int {
	var ts []int
	for _, r := range runs {
		for _, x := range r.Results {
			if !slices.Contains(ts, x.Threads) {
				ts = append(ts, x.Threads)
			}
		}
	}
	sort.Ints(ts)
	return ts
}

// find returns the result of call and impl at threads.
func find(rs []benchResult, call, impl string, threads int) (benchResult, bool) {
	for _, r := range rs {
		if r.Call == call && r.Impl == impl && r.Threads == threads {
			return r, true
		}
	}
	return benchResult{}, false
}

// writeBenchTable prints runs as one aligned table (benchTable's cells).
func writeBenchTable(w io.Writer, runs []benchRun) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	for _, row := range benchTable(runs) {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// benchTable is the table of runs, the header first, then a row per size, backend and call
// (by backend, then Forward before ForwardBackward): for each thread count ns/element, GB/s
// and the time over a copy's ("×copy"); then the speed-up of the most threads over one, FB ÷ F
// at each thread count (on the ForwardBackward row), the copy probe's GB/s at each thread
// count, and the speed-up over the Go kernel at one thread.
func benchTable(runs []benchRun) [][]string {
	threads := benchThreads(runs)
	if len(threads) == 0 {
		return nil
	}
	head := []string{"dims", "working set", "backend", "call"}
	for _, t := range threads {
		head = append(head, fmt.Sprintf("%dT ns/element", t), fmt.Sprintf("%dT GB/s", t), fmt.Sprintf("%dT ×copy", t))
	}
	hi := threads[len(threads)-1]
	if len(threads) > 1 {
		head = append(head, fmt.Sprintf("%dT/1T", hi))
	}
	head = append(head, "FB÷F "+threadsLabel(threads), "copy GB/s "+threadsLabel(threads), "vs go 1T")
	table := [][]string{head}
	for _, run := range runs {
		for _, key := range rowKeys(run.Results) {
			impl, call := key[0], key[1]
			cells := []string{run.Dims, bytesString(run.WorkingSet), impl, call}
			var fbf, copyBW []string
			for _, t := range threads {
				r, ok := find(run.Results, call, impl, t)
				if !ok {
					cells = append(cells, "–", "–", "–")
					copyBW = append(copyBW, "–")
					continue
				}
				cells = append(cells, fmt.Sprintf("%.3f", r.NsPerElement), fmt.Sprintf("%.2f", r.MBps/1000), fmt.Sprintf("%.2f", r.copyTime()))
				copyBW = append(copyBW, fmt.Sprintf("%.1f", r.copyGBps()))
				if f, ok := find(run.Results, "Forward", impl, t); call == "ForwardBackward" && ok && f.NsPerElement > 0 {
					fbf = append(fbf, fmt.Sprintf("%.2f", r.NsPerElement/f.NsPerElement))
				}
			}
			if len(threads) > 1 {
				one, ok1 := find(run.Results, call, impl, 1)
				many, ok2 := find(run.Results, call, impl, hi)
				cells = append(cells, ratioCell(ok1 && ok2, one.NsPerElement, many.NsPerElement))
			}
			cells = append(cells, strings.Join(fbf, " / "), strings.Join(copyBW, " / "))
			g, okg := find(run.Results, call, "go", 1)
			r, okr := find(run.Results, call, impl, 1)
			cells = append(cells, ratioCell(impl != "go" && okg && okr, g.NsPerElement, r.NsPerElement))
			table = append(table, cells)
		}
	}
	return table
}

// threadsLabel names the thread counts of a column holding one value each: "1T / 2T".
func threadsLabel(threads []int) string {
	var s []string
	for _, t := range threads {
		s = append(s, fmt.Sprintf("%dT", t))
	}
	return strings.Join(s, " / ")
}

// ratioCell formats num/den as a speed-up ("1.85×"), or "" when ok is false or either is 0.
func ratioCell(ok bool, num, den float64) string {
	if !ok || num <= 0 || den <= 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", num/den)
}

// rowKeys lists the (backend, call) pairs of rs, by backend in order of appearance, then
// Forward before ForwardBackward.
func rowKeys(rs []benchResult) [][2]string {
	var impls []string
	for _, r := range rs {
		if !slices.Contains(impls, r.Impl) {
			impls = append(impls, r.Impl)
		}
	}
	var out [][2]string
	for _, impl := range impls {
		for _, call := range []string{"Forward", "ForwardBackward"} {
			for _, r := range rs {
				if r.Impl == impl && r.Call == call {
					out = append(out, [2]string{impl, call})
					break
				}
			}
		}
	}
	return out
}

// benchJSON is one measurement as `lossgen bench -json` prints it (scripts/bench-table reads
// it): the table's numbers, unrounded.
type benchJSON struct {
	Dims          string  `json:"dims"`
	WorkingSet    int     `json:"working_set_bytes"`
	Backend       string  `json:"backend"`
	Call          string  `json:"call"`
	Threads       int     `json:"threads"`
	NsPerElement  float64 `json:"ns_per_element"`
	GBps          float64 `json:"gb_per_s"`
	CopyGBps      float64 `json:"copy_gb_per_s"`
	CopyTimeRatio float64 `json:"copy_time_ratio"`
	Runs          int     `json:"runs"`
	SpeedupVsOneT float64 `json:"speedup_vs_1t,omitempty"`
	FBOverF       float64 `json:"fb_over_f,omitempty"`
	SpeedupVsGo   float64 `json:"speedup_vs_go,omitempty"` // over the Go kernel at the same threads
}

// writeBenchJSON prints runs as a JSON array of benchJSON, in the table's row order.
func writeBenchJSON(w io.Writer, runs []benchRun) error {
	out := []benchJSON{}
	for _, run := range runs {
		for _, key := range rowKeys(run.Results) {
			impl, call := key[0], key[1]
			for _, r := range run.Results {
				if r.Impl != impl || r.Call != call {
					continue
				}
				j := benchJSON{Dims: run.Dims, WorkingSet: run.WorkingSet, Backend: impl, Call: call, Threads: r.Threads,
					NsPerElement: r.NsPerElement, GBps: r.MBps / 1000, CopyGBps: r.copyGBps(), CopyTimeRatio: r.copyTime(), Runs: r.Runs}
				if one, ok := find(run.Results, call, impl, 1); ok && r.NsPerElement > 0 {
					j.SpeedupVsOneT = one.NsPerElement / r.NsPerElement
				}
				if f, ok := find(run.Results, "Forward", impl, r.Threads); ok && call == "ForwardBackward" && f.NsPerElement > 0 {
					j.FBOverF = r.NsPerElement / f.NsPerElement
				}
				if g, ok := find(run.Results, call, "go", r.Threads); ok && impl != "go" && r.NsPerElement > 0 {
					j.SpeedupVsGo = g.NsPerElement / r.NsPerElement
				}
				out = append(out, j)
			}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
