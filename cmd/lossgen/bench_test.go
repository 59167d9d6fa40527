package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lossgen/lossgen/gen/plan"
)

// TestBenchThreads runs lossgen bench end to end on a small ClipPPO at GOMAXPROCS=3: the
// generated benchmarks measure each call of each backend at 1 thread and at the GOMAXPROCS
// the process started with (3, whatever the machine's cores).
func TestBenchThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and benchmarks a generated package")
	}
	t.Setenv("GOMAXPROCS", "3")
	var out, errb strings.Builder
	args := []string{"bench", "-sizes", "B=256", "-benchtime", "20x", "-json", "../../spec/examples/clip_ppo.yaml"}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("lossgen %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
	}
	var rows []benchJSON
	if err := json.Unmarshal([]byte(out.String()), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	threads := map[string][]int{}
	for _, r := range rows {
		threads[r.Call+"/"+r.Backend] = append(threads[r.Call+"/"+r.Backend], r.Threads)
		if r.Dims != "B=256" || r.Runs != 1 || r.NsPerElement <= 0 || r.CopyTimeRatio <= 0 {
			t.Errorf("row %+v: want dims B=256, 1 run, a time and a copy ratio", r)
		}
	}
	if len(threads["Forward/go"]) == 0 || len(threads["ForwardBackward/go"]) == 0 {
		t.Errorf("no Go kernel results: %v", threads)
	}
	for name, ts := range threads {
		if !slices.Equal(ts, []int{1, 3}) {
			t.Errorf("%s measured at threads %v, want [1 3]", name, ts)
		}
	}
}

// -without reads the planner choices to turn off; anything else is a usage error that names
// the accepted ones.
func TestBenchWithout(t *testing.T) {
	for in, want := range map[string]plan.Options{
		"":              {},
		"rowlocal":      {NoRowLocal: true},
		"sink":          {NoSink: true},
		"sink,rowlocal": {NoSink: true, NoRowLocal: true},
	} {
		got, err := planOptions(in)
		if err != nil || got != want {
			t.Errorf("planOptions(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	var out, errb strings.Builder
	if code := run([]string{"bench", "-without", "fusion", "../../spec/examples/clip_ppo.yaml"}, &out, &errb); code != 2 {
		t.Errorf("-without fusion: exit %d, want 2 (usage)", code)
	}
	if !strings.Contains(errb.String(), `no planner choice "fusion"; want a list of rowlocal, sink`) {
		t.Errorf("-without fusion: stderr does not name the choices:\n%s", errb.String())
	}
}
