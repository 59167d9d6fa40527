package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// benchOutput is go test -bench output of a generated package (spec/examples/clip_ppo.yaml at
// B=4096, -count 2, on a 2-core machine): two runs of each sub-benchmark, the copy probe's
// lines and go test's header.
func benchOutput(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/bench_clipppo_b4096.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseBenchMedians(t *testing.T) {
	res := parseBench(benchOutput(t))
	if len(res) != 8 { // {Forward, ForwardBackward} × {go, avx2} × {1, 2} threads
		t.Fatalf("got %d results, want 8: %+v", len(res), res)
	}
	// The median of two runs is their mean: 15.40 and 15.48 ns/element, 1818.30 and 1808.97
	// MB/s, copy-ratio 0.1016 and 0.1049.
	r, ok := find(res, "Forward", "avx2", 1)
	if !ok {
		t.Fatal("no Forward/avx2/threads=1")
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"ns/element", r.NsPerElement, 15.44},
		{"MB/s", r.MBps, 1813.635},
		{"copy-ratio", r.CopyRatio, 0.10325},
		{"×copy", r.copyTime(), 1 / 0.10325},
		{"copy GB/s", r.copyGBps(), 1813.635 / 0.10325 / 1000},
		{"runs", float64(r.Runs), 2},
	} {
		if math.Abs(c.got-c.want) > 1e-9*c.want {
			t.Errorf("Forward/avx2/threads=1 %s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if r, _ := find(res, "ForwardBackward", "go", 2); r.NsPerElement != (400.5+324.4)/2 {
		t.Errorf("ForwardBackward/go/threads=2 ns/element = %v, want %v", r.NsPerElement, (400.5+324.4)/2)
	}
	if _, ok := find(res, "CopyProbe", "", 1); ok {
		t.Error("the copy probe's lines were read as a kernel's")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// TestBenchTable checks the table of the captured output cell by cell: the values are the
// medians of its two runs (the mean of the two), worked out by hand in the comments.
func TestBenchTable(t *testing.T) {
	runs := []benchRun{{Dims: "B=4096", WorkingSet: 114688, Results: parseBench(benchOutput(t))}}
	var buf bytes.Buffer
	if err := writeBenchTable(&buf, runs); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + buf.String())
	if lines := strings.Split(strings.TrimSpace(buf.String()), "\n"); len(lines) != 5 {
		t.Errorf("the printed table has %d lines, want a header and 4 rows", len(lines))
	}
	want := [][]string{
		{"dims", "working set", "backend", "call", "1T ns/element", "1T GB/s", "1T ×copy",
			"2T ns/element", "2T GB/s", "2T ×copy", "2T/1T", "FB÷F 1T / 2T", "copy GB/s 1T / 2T", "vs go 1T"},
		// go Forward: 1T (216.8+278.9)/2 = 247.85 ns, (129.21+100.44)/2 = 114.825 MB/s,
		// copy-ratio (0.008524+0.004057)/2 = 0.0062905, so ×copy 1/0.0062905 = 158.97 and
		// copy GB/s 0.114825/0.0062905 = 18.25; 2T 217.9 ns, 128.825 MB/s, copy-ratio
		// 0.0081655 (×copy 122.47, copy 15.78 GB/s); 2T/1T 247.85/217.9 = 1.137.
		{"B=4096", "112.0 KiB", "go", "Forward", "247.850", "0.11", "158.97", "217.900", "0.13", "122.47", "1.14×", "", "18.3 / 15.8", ""},
		// go ForwardBackward: 1T 361.9 ns, copy-ratio 0.006332 (×copy 157.93, copy 17.74
		// GB/s); 2T 362.45 ns, copy-ratio 0.0056235 (177.83, 19.85 GB/s); FB÷F
		// 361.9/247.85 = 1.460 and 362.45/217.9 = 1.663.
		{"B=4096", "112.0 KiB", "go", "ForwardBackward", "361.900", "0.11", "157.93", "362.450", "0.11", "177.83", "1.00×", "1.46 / 1.66", "17.7 / 19.8", ""},
		// avx2 Forward: 1T 15.44 ns, 1.813635 GB/s, ×copy 1/0.10325 = 9.69 (copy 17.57
		// GB/s); 2T 11.185 ns, 2.510975 GB/s, copy-ratio 0.20875 (4.79, 12.03 GB/s); 2T/1T
		// 15.44/11.185 = 1.380; vs go 247.85/15.44 = 16.05.
		{"B=4096", "112.0 KiB", "avx2", "Forward", "15.440", "1.81", "9.69", "11.185", "2.51", "4.79", "1.38×", "", "17.6 / 12.0", "16.05×"},
		// avx2 ForwardBackward: 1T 13.315 ns, 3.05723 GB/s, copy-ratio 0.14155 (7.06, 21.60
		// GB/s); 2T 11.0835 ns (printed 11.084: 11.0835 is just below it in binary),
		// 3.66773 GB/s, copy-ratio 0.1071 (9.34, 34.25 GB/s); 2T/1T 1.201; FB÷F
		// 13.315/15.44 = 0.862 and 11.0835/11.185 = 0.991; vs go 361.9/13.315 = 27.18.
		{"B=4096", "112.0 KiB", "avx2", "ForwardBackward", "13.315", "3.06", "7.06", "11.084", "3.67", "9.34", "1.20×", "0.86 / 0.99", "21.6 / 34.2", "27.18×"},
	}
	got := benchTable(runs)
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("row %d\n got %q\nwant %q", i, got[i], want[i])
		}
	}
}

func TestBenchJSON(t *testing.T) {
	var buf bytes.Buffer
	runs := []benchRun{{Dims: "B=4096", WorkingSet: 114688, Results: parseBench(benchOutput(t))}}
	if err := writeBenchJSON(&buf, runs); err != nil {
		t.Fatal(err)
	}
	var rows []benchJSON
	if err := json.Unmarshal(buf.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	// Row order: go Forward 1T, 2T, go ForwardBackward 1T, 2T, then avx2's.
	r := rows[7]
	if r.Backend != "avx2" || r.Call != "ForwardBackward" || r.Threads != 2 {
		t.Fatalf("last row is %s %s %dT, want avx2 ForwardBackward 2T", r.Backend, r.Call, r.Threads)
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"ns/element", r.NsPerElement, (9.687 + 12.48) / 2},
		{"speed-up vs 1T", r.SpeedupVsOneT, ((11.57 + 15.06) / 2) / ((9.687 + 12.48) / 2)},
		{"FB÷F", r.FBOverF, ((9.687 + 12.48) / 2) / ((11.74 + 10.63) / 2)},
		{"vs go", r.SpeedupVsGo, ((400.5 + 324.4) / 2) / ((9.687 + 12.48) / 2)},
		{"×copy", r.CopyTimeRatio, 1 / ((0.1066 + 0.1076) / 2)},
	} {
		if math.Abs(c.got-c.want) > 1e-9*c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}
