package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
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
