package gen_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"

	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/gen/runner"
	"github.com/lossgen/lossgen/runtime/golden"
)

// TestSameBitsOnEveryCoreCount runs the generated kernels of a flat batch cut into whole
// vector blocks (ClipPPO, B = 100003: 8 chunks by default, the last with a 3-element tail)
// and of a [N, T] batch cut into rows (ClipPPO+GAE on [64, 1100]) in processes with
// GOMAXPROCS 1, 2 and 8, forward and forward+backward, the AVX2 kernels (where the machine
// has AVX2) and the pure-Go ones (the purego build), and requires the same output bytes of
// each: the plan fixes the chunks from the shape, so the core count cannot change a result.
func TestSameBitsOnEveryCoreCount(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	for name, src := range map[string]string{
		"flat": "package: p\ndims: {B: 100003}\nbatch: [B]\nloss: {type: clip_ppo, normalize_advantage: true, clip_value: 0.2}\n",
		"rows": "package: p\ndims: {N: 64, T: 1100}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\n" +
			"loss: {type: clip_ppo, normalize_advantage: true}\n",
	} {
		t.Run(name, func(t *testing.T) {
			c := compileSrc(t, src)
			chunked := 0
			for _, ps := range c.Plan.Passes {
				if ch := ps.Schedule.Chunks; ch != nil && ch.Count == plan.MaxChunks {
					chunked++
				}
			}
			require.NotZero(t, chunked, "no pass runs in %d chunks:\n%s", plan.MaxChunks, c.Plan)
			cs, err := cases.Build(c.Reference(), "p", "")
			require.NoError(t, err)
			m, err := runner.NewModule(c)
			require.NoError(t, err)
			t.Cleanup(func() { m.Close() })
			in := cs[0].Inputs
			for _, tags := range []string{"", "purego"} {
				bin, err := m.Build(tags)
				require.NoError(t, err)
				if tags == "purego" {
					impl, err := m.Impl(bin)
					require.NoError(t, err)
					require.Equal(t, "go", impl)
				}
				var want [2][]byte
				for _, procs := range []string{"1", "2", "8"} {
					t.Setenv("GOMAXPROCS", procs)
					fwd, err := m.Run(bin, in)
					require.NoError(t, err)
					fb, err := m.RunBackward(bin, in)
					require.NoError(t, err)
					got := [2][]byte{outputBytes(t, fwd), outputBytes(t, fb)}
					if want[0] == nil {
						want = got
						continue
					}
					require.True(t, bytes.Equal(want[0], got[0]), "tags %q: Forward with GOMAXPROCS=%s differs from GOMAXPROCS=1", tags, procs)
					require.True(t, bytes.Equal(want[1], got[1]), "tags %q: ForwardBackward with GOMAXPROCS=%s differs from GOMAXPROCS=1", tags, procs)
				}
			}
		})
	}
}

// outputBytes is every output's data, in name order, as little-endian bytes.
func outputBytes(t *testing.T, outs map[string]golden.Array) []byte {
	var names []string
	for n := range outs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		require.NoError(t, binary.Write(&b, binary.LittleEndian, outs[n].Data))
	}
	return b.Bytes()
}

// TestStorePolicyAB is the measurement behind plan's store policy (LOSSGEN_AB=1 only: it
// builds packages with batches of 2^24 elements and runs them for minutes): the same kernels
// with every buffer stored regularly and with every eligible buffer of every large pass
// stored non-temporally (the schedule edited either way), benchmarked alternately, one process per round with
// GOMAXPROCS=1 (LOSSGEN_AB_THREADS sets another), Forward and ForwardBackward. It logs the
// median ns/element of each and their ratio. LOSSGEN_AB_ANY=1 stores non-temporally in
// every pass, not only the large ones (Schedule.Prefetch).
func TestStorePolicyAB(t *testing.T) {
	if os.Getenv("LOSSGEN_AB") == "" {
		t.Skip("LOSSGEN_AB=1 runs the store-policy A/B benchmark")
	}
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("no AVX2")
	}
	rounds := 5
	if r, err := strconv.Atoi(os.Getenv("LOSSGEN_AB_ROUNDS")); err == nil {
		rounds = r
	}
	for _, w := range []struct{ name, src string }{
		{"clipppo_flat_16M", "package: p\ndims: {B: 16777216}\nbatch: [B]\nloss: {type: clip_ppo, normalize_advantage: true, clip_value: true}\n"},
		{"clipppogae_4096x4096", "package: p\ndims: {N: 4096, T: 4096}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\n" +
			"loss: {type: clip_ppo, normalize_advantage: true, clip_value: true}\n"},
		// Token losses at issue 21's size, B = 512 sequences of L = 4096 tokens.
		{"distillation_512x4096", "package: p\ndims: {B: 512, L: 4096}\nbatch: [B, L]\nloss: {type: distillation}\nkeys: {mask: mask}\n"},
		{"grpo_512x4096", "package: p\ndims: {B: 512, L: 4096}\nbatch: [B, L]\nloss: {type: grpo, kl_to_ref_coeff: 0.04, kl_mask_threshold: 0.05}\nkeys: {mask: mask}\n"},
	} {
		if f := os.Getenv("LOSSGEN_AB_ONLY"); f != "" && !strings.Contains(w.name, f) {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			mods := map[string]*runner.Module{}
			for _, policy := range []plan.StorePolicy{plan.Regular, plan.NonTemporal} {
				c := compileSrc(t, w.src)
				setStores(c.Plan, plan.Regular)
				setStores(c.Backward, plan.Regular)
				if policy == plan.NonTemporal {
					f, fb := nonTemporal(c.Plan), nonTemporal(c.Backward)
					require.NotZero(t, f+fb, "no pass can store non-temporally")
					t.Logf("%s: non-temporal stores: Forward %d buffers, ForwardBackward %d", w.name, f, fb)
				}
				m, err := runner.NewTestModule(c)
				require.NoError(t, err)
				t.Cleanup(func() { m.Close() })
				mods[policy.String()] = m
			}
			threads := cmp.Or(os.Getenv("LOSSGEN_AB_THREADS"), "1")
			t.Setenv("GOMAXPROCS", threads)
			ns := map[string][]float64{}
			ratios := map[string][]float64{} // per round: non-temporal ÷ regular
			for range rounds {
				round := map[string]float64{}
				for _, policy := range []string{"regular", "non-temporal"} {
					out, err := mods[policy].Bench("^Benchmark(Forward|ForwardBackward)$/^avx2$/^threads="+threads+"$", "5x", 1)
					require.NoError(t, err)
					for call, v := range benchNs(t, out) {
						ns[policy+" "+call] = append(ns[policy+" "+call], v)
						round[policy+" "+call] = v
					}
				}
				for _, call := range []string{"Forward", "ForwardBackward"} {
					ratios[call] = append(ratios[call], round["non-temporal "+call]/round["regular "+call])
				}
			}
			for _, call := range []string{"Forward", "ForwardBackward"} {
				r, n := median(ns["regular "+call]), median(ns["non-temporal "+call])
				t.Logf("%s %s: regular %.2f, non-temporal %.2f ns/element (medians of %d rounds); non-temporal ÷ regular %.2f (median of the paired ratios %.2f)",
					w.name, call, r, n, rounds, n/r, median(ratios[call]))
			}
			t.Logf("%s FB ÷ F: regular %.2f, non-temporal %.2f", w.name,
				median(ns["regular ForwardBackward"])/median(ns["regular Forward"]),
				median(ns["non-temporal ForwardBackward"])/median(ns["non-temporal Forward"]))
		})
	}
}

// setStores sets every store of p to policy.
func setStores(p *plan.Plan, policy plan.StorePolicy) {
	if p == nil {
		return
	}
	for _, ps := range p.Passes {
		for _, x := range ps.Stores {
			ps.Schedule.Stores[x.ID] = policy
		}
	}
}

// nonTemporal sets every eligible store of p's large passes non-temporal and counts them.
func nonTemporal(p *plan.Plan) int {
	if p == nil {
		return 0
	}
	n := 0
	for _, ps := range p.Passes {
		if !ps.Schedule.Prefetch && os.Getenv("LOSSGEN_AB_ANY") == "" {
			continue
		}
		for _, x := range ps.Stores {
			if ps.NonTemporalEligible(x) {
				ps.Schedule.Stores[x.ID] = plan.NonTemporal
				n++
			}
		}
	}
	return n
}

var benchLine = regexp.MustCompile(`(?m)^Benchmark(Forward|ForwardBackward)/avx2\S*\s+\d+\s+\d+ ns/op.*?\s([0-9.]+) ns/element`)

// benchNs reads ns/element per call from go test -bench output.
func benchNs(t *testing.T, out string) map[string]float64 {
	res := map[string]float64{}
	for _, m := range benchLine.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		res[m[1]] = v
	}
	require.Len(t, res, 2, "benchmark output:\n%s", out)
	return res
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// TestNonTemporalStoresSameBits runs ClipPPO+GAE on [8, 64], and categorical ClipPPO on 64
// elements of 16 logits (float32) and 8 (float64), whose gradient the AVX2 kernel stores from
// a transposed tile, with every eligible buffer stored non-temporally (the schedule edited:
// the plan keeps so small a pass regular) and requires the bytes of the regular schedule's
// run, forward and forward+backward: the store policy changes how values reach memory,
// never which.
func TestNonTemporalStoresSameBits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code")
	}
	t.Parallel()
	cat := "package: p\ndtype: %s\ndims: {B: 64, A: %d}\nbatch: [B]\nloss: {type: clip_ppo, distribution: categorical, action_dim: A, entropy_coeff: 0.01}\n"
	for name, src := range map[string]string{
		"gae":             "package: p\ndims: {N: 8, T: 64}\nbatch: [N, T]\nestimator: {type: gae, gamma: 0.99, lmbda: 0.95}\nloss: {type: clip_ppo, normalize_advantage: true}\n",
		"categorical":     fmt.Sprintf(cat, "float32", 16),
		"categorical_f64": fmt.Sprintf(cat, "float64", 8),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var outs [2][2][]byte
			for i, policy := range []plan.StorePolicy{plan.Regular, plan.NonTemporal} {
				c := compileSrc(t, src)
				n := 0
				for _, p := range []*plan.Plan{c.Plan, c.Backward} {
					for _, ps := range p.Passes {
						for _, x := range ps.Stores {
							if ps.NonTemporalEligible(x) {
								ps.Schedule.Stores[x.ID] = policy
								n++
							}
						}
					}
				}
				require.NotZero(t, n)
				cs, err := cases.Build(c.Reference(), "p", "")
				require.NoError(t, err)
				m, err := runner.NewModule(c)
				require.NoError(t, err)
				t.Cleanup(func() { m.Close() })
				bin, err := m.Build("")
				require.NoError(t, err)
				fwd, err := m.Run(bin, cs[0].Inputs)
				require.NoError(t, err)
				fb, err := m.RunBackward(bin, cs[0].Inputs)
				require.NoError(t, err)
				outs[i] = [2][]byte{outputBytes(t, fwd), outputBytes(t, fb)}
			}
			require.True(t, bytes.Equal(outs[0][0], outs[1][0]), "Forward")
			require.True(t, bytes.Equal(outs[0][1], outs[1][1]), "ForwardBackward")
		})
	}
}
