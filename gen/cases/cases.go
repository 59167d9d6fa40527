// Package cases builds the golden cases of a generated package — seeded random inputs,
// hand-shaped edge cases and the real recorded data shipped in golden/data — runs the
// reference interpreter on them, and writes or checks golden/<package>/.
//
// Inputs are made by logical key (ir.Input.Key), so a spec that renames its data keys gets
// the same values under its own names.
package cases

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gorgonia.org/tensor"

	"github.com/lossgen/lossgen/gen/interp"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/spec"
)

// Build returns the input-only cases for g: "random", "flags" (when the graph has done
// flags), "extreme" (when a key asks for one: log-probabilities, rewards, advantages), and
// "real_<file>" for every .npz in dataDir holding all of g's inputs at its shapes. Values are
// drawn as each key's registry entry says (spec.Sample).
func Build(g *ir.Graph, pkg, dataDir string) ([]golden.Case, error) {
	var out []golden.Case
	add := func(name string, fill func(r *rand.Rand, in *ir.Input) []float64) {
		r := rand.New(rand.NewPCG(seed(pkg, name), 7))
		c := golden.Case{Name: name, Inputs: map[string]golden.Array{}}
		vals := map[string][]float64{}
		for _, in := range g.Inputs {
			vals[in.Key] = fill(r, in)
		}
		coherent(g, vals)
		if name == "extreme" {
			tiesAtBounds(g, vals)
		}
		for _, in := range g.Inputs {
			c.Inputs[in.Name] = Stored(g.DType, in, vals[in.Key])
		}
		out = append(out, c)
	}
	add("random", func(r *rand.Rand, in *ir.Input) []float64 { return typical(r, g, in) })
	if has(g, "done") {
		add("flags", func(r *rand.Rand, in *ir.Input) []float64 {
			if in.Key == "done" || in.Key == "terminated" {
				return flagPatterns(in.Key, in.Shape, timeDim(g))
			}
			return typical(r, g, in)
		})
	}
	extremeKeys := false
	for _, in := range g.Inputs {
		sm := sample(in.Key)
		extremeKeys = extremeKeys || sm.ExtremeLog || sm.ExtremeBig || sm.ExtremeNil || sm.ExtremeLogits || sm.ExtremeAction ||
			sm.ExtremeTie || sm.ExtremeRows
	}
	if extremeKeys {
		add("extreme", func(r *rand.Rand, in *ir.Input) []float64 { return extreme(r, g, in) })
	}
	real, err := realCases(g, dataDir)
	if err != nil {
		return nil, err
	}
	return append(out, real...), nil
}

// sample is a key's golden-case distribution: its registry entry's (a per-head key
// "entropy.<head>" samples as "entropy"), or a normal(0, 1) for a key no stage declares.
func sample(key string) spec.Sample {
	reg := lower.Registry()
	if def, ok := reg.Key(key); ok && def.Sample.Dist != "" {
		return def.Sample
	}
	if base, _, ok := strings.Cut(key, "."); ok {
		if def, ok := reg.Key(base); ok && def.Sample.Dist != "" {
			return def.Sample
		}
	}
	return spec.Sample{Dist: "normal", Std: 1}
}

// timeDim is the axis the graph's scans run along (the flag patterns' time), or its last
// batch dim.
func timeDim(g *ir.Graph) string {
	for _, n := range g.Nodes {
		if n.Op == ir.OpScan {
			return n.Axes[0]
		}
	}
	return g.Batch[len(g.Batch)-1].Name
}

func has(g *ir.Graph, key string) bool {
	for _, in := range g.Inputs {
		if in.Key == key {
			return true
		}
	}
	return false
}

func seed(pkg, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(pkg + "/" + name))
	return h.Sum64()
}

// typical draws a key's values in the ranges an RL batch has (spec.Sample): log-probabilities
// of a few nats whose differences cross the clip bounds, entropies of a small action space,
// critic values and rewards of order one, done flags about one step in twenty.
func typical(r *rand.Rand, g *ir.Graph, in *ir.Input) []float64 {
	sm := sample(in.Key)
	v := make([]float64, in.Shape.Numel())
	if in.State {
		for i := range v {
			v[i] = in.Init // kernel state starts where the package's NewState does
		}
		return v
	}
	if sm.Dist == "action" {
		return action(r, g, in)
	}
	for i := range v {
		switch sm.Dist {
		case "uniform":
			v[i] = sm.Lo + (sm.Hi-sm.Lo)*r.Float64()
		case "flag":
			v[i] = b2f(r.Float64() < sm.P)
		case "index":
			if in.Kind != ir.Index {
				// A one-hot vector along the last dim (a one-hot action stored as flags).
				a := in.Shape[len(in.Shape)-1].Size
				if i%a == 0 {
					v[i+r.IntN(a)] = 1
				}
				continue
			}
			v[i] = float64(r.IntN(IndexRange(g, in)))
		default:
			v[i] = sm.Mean + sm.Std*r.NormFloat64()
		}
	}
	return v
}

// IndexRange is the extent of the axis an index input selects along (the smallest, if it
// feeds several gathers), 1 if none.
func IndexRange(g *ir.Graph, in *ir.Input) int {
	n := 1 << 30
	for _, node := range g.Nodes {
		if node.Op == ir.OpGather && node.Args[1].Op == ir.OpInput && node.Args[1].Input == in {
			x := node.Args[0].Shape
			n = min(n, x[x.Index(node.Axes[0])].Size)
		}
	}
	if n == 1<<30 {
		return 1
	}
	return n
}

// action draws stored actions as the input's kind and use say: an index along the axis it
// selects (categorical), a one-hot vector along its last dim (flags, or floats an argmax
// reads), or a point of (−1, 1) (normal and tanh_normal actions).
func action(r *rand.Rand, g *ir.Graph, in *ir.Input) []float64 {
	v := make([]float64, in.Shape.Numel())
	if in.Kind == ir.Index {
		n := IndexRange(g, in)
		for i := range v {
			v[i] = float64(r.IntN(n))
		}
		return v
	}
	if in.Kind == ir.Bool || feedsArgMax(g, in) {
		a := in.Shape[len(in.Shape)-1].Size
		for i := 0; i < len(v); i += a {
			v[i+r.IntN(a)] = 1
		}
		return v
	}
	for i := range v {
		v[i] = 2*r.Float64() - 1
	}
	return v
}

// feedsArgMax reports whether input in is read by an argmax (a one-hot action).
func feedsArgMax(g *ir.Graph, in *ir.Input) bool {
	for _, n := range g.Nodes {
		if n.Op == ir.OpArgMax && n.Args[0].Op == ir.OpInput && n.Args[0].Input == in {
			return true
		}
	}
	return false
}

// extremeLogits rewrites rows of logits (the last dim is the class axis): a row with −inf
// classes, one with the most negative finite value, huge near-equal logits [10000, 9999, ...],
// and exact ties, cycling; the other rows stay typical.
func extremeLogits(v []float64, shape ir.Shape, dt ir.DType) {
	a := shape[len(shape)-1].Size
	for row := 0; row*a < len(v); row++ {
		x := v[row*a : (row+1)*a]
		switch row % 5 {
		case 0:
			for j := 0; j < a-1; j += 2 {
				x[j] = math.Inf(-1)
			}
		case 1:
			x[0] = -dt.MaxFinite()
		case 2:
			for j := range x {
				x[j] = 10000 - float64(j)
			}
		case 3:
			for j := range x {
				x[j] = 0.5
			}
		}
	}
}

// extreme stresses the clip and the exponentials: log-weights of up to ±6 nats, exact ties
// at ratio 1, advantages and rewards from 0 to ±1e3, zero entropy; ties along the action dim
// and all-masked rows.
func extreme(r *rand.Rand, g *ir.Graph, in *ir.Input) []float64 {
	v := typical(r, g, in)
	sm := sample(in.Key)
	for i := range v {
		switch {
		case sm.ExtremeLog:
			switch i % 4 {
			case 0:
				v[i] = 0
			case 1:
				v[i] = 6 * (2*r.Float64() - 1)
			}
		case sm.ExtremeBig:
			switch i % 5 {
			case 0:
				v[i] = 0
			case 1:
				v[i] *= 1e3
			}
		case sm.ExtremeNil:
			if i%3 == 0 {
				v[i] = 0
			}
		case sm.ExtremeAction:
			if in.Kind == ir.Float && !feedsArgMax(g, in) && i%3 == 0 {
				v[i] = float64(1 - 2*(i/3%2)) // exactly on the bounds ±1
			}
		}
	}
	if sm.ExtremeLogits {
		extremeLogits(v, in.Shape, g.DType)
	}
	if len(in.Shape) > 0 && (sm.ExtremeTie || sm.ExtremeRows) {
		last := in.Shape[len(in.Shape)-1].Size
		for i := range v {
			switch {
			case sm.ExtremeTie && i%last%2 == 1:
				v[i] = v[i-1] // ties along the last dim
			case sm.ExtremeRows && (i/last)%3 == 1:
				v[i] = 0 // a row with every element cleared
			}
		}
	}
	return v
}

// coherent turns offsets into values (log_prob = sample_log_prob + offset, old_value =
// value + offset) and keeps flags within others (terminated ⊆ done), as environments record
// them.
func coherent(g *ir.Graph, vals map[string][]float64) {
	for _, in := range g.Inputs {
		sm := sample(in.Key)
		v := vals[in.Key]
		if base, ok := vals[sm.Offset]; ok && len(base) == len(v) {
			for i := range v {
				v[i] += base[i]
			}
		}
		if within, ok := vals[sm.Within]; ok && len(within) == len(v) {
			for i := range v {
				v[i] *= within[i]
			}
		}
	}
}

// flagPatterns lays out, one per line along the time dim (cycling), the done/terminated
// situations the estimators must get right: none; a terminal in the middle; a truncation in
// the middle; terminated without done; done on the last step; done at every step.
func flagPatterns(key string, shape ir.Shape, time string) []float64 {
	a := shape.Index(time)
	T, stride := shape[a].Size, shape.Strides()[a]
	v := make([]float64, shape.Numel())
	mid := T / 2
	line := 0
	for start := range v {
		if (start/stride)%T != 0 {
			continue
		}
		set := func(t int, done, term bool) {
			if key == "done" && done || key == "terminated" && term {
				v[start+t*stride] = 1
			}
		}
		switch line % 6 {
		case 1:
			set(mid, true, true)
		case 2:
			set(mid, true, false)
		case 3:
			set(mid, false, true)
		case 4:
			set(T-1, true, true)
		case 5:
			for t := 0; t < T; t++ {
				set(t, true, t%2 == 0)
			}
		}
		line++
	}
	return v
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Stored converts values to the input's storage type, as the kernel receives them.
func Stored(dt ir.DType, in *ir.Input, v []float64) golden.Array {
	shape := in.Shape.Sizes()
	switch in.Kind {
	case ir.Bool:
		b := make([]bool, len(v))
		for i, x := range v {
			b[i] = x != 0
		}
		return golden.Array{Shape: shape, Data: b}
	case ir.Index:
		x := make([]int64, len(v))
		for i, f := range v {
			x[i] = int64(f)
		}
		return golden.Array{Shape: shape, Data: x}
	}
	if dt == ir.F64 {
		return golden.Array{Shape: shape, Data: v}
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return golden.Array{Shape: shape, Data: f}
}

// realCases returns a case for every .npz in dataDir that holds all of g's inputs with
// their shapes (float32 data widens exactly for float64 kernels).
func realCases(g *ir.Graph, dataDir string) ([]golden.Case, error) {
	if dataDir == "" {
		return nil, nil
	}
	files, err := filepath.Glob(filepath.Join(dataDir, "*.npz"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []golden.Case
	for _, f := range files {
		arrays, err := golden.ReadNPZ(f)
		if err != nil {
			return nil, err
		}
		c := golden.Case{Name: "real_" + strings.TrimSuffix(filepath.Base(f), ".npz"), Inputs: map[string]golden.Array{}}
		ok := true
		for _, in := range g.Inputs {
			a, found := arrays[in.Name]
			if !found && in.State {
				// Kernel state the data does not record starts where NewState does.
				c.Inputs[in.Name] = Stored(g.DType, in, []float64{in.Init})
				continue
			}
			if !found || !slices.Equal(a.Shape, in.Shape.Sizes()) {
				ok = false
				break
			}
			conv, err := Convert(g.DType, in, a)
			if err != nil {
				ok = false
				break
			}
			c.Inputs[in.Name] = conv
		}
		if ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// Convert returns a as the storage type of input in: the kernel's float type (float32 data
// widens exactly to float64; float64 data narrows to float32 rounded to nearest, overflowing
// to ±inf, as TorchRL's .to(torch.float32) does), bool flags (bools, or floats that are
// exactly 0 or 1), int64 indices.
func Convert(dt ir.DType, in *ir.Input, a golden.Array) (golden.Array, error) {
	want := dt.String()
	switch in.Kind {
	case ir.Bool:
		want = "bool"
	case ir.Index:
		want = "int64"
	}
	got := a.DType()
	shape := in.Shape.Sizes()
	switch {
	case got == want:
		return golden.Array{Shape: shape, Data: a.Data}, nil
	case want == "float64" && got == "float32":
		return golden.Array{Shape: shape, Data: a.Float64s()}, nil
	case want == "float32" && got == "float64":
		return golden.Array{Shape: shape, Data: narrow(a.Data.([]float64))}, nil
	case want == "bool" && (got == "float32" || got == "float64" || got == "int64"):
		f := a.Float64s()
		b := make([]bool, len(f))
		for i, x := range f {
			if x != 0 && x != 1 {
				return golden.Array{}, fmt.Errorf("%q holds %v at flat index %d; flags must be bool or 0/1", in.Name, x, i)
			}
			b[i] = x == 1
		}
		return golden.Array{Shape: shape, Data: b}, nil
	}
	return golden.Array{}, fmt.Errorf("%q has dtype %s, want %s", in.Name, got, want)
}

// narrow rounds each value to the nearest float32 (Go's conversion: ties to even, out of
// range to ±inf, NaN kept), as a float64 tensor's .to(torch.float32) does.
func narrow(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// Want runs the interpreter on a case's inputs and fills its expected outputs (float64).
func Want(g *ir.Graph, c *golden.Case) error {
	inputs := map[string]*tensor.Dense{}
	for _, in := range g.Inputs {
		a, ok := c.Inputs[in.Name]
		if !ok {
			return fmt.Errorf("case %s: no input %q", c.Name, in.Name)
		}
		inputs[in.Name] = interp.New(in.Shape, a.Float64s())
	}
	outs, err := interp.Run(g, inputs)
	if err != nil {
		return fmt.Errorf("case %s: %w", c.Name, err)
	}
	c.Want = map[string]golden.Array{}
	for _, o := range g.Outputs {
		c.Want[o.Name] = golden.Array{Shape: o.Node.Shape.Sizes(), Data: interp.Data(outs[o.Name])}
	}
	return nil
}

// Update writes the cases into dir and removes the case files of Build's that it no longer
// produces; other files in dir are left alone.
func Update(dir string, cs []golden.Case) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, c := range cs {
		if err := golden.WriteCase(dir, c); err != nil {
			return err
		}
		keep[c.Name+golden.InSuffix] = true
		keep[c.Name+golden.WantSuffix] = true
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.npz"))
	for _, f := range old {
		if base := filepath.Base(f); !keep[base] && ownCaseFile(base) {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// ownCaseFile reports whether a file name is one Build's cases use (random, flags, extreme,
// real_<data>; .in.npz or .want.npz): Update removes such files when a spec no longer
// produces them, and never touches any other file (a user's own case, or data).
func ownCaseFile(base string) bool {
	name, ok := strings.CutSuffix(base, golden.InSuffix)
	if !ok {
		name, ok = strings.CutSuffix(base, golden.WantSuffix)
	}
	return ok && (name == "random" || name == "flags" || name == "extreme" || strings.HasPrefix(name, "real_"))
}

// Check compares the cases with those stored in dir: inputs must be identical and expected
// outputs equal within 1e-12 relative (float64 math libraries may differ in the last bit
// across platforms). It returns one line per difference.
func Check(dir string, cs []golden.Case) ([]string, error) {
	stored, err := golden.LoadCases(dir)
	if err != nil {
		return nil, err
	}
	byName := map[string]golden.Case{}
	for _, c := range stored {
		byName[c.Name] = c
	}
	var diffs []string
	for _, c := range cs {
		s, ok := byName[c.Name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s: case %s is missing", dir, c.Name))
			continue
		}
		delete(byName, c.Name)
		for name, a := range c.Inputs {
			b, ok := s.Inputs[name]
			if !ok || !slices.Equal(a.Shape, b.Shape) || a.DType() != b.DType() || !sameBits(a.Float64s(), b.Float64s()) {
				diffs = append(diffs, fmt.Sprintf("%s: case %s: input %s differs", dir, c.Name, name))
			}
		}
		for name, a := range c.Want {
			b, ok := s.Want[name]
			if !ok || !slices.Equal(a.Shape, b.Shape) {
				diffs = append(diffs, fmt.Sprintf("%s: case %s: output %s missing or reshaped", dir, c.Name, name))
				continue
			}
			if d := golden.Compare(b.Float64s(), a.Float64s(), golden.Tol{Abs: 1e-300, Rel: 1e-12}); d.Bad > 0 {
				diffs = append(diffs, fmt.Sprintf("%s: case %s: output %s differs at %d elements (max rel %.3g)", dir, c.Name, name, d.Bad, d.MaxRel))
			}
		}
	}
	for name := range byName {
		diffs = append(diffs, fmt.Sprintf("%s: case %s is not produced any more", dir, name))
	}
	sort.Strings(diffs)
	return diffs, nil
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// tiesAtBounds puts some log-weights exactly on the clip bounds (log_prob = bound,
// sample_log_prob = 0, so log_prob − sample_log_prob is the bound with no rounding): the
// kinks whose gradient rule (§11.5) only exact ties exercise. The bounds are the constants
// the graph clamps log_prob − sample_log_prob to.
func tiesAtBounds(g *ir.Graph, vals map[string][]float64) {
	lp, old := vals["log_prob"], vals["sample_log_prob"]
	if lp == nil || old == nil || len(lp) != len(old) {
		return
	}
	var bounds []float64
	for _, n := range g.Nodes {
		if (n.Op == ir.OpMin || n.Op == ir.OpMax) && n.TieFirst && len(n.Args) == 2 && n.Args[1].IsScalarConst() && isLogWeight(n.Args[0]) {
			bounds = append(bounds, n.Args[1].Value[0])
		}
	}
	for k, b := range bounds {
		for i := 2 + 4*k; i < len(lp); i += 4 * (len(bounds) + 1) {
			lp[i], old[i] = b, 0
		}
	}
}

// isLogWeight reports whether n is log_prob − sample_log_prob, or a clamp of it.
func isLogWeight(n *ir.Node) bool {
	if (n.Op == ir.OpMin || n.Op == ir.OpMax) && n.TieFirst {
		return isLogWeight(n.Args[0])
	}
	return n.Op == ir.OpSub && n.Args[0].Op == ir.OpInput && n.Args[0].Input.Key == "log_prob" &&
		n.Args[1].Op == ir.OpInput && n.Args[1].Input.Key == "sample_log_prob"
}
