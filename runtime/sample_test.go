package runtime

import (
	"math"
	"strings"
	"testing"
)

// The generator's first values for one stream, computed independently (NumPy's uint64
// arithmetic, as scripts/gpu-check draws them): any platform, Go version or compiler that
// draws other bits fails here.
func TestGeneratorVectors(t *testing.T) {
	s := NewStream(12345, "reward")
	if uint64(s) != 0x66a3afd532bd9487 {
		t.Fatalf("stream key %#x", uint64(s))
	}
	draws := []uint64{0xa0752e41902bb70c, 0xdc673cc816bcbd9e, 0xc5496f26d3d4def9, 0xa248cae3649802da}
	uniforms := []float64{0.6267880353990865, 0.8609502781389321, 0.7706517667573566, 0.6339232258947902}
	normals := []float64{0.6474874200302793, -0.05726041085729719, 2.2756154403627167, 0.5645869035280043}
	for i := range draws {
		if got := s.Draw(i, 0); got != draws[i] {
			t.Errorf("Draw(%d, 0) = %#x, want %#x", i, got, draws[i])
		}
		if got := s.Uniform(i, 0); got != uniforms[i] {
			t.Errorf("Uniform(%d, 0) = %v, want %v", i, got, uniforms[i])
		}
		if got := s.Normal(i); got != normals[i] {
			t.Errorf("Normal(%d) = %v, want %v", i, got, normals[i])
		}
	}
}

// Draw(i, j) is output 8i+j+1 of the textbook sequential SplitMix64 seeded with the stream
// key (state += γ; return mix(state)).
func TestGeneratorIsSplitMix64(t *testing.T) {
	s := NewStream(7, "x")
	state := uint64(s)
	for k := 0; k < 64; k++ {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		if got := s.Draw(k/8, k%8); got != z {
			t.Fatalf("draw %d: %#x, sequential SplitMix64 %#x", k, got, z)
		}
	}
}

// The distributions have the moments and ranges the file comment states.
func TestGeneratorDistributions(t *testing.T) {
	s := NewStream(99, "v")
	const n = 200000
	var sum, sq float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 0; i < n; i++ {
		z := s.Normal(i)
		sum += z
		sq += z * z
		lo, hi = min(lo, z), max(hi, z)
		if u := s.Uniform(i, 5); u < 0 || u >= 1 {
			t.Fatalf("uniform %v", u)
		}
		if k := s.Index(i, 7); k < 0 || k >= 7 {
			t.Fatalf("index %v", k)
		}
	}
	mean, v := sum/n, sq/n-(sum/n)*(sum/n)
	if math.Abs(mean) > 0.01 || math.Abs(v-1) > 0.02 || lo < -4.9 || hi > 4.9 || lo > -3.5 || hi < 3.5 {
		t.Fatalf("normal: mean %v var %v range [%v, %v]", mean, v, lo, hi)
	}
}

func recipe() *CaseRecipe {
	return &CaseRecipe{Format: GoldenFormat, Generator: GeneratorName, Case: "extreme", Seed: 42, DType: "float32",
		Inputs: []InputRecipe{
			{Name: "sample_log_prob", Key: "sample_log_prob", Kind: "float", Shape: []int{3, 7}, Mode: "extreme",
				Sample: Sample{Dist: "uniform", Lo: -3, Hi: -0.05}},
			{Name: "log_prob", Key: "log_prob", Kind: "float", Shape: []int{3, 7}, Mode: "extreme",
				Sample: Sample{Dist: "normal", Std: 0.25, Offset: "sample_log_prob", ExtremeLog: true}},
			{Name: "next.done", Key: "done", Kind: "bool", Shape: []int{3, 7}, Mode: "pattern", TimeAxis: 1,
				Sample: Sample{Dist: "flag", P: 0.05}},
			{Name: "next.terminated", Key: "terminated", Kind: "bool", Shape: []int{3, 7}, Mode: "pattern", TimeAxis: 1,
				Sample: Sample{Dist: "flag", P: 0.7, Within: "done"}},
			{Name: "action", Key: "action", Kind: "index", Shape: []int{3, 7}, IndexRange: 5, Sample: Sample{Dist: "index"}},
		}}
}

// A whole recipe: values as the file comment defines them, and the checksums lossgen
// stores.
func TestGenerate(t *testing.T) {
	r := recipe()
	vals, err := r.Generate()
	if err != nil {
		t.Fatal(err)
	}
	slp := vals["sample_log_prob"].([]float32)
	lp := vals["log_prob"].([]float32)
	s := NewStream(42, "sample_log_prob")
	ls := NewStream(42, "log_prob")
	for i := range slp {
		base := -3 + float64(2.95*s.Uniform(i, 0))
		if slp[i] != float32(base) {
			t.Fatalf("sample_log_prob[%d] = %v, want %v", i, slp[i], float32(base))
		}
		var off float64
		switch i % 4 {
		case 0:
			off = 0
		case 1:
			off = 6 * (2*ls.Uniform(i, 3) - 1)
		default:
			off = 0.25 * ls.Normal(i)
		}
		if want := float32(off + base); lp[i] != want {
			t.Fatalf("log_prob[%d] = %v, want %v", i, lp[i], want)
		}
	}
	done, term := vals["next.done"].([]bool), vals["next.terminated"].([]bool)
	// Rows (lines along T = 7): 0 none; 1 both at t = 3; 2 done at 3 (truncation).
	for i := range done {
		row, t3 := i/7, i%7 == 3
		wantDone := (row == 1 || row == 2) && t3
		if done[i] != wantDone || term[i] != (row == 1 && t3) {
			t.Fatalf("flags at row %d t %d: done %v terminated %v", row, i%7, done[i], term[i])
		}
	}
	for i, a := range vals["action"].([]int64) {
		if a < 0 || a >= 5 || a != NewStream(42, "action").Index(i, 5) {
			t.Fatalf("action[%d] = %d", i, a)
		}
	}
	_, sums, err := r.Draw()
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range r.Inputs {
		if sums[i] != InputChecksum(vals[in.Name]) {
			t.Fatalf("%s: checksum %s, InputChecksum %s", in.Name, sums[i], InputChecksum(vals[in.Name]))
		}
	}
	// A recipe whose checksum the generator does not reproduce is refused.
	r.Inputs[0].Checksum = sums[0]
	r.Inputs[1].Checksum = "0000000000000001"
	if _, err := r.Generate(); err == nil || !strings.Contains(err.Error(), `"log_prob"`) {
		t.Fatalf("wrong checksum: %v", err)
	}
}

// Inputs longer than a chunk are drawn in parallel with the same bits as one element at a
// time.
func TestGenerateChunks(t *testing.T) {
	r := &CaseRecipe{Format: GoldenFormat, Generator: GeneratorName, Seed: 1, DType: "float64", Inputs: []InputRecipe{
		{Name: "v", Key: "value", Kind: "float", Shape: []int{5, 3*chunk + 17}, Sample: Sample{Dist: "normal", Mean: 1, Std: 2}},
		{Name: "w", Key: "old_value", Kind: "float", Shape: []int{5, 3*chunk + 17}, Sample: Sample{Dist: "normal", Std: 0.3, Offset: "value"}},
	}}
	vals, err := r.Generate()
	if err != nil {
		t.Fatal(err)
	}
	v, w := vals["v"].([]float64), vals["w"].([]float64)
	sv, sw := NewStream(1, "value"), NewStream(1, "old_value")
	for i := range v {
		x := 1 + float64(2*sv.Normal(i))
		if v[i] != x || w[i] != float64(0.3*sw.Normal(i))+x {
			t.Fatalf("element %d: %v %v", i, v[i], w[i])
		}
	}
}

func TestParseRecipe(t *testing.T) {
	for _, c := range []struct{ src, err string }{
		{`{"format": 1, "generator": "splitmix64-ctr/1", "dtype": "float32"}`, "golden format 1"},
		{`{"format": 2, "generator": "pcg", "dtype": "float32"}`, `generator "pcg"`},
		{`{"format": 2, "generator": "splitmix64-ctr/1", "dtype": "float32", "inputs": [{"name": "x", "kind": "float", "shape": [2], "sample": {"dist": "cauchy"}}]}`, `sample dist "cauchy"`},
		{`{"format": 2, "generator": "splitmix64-ctr/1", "dtype": "float32", "inputs": [{"name": "x", "kind": "float", "shape": [2], "sample": {"dist": "normal", "sdt": 1}}]}`, `unknown field "sdt"`},
		{`{"format": 2, "generator": "splitmix64-ctr/1", "dtype": "float32", "inputs": [{"name": "x", "kind": "float", "shape": [0]}]}`, "empty or too large"},
		{`{"format": 2, "generator": "splitmix64-ctr/1", "dtype": "float32", "inputs": [{"name": "x", "kind": "float", "shape": [65536, 65536]}]}`, "empty or too large"},
		{`{"format": 2, "generator": "splitmix64-ctr/1", "dtype": "float32", "inputs": [{"name": "x", "kind": "index", "shape": [2]}]}`, "index range 0"},
		{`{"format": 2, "generator": "splitmix64-ctr/1", "dtype": "float32", "inputs": [{"name": "x", "kind": "bool", "shape": [2], "mode": "pattern", "time_axis": 1}]}`, "time axis 1"},
		{`[`, "not a lossgen case recipe"},
	} {
		if _, err := ParseRecipe([]byte(c.src)); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: got %v, want an error containing %q", c.src, err, c.err)
		}
	}
}

// The variants the PPO family, Q-value hooks and masks use, element by element as the file
// comment specifies them; a tie on a chunk's first element copies the element before it
// (drawn on its own) as one inside a chunk does.
func TestGenerateVariants(t *testing.T) {
	const A = 3 // odd, so rows straddle chunk boundaries at every parity
	rows := (2*chunk + 5) / A
	r := &CaseRecipe{Format: GoldenFormat, Generator: GeneratorName, Seed: 3, DType: "float32", Inputs: []InputRecipe{
		{Name: "logits", Key: "logits", Kind: "float", Shape: []int{rows, A}, Mode: "extreme", Sample: Sample{Dist: "normal", Std: 1.5, ExtremeLogits: true}},
		{Name: "action", Key: "action", Kind: "bool", Shape: []int{rows, A}, Sample: Sample{Dist: "onehot"}, IndexRange: A},
		{Name: "q", Key: "action_value", Kind: "float", Shape: []int{rows, A}, Mode: "extreme", Sample: Sample{Dist: "uniform", Lo: -4, Hi: -0.01, ExtremeTie: true}},
		{Name: "mask", Key: "mask", Kind: "bool", Shape: []int{rows, A}, Mode: "extreme", Sample: Sample{Dist: "flag", P: 0.7, ExtremeRows: true}},
		{Name: "a", Key: "act", Kind: "float", Shape: []int{rows * A}, Mode: "extreme", Sample: Sample{Dist: "uniform", Lo: -1, Hi: 1, ExtremeAction: true}},
		{Name: "beta", Key: "beta", Kind: "float", Shape: []int{1}, Sample: Sample{Dist: "const", Mean: 0.75}},
		{Name: "lp", Key: "log_prob", Kind: "float", Shape: []int{40}, Sample: Sample{Dist: "normal", Std: 0.25}, Pins: []float64{-0.2, 0.18}},
	}}
	vals, err := r.Generate()
	if err != nil {
		t.Fatal(err)
	}
	logits, action, q := vals["logits"].([]float32), vals["action"].([]bool), vals["q"].([]float32)
	mask, a := vals["mask"].([]bool), vals["a"].([]float32)
	for row := 0; row < rows; row++ {
		ones := 0
		for j := 0; j < A; j++ {
			i := row*A + j
			if action[i] {
				ones++
			}
			x := logits[i]
			switch row % 5 {
			case 0:
				if j%2 == 0 && j < A-1 && !math.IsInf(float64(x), -1) {
					t.Fatalf("logits row %d col %d = %v, want -inf", row, j, x)
				}
			case 1:
				if j == 0 && x != -math.MaxFloat32 {
					t.Fatalf("logits row %d col 0 = %v, want the most negative float32", row, x)
				}
			case 2:
				if x != float32(10000-j) {
					t.Fatalf("logits row %d col %d = %v, want %d", row, j, x, 10000-j)
				}
			case 3:
				if x != 0.5 {
					t.Fatalf("logits row %d col %d = %v, want 0.5", row, j, x)
				}
			}
			if j%2 == 1 && q[i] != q[i-1] {
				t.Fatalf("q row %d col %d = %v, not tied with %v", row, j, q[i], q[i-1])
			}
			if j%2 == 0 && (q[i] < -4 || q[i] >= -0.01) {
				t.Fatalf("q row %d col %d = %v, outside [-4, -0.01)", row, j, q[i])
			}
			if row%3 == 1 && mask[i] {
				t.Fatalf("mask row %d col %d set in a cleared row", row, j)
			}
		}
		if ones != 1 {
			t.Fatalf("action row %d has %d ones, want a one-hot vector", row, ones)
		}
	}
	for i, x := range a {
		if i%3 == 0 && x != float32(1-2*(i/3%2)) {
			t.Fatalf("action %d = %v, want the bound %d", i, x, 1-2*(i/3%2))
		}
	}
	if b := vals["beta"].([]float32); b[0] != 0.75 {
		t.Fatalf("const = %v, want 0.75", b[0])
	}
	lp := vals["lp"].([]float32)
	for i, x := range lp {
		want := map[int]float32{2: -0.2, 6: 0.18, 14: -0.2, 18: 0.18, 26: -0.2, 30: 0.18, 38: -0.2}[i]
		if want != 0 && x != want {
			t.Fatalf("pinned element %d = %v, want %v", i, x, want)
		}
		if want == 0 && (x == -0.2 || x == 0.18) {
			t.Fatalf("element %d = %v is pinned, and should not be", i, x)
		}
	}
}

// GenerateInto draws the bits Generate does into the caller's buffers, and refuses buffers of
// another type or length.
func TestGenerateInto(t *testing.T) {
	r := &CaseRecipe{Format: GoldenFormat, Generator: GeneratorName, Seed: 9, DType: "float32", Inputs: []InputRecipe{
		{Name: "v", Key: "value", Kind: "float", Shape: []int{3, chunk + 5}, Sample: Sample{Dist: "normal", Std: 2}},
		{Name: "d", Key: "done", Kind: "bool", Shape: []int{3, chunk + 5}, Sample: Sample{Dist: "flag", P: 0.1}},
	}}
	want, err := r.Generate()
	if err != nil {
		t.Fatal(err)
	}
	dst := map[string]any{"v": make([]float32, 3*(chunk+5)), "d": make([]bool, 3*(chunk+5))}
	for k := 0; k < 2; k++ { // twice: a buffer's old values must not leak into the draw
		if err := r.GenerateInto(dst); err != nil {
			t.Fatal(err)
		}
		for i, x := range want["v"].([]float32) {
			if dst["v"].([]float32)[i] != x || dst["d"].([]bool)[i] != want["d"].([]bool)[i] {
				t.Fatalf("draw %d, element %d differs from Generate's", k, i)
			}
		}
	}
	for _, bad := range []map[string]any{
		{"v": make([]float64, 3*(chunk+5)), "d": dst["d"]},
		{"v": make([]float32, 3*(chunk+5)-1), "d": dst["d"]},
		{"v": dst["v"]},
	} {
		if err := r.GenerateInto(bad); err == nil || !strings.Contains(err.Error(), "the buffer is") {
			t.Fatalf("a wrong buffer: got %v", err)
		}
	}
}
