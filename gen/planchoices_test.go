package gen_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/gen/runner"
)

// TestPlanChoicesAB is the measurement behind two planner choices (LOSSGEN_AB=1 only: it
// builds packages with batches of 2M–4M tokens and runs them for minutes): row-local fusion
// (plan.RowLocal) and sinking results into later passes (plan's sinkable). Each workload's
// package is built four times, with both choices, with one of them off, and with neither
// (plan.Options), and the four are benchmarked alternately, a process per round, AVX2,
// Forward and ForwardBackward, at 1 thread and at GOMAXPROCS. It logs the bytes each plan
// streams and the median ns/element of each variant. LOSSGEN_AB_ONLY picks workloads by name.
func TestPlanChoicesAB(t *testing.T) {
	if os.Getenv("LOSSGEN_AB") == "" {
		t.Skip("LOSSGEN_AB=1 runs the planner-choice A/B benchmark")
	}
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("no AVX2")
	}
	rounds := 5
	if r, err := strconv.Atoi(os.Getenv("LOSSGEN_AB_ROUNDS")); err == nil {
		rounds = r
	}
	variants := []struct {
		name string
		opt  plan.Options
	}{
		{"both", plan.Options{}},
		{"no-sink", plan.Options{NoSink: true}},
		{"no-rowlocal", plan.Options{NoRowLocal: true}},
		{"neither", plan.Options{NoSink: true, NoRowLocal: true}},
	}
	for _, w := range []struct{ name, src string }{
		// Issue 19's case: a per-row advantage normalisation on a [B, L] token batch.
		{"rownorm_4096x1024", "package: p\ndims: {B: 4096, L: 1024}\nbatch: [B, L]\n" +
			"loss: {type: clip_ppo, normalize_advantage: true, normalize_advantage_exclude_dims: [0]}\n"},
		// Issue 21's: the LLM token losses at B=512 sequences of L=4096 tokens.
		{"grpo_512x4096", "package: p\ndims: {B: 512, L: 4096}\nbatch: [B, L]\n" +
			"loss: {type: grpo, clip_epsilon: 0.2, kl_to_ref_coeff: 0.04}\nkeys: {mask: mask}\n"},
		{"gspo_512x4096", "package: p\ndims: {B: 512, L: 4096}\nbatch: [B, L]\n" +
			"loss: {type: gspo, beta: 0.04}\nkeys: {mask: mask}\n"},
		{"distillation_512x4096", "package: p\ndims: {B: 512, L: 4096}\nbatch: [B, L]\n" +
			"loss: {type: distillation}\nkeys: {mask: mask}\n"},
	} {
		if f := os.Getenv("LOSSGEN_AB_ONLY"); f != "" && !strings.Contains(w.name, f) {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			mods := map[string]*runner.Module{}
			for _, v := range variants {
				c := compileSrc(t, w.src)
				require.NoError(t, c.Replan(v.opt))
				t.Logf("%s %s: Forward %d passes, %.1f B/element; ForwardBackward %d passes, %.1f B/element", w.name, v.name,
					len(c.Plan.Passes), perElement(c, c.Plan), len(c.Backward.Passes), perElement(c, c.Backward))
				m, err := runner.NewTestModule(c)
				require.NoError(t, err)
				t.Cleanup(func() { m.Close() })
				mods[v.name] = m
			}
			ns := map[string][]float64{}
			for range rounds {
				for _, v := range variants {
					out, err := mods[v.name].Bench("^Benchmark(Forward|ForwardBackward)$/^avx2$", "5x", 1)
					require.NoError(t, err)
					for call, x := range benchThreads(t, out) {
						ns[v.name+" "+call] = append(ns[v.name+" "+call], x)
					}
				}
			}
			for _, call := range []string{"Forward threads=1", "Forward threads=N", "ForwardBackward threads=1", "ForwardBackward threads=N"} {
				var cells []string
				for _, v := range variants {
					cells = append(cells, fmt.Sprintf("%s %.2f", v.name, median(ns[v.name+" "+call])))
				}
				t.Logf("%s %s ns/element (medians of %d rounds): %s", w.name, call, rounds, strings.Join(cells, ", "))
			}
		})
	}
}

func perElement(c *gen.Compiled, p *plan.Plan) float64 {
	return float64(p.Bytes()) / float64(c.Graph.Batch.Numel())
}

var threadsLine = regexp.MustCompile(`(?m)^Benchmark(Forward|ForwardBackward)/avx2/threads=(\d+)\S*\s+\d+\s+\d+ ns/op.*?\s([0-9.]+) ns/element`)

// benchThreads reads ns/element per call and thread count ("Forward threads=1") from go test
// -bench output.
func benchThreads(t *testing.T, out string) map[string]float64 {
	res := map[string]float64{}
	for _, m := range threadsLine.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err)
		n := "N"
		if m[2] == "1" {
			n = "1"
		}
		res[m[1]+" threads="+n] = v
	}
	require.Len(t, res, 4, "benchmark output:\n%s", out)
	return res
}
