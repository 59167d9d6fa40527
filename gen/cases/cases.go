// Package cases builds the golden cases of a generated package — seeded random inputs,
// hand-shaped edge cases and the real recorded data shipped in golden/data — runs the
// reference interpreter on them, and writes or checks golden/<package>/.
//
// Inputs are made by logical key (ir.Input.Key), so a spec that renames its data keys gets
// the same values under its own names.
package cases

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gorgonia.org/tensor"

	"github.com/lossgen/lossgen/gen/dirtx"
	"github.com/lossgen/lossgen/gen/interp"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	goldenw "github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/runtime"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/spec"
)

// Build returns the input-only cases for g: "random", "flags" (when the graph has done
// flags), "extreme" (when a key asks for one: log-probabilities, rewards, advantages), and
// "real_<file>" for every .npz in dataDir holding all of g's inputs at its shapes. The seeded
// cases carry their recipe (Recipe) and inputs drawn from it by lossgen's runtime generator,
// the one implementation of each key's registry Sample (spec.Sample) that the generated
// tests draw with too.
func Build(g *ir.Graph, pkg, dataDir string) ([]golden.Case, error) {
	cs, _, err := BuildData(g, pkg, dataDir)
	return cs, err
}

// Skip is a data file Build made no case of, and why.
type Skip struct{ File, Why string }

// BuildData is Build, which also returns the .npz files in dataDir it made no case of.
func BuildData(g *ir.Graph, pkg, dataDir string) ([]golden.Case, []Skip, error) {
	var out []golden.Case
	add := func(name string, mode func(in *ir.Input) string) error {
		r := Recipe(g, pkg, name, mode)
		vals, sums, err := r.Draw()
		if err != nil {
			return err
		}
		c := golden.Case{Name: name, Inputs: map[string]golden.Array{}, Recipe: r}
		for i, in := range r.Inputs {
			r.Inputs[i].Checksum = sums[i]
			c.Inputs[in.Name] = golden.Array{Shape: append([]int{}, in.Shape...), Data: vals[in.Name]}
		}
		out = append(out, c)
		return nil
	}
	if err := add("random", func(*ir.Input) string { return "" }); err != nil {
		return nil, nil, err
	}
	if has(g, "done") {
		err := add("flags", func(in *ir.Input) string {
			if in.Key == "done" || in.Key == "terminated" {
				return "pattern"
			}
			return ""
		})
		if err != nil {
			return nil, nil, err
		}
	}
	extremeKeys := false
	for _, in := range g.Inputs {
		sm := sample(in.Key)
		extremeKeys = extremeKeys || sm.ExtremeLog || sm.ExtremeBig || sm.ExtremeNil || sm.ExtremeLogits || sm.ExtremeAction ||
			sm.ExtremeTie || sm.ExtremeRows
	}
	if extremeKeys {
		if err := add("extreme", func(*ir.Input) string { return "extreme" }); err != nil {
			return nil, nil, err
		}
	}
	real, skips, err := realCases(g, dataDir)
	if err != nil {
		return nil, nil, err
	}
	return append(out, real...), skips, nil
}

// Recipe is the recipe of seeded case name of package pkg: every input of g drawn as its
// key's registry entry says (spec.Sample), in the variant mode gives it ("", "extreme" or
// "pattern"), from the seed FNV-1a("<pkg>/<name>"). Checksums are left empty.
func Recipe(g *ir.Graph, pkg, name string, mode func(in *ir.Input) string) *runtime.CaseRecipe {
	r := &runtime.CaseRecipe{Format: runtime.GoldenFormat, Generator: runtime.GeneratorName, Case: name,
		Seed: seed(pkg, name), DType: g.DType.String()}
	tAxis := timeDim(g)
	for _, in := range g.Inputs {
		rec := runtime.InputRecipe{Name: in.Name, Key: in.Key, Kind: "float", Shape: in.Shape.Sizes(),
			Mode: mode(in), Sample: sample(in.Key)}
		switch in.Kind {
		case ir.Bool:
			rec.Kind = "bool"
		case ir.Index:
			rec.Kind, rec.IndexRange = "index", IndexRange(g, in)
		}
		sm := &rec.Sample
		switch {
		case in.State:
			// Kernel state starts where the package's NewState does.
			rec.Mode, rec.Sample = "", runtime.Sample{Dist: "const", Mean: in.Init}
		case sm.Dist == "action" && in.Kind == ir.Index:
			sm.Dist = "index" // a categorical action: an index along the axis it selects
		case in.Kind != ir.Index && len(in.Shape) > 0 && (sm.Dist == "index" || sm.Dist == "action" && (in.Kind == ir.Bool || feedsArgMax(g, in))):
			// A one-hot action (stored as flags, or as floats an argmax reads).
			sm.Dist, rec.IndexRange = "onehot", in.Shape[len(in.Shape)-1].Size
		case sm.Dist == "action":
			sm.Dist, sm.Lo, sm.Hi = "uniform", -1, 1 // a point of (−1, 1): normal and tanh_normal actions
		}
		if sm.Dist != "uniform" || in.Kind != ir.Float {
			sm.ExtremeAction = false // only continuous actions sit on the bounds ±1
		}
		if rec.Mode == "pattern" {
			rec.TimeAxis = max(in.Shape.Index(tAxis), 0)
		}
		r.Inputs = append(r.Inputs, rec)
	}
	if name == "extreme" {
		tiesAtBounds(g, r)
	}
	return r
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

// tiesAtBounds pins some log-weights exactly on the clip bounds (log_prob = bound,
// sample_log_prob = 0, so log_prob − sample_log_prob is the bound with no rounding): the
// kinks whose gradient rule (§11.5) only exact ties exercise. The bounds are the constants
// the graph clamps log_prob − sample_log_prob to.
func tiesAtBounds(g *ir.Graph, r *runtime.CaseRecipe) {
	var lp, old *runtime.InputRecipe
	for i := range r.Inputs {
		switch r.Inputs[i].Key {
		case "log_prob":
			lp = &r.Inputs[i]
		case "sample_log_prob":
			old = &r.Inputs[i]
		}
	}
	if lp == nil || old == nil || lp.Len() != old.Len() {
		return
	}
	var bounds []float64
	for _, n := range g.Nodes {
		if (n.Op == ir.OpMin || n.Op == ir.OpMax) && n.TieFirst && len(n.Args) == 2 && n.Args[1].IsScalarConst() && isLogWeight(n.Args[0]) {
			bounds = append(bounds, n.Args[1].Value[0])
		}
	}
	if len(bounds) > 0 {
		lp.Pins, old.Pins = bounds, make([]float64, len(bounds))
	}
}

// isLogWeight reports whether n is log_prob − sample_log_prob, or a clamp of it.
func isLogWeight(n *ir.Node) bool {
	if (n.Op == ir.OpMin || n.Op == ir.OpMax) && n.TieFirst {
		return isLogWeight(n.Args[0])
	}
	return n.Op == ir.OpSub && isInput(n.Args[0], "log_prob") && isInput(n.Args[1], "sample_log_prob")
}

// isInput reports whether n is the input of key, or (a loss with a mask) its valid elements,
// where(mask, input, pad).
func isInput(n *ir.Node, key string) bool {
	if n.Op == ir.OpWhere && n.Args[0].Op == ir.OpInput && n.Args[0].Input.Key == "mask" {
		n = n.Args[1]
	}
	return n.Op == ir.OpInput && n.Input.Key == key
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

// IndexRange is the extent of the axis an index input selects along (the smallest, if it
// feeds several gathers), 1 if none.
func IndexRange(g *ir.Graph, in *ir.Input) int {
	for _, c := range ir.IndexChecks(g) {
		if c.Input == in {
			return c.Size
		}
	}
	return 1
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
// their shapes (float32 data widens exactly for float64 kernels), and the files it skipped.
func realCases(g *ir.Graph, dataDir string) ([]golden.Case, []Skip, error) {
	if dataDir == "" {
		return nil, nil, nil
	}
	files, err := filepath.Glob(filepath.Join(dataDir, "*.npz"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(files)
	var out []golden.Case
	var skips []Skip
	for _, f := range files {
		arrays, err := golden.ReadNPZ(f)
		if err != nil {
			// Not an .npz lossgen can read (corrupt, empty, a directory): a data problem of
			// that file alone, named with the others.
			skips = append(skips, Skip{File: f, Why: "unreadable: " + strings.TrimPrefix(err.Error(), f+": ")})
			continue
		}
		c := golden.Case{Name: "real_" + strings.TrimSuffix(filepath.Base(f), ".npz"), Inputs: map[string]golden.Array{}}
		why := ""
		for _, in := range g.Inputs {
			a, found := arrays[in.Name]
			if !found && in.State {
				// Kernel state the data does not record starts where NewState does.
				c.Inputs[in.Name] = Stored(g.DType, in, []float64{in.Init})
				continue
			}
			if !found {
				why = fmt.Sprintf("no array %q", in.Name)
				break
			}
			want := in.Shape.Sizes()
			if len(a.Shape) == len(want)+1 && a.Shape[len(want)] == 1 {
				a.Shape = want // TorchRL's trailing singleton dim, [*batch, 1], as eval reads it
			}
			if !slices.Equal(a.Shape, want) {
				why = fmt.Sprintf("%q has shape %v, the spec's is %v", in.Name, a.Shape, want)
				break
			}
			conv, err := Convert(g.DType, in, a)
			if err != nil {
				why = err.Error()
				break
			}
			c.Inputs[in.Name] = conv
		}
		if why == "" {
			why = indexOutOfRange(g, c.Inputs)
		}
		if why != "" {
			skips = append(skips, Skip{File: f, Why: why})
			continue
		}
		out = append(out, c)
	}
	return out, skips, nil
}

// indexOutOfRange says which index input holds a value outside its axis where the kernels
// check it (ir.IndexChecks: at valid elements only when a mask selects it), as Forward
// would report it; "" when none does.
func indexOutOfRange(g *ir.Graph, inputs map[string]golden.Array) string {
	for _, ck := range ir.IndexChecks(g) {
		vals, _ := inputs[ck.Input.Name].Data.([]int64)
		var valid []bool
		if ck.Valid != nil {
			valid, _ = inputs[ck.Valid.Name].Data.([]bool)
		}
		for i, v := range vals {
			if v >= 0 && v < int64(ck.Size) {
				continue
			}
			if valid != nil && len(valid) == len(vals) && valid[i] == ck.Negate {
				continue // padding: never read
			}
			return fmt.Sprintf("%q holds %d at element %d, outside [0, %d) (Forward would return an IndexError)", ck.Input.Name, v, i, ck.Size)
		}
	}
	return ""
}

// Convert returns a as the storage type of input in: the kernel's float type (float32 data
// widens exactly to float64; float64 data narrows to float32 rounded to nearest, overflowing
// to ±inf, as TorchRL's .to(torch.float32) does), bool flags (bools, or floats that are
// exactly 0 or 1), int64 indices (any integer array: golden.NPZ.Read widens them to int64;
// a float array is an error).
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
	case want == "int64" && got == "bool": // a uint8 array of 0/1 (golden.NPZ.Read reads it as flags)
		f := a.Float64s()
		x := make([]int64, len(f))
		for i, v := range f {
			x[i] = int64(v)
		}
		return golden.Array{Shape: shape, Data: x}, nil
	case want == "int64":
		return golden.Array{}, fmt.Errorf("%q has dtype %s: an index input must be an integer array (int8 to int64, uint8 to uint64), as TorchRL's int64 actions are; convert it with .astype(np.int64)", in.Name, got)
	}
	if got == "int64" { // golden.NPZ.Read widens every integer dtype to int64
		return golden.Array{}, fmt.Errorf("%q has an integer dtype, want %s; convert it with .astype(np.%s)", in.Name, want, want)
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

// Update is UpdateContext that cannot be interrupted and reports only failure.
func Update(dir string, cs []golden.Case) error {
	_, err := UpdateContext(context.Background(), dir, cs)
	return err
}

// UpdateContext writes the cases into dir and removes the case files Build makes that cs
// does not hold (ownCaseFile), including a seeded case's files in an older golden format
// (its stored inputs); other files in dir are left alone. It does so as one transaction
// (dirtx.Apply): every file changes or, if anything fails (a full disk) or ctx ends first,
// none does. A write cut short by a killed process is undone (or finished) first, as
// Result.Repaired says.
func UpdateContext(ctx context.Context, dir string, cs []golden.Case) (dirtx.Result, error) {
	// Resolve a cut-short write first: the files it moved aside count among the stale ones.
	repaired, err := dirtx.Recover(dir)
	if err != nil {
		return dirtx.Result{Repaired: repaired}, err
	}
	put := map[string][]byte{}
	for _, c := range cs {
		files, err := goldenw.CaseFiles(c)
		if err != nil {
			return dirtx.Result{Repaired: repaired}, fmt.Errorf("%s: %w", dir, err)
		}
		maps.Copy(put, files)
	}
	var del []string
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return dirtx.Result{Repaired: repaired}, err
	}
	for _, e := range es {
		if _, keep := put[e.Name()]; !keep && e.Type().IsRegular() && ownCaseFile(e.Name()) {
			del = append(del, e.Name())
		}
	}
	res, err := dirtx.Apply(ctx, dir, put, del)
	res.Repaired = append(repaired, res.Repaired...)
	return res, err
}

// ownCaseFile reports whether a file name is one Build's cases use (random, flags, extreme,
// real_<data>; .in.npz, .in.json or .want.npz): Update removes such files when a spec no
// longer produces them, and never touches any other file (a user's own case, or data).
func ownCaseFile(base string) bool {
	name, ok := "", false
	for _, suf := range []string{golden.InSuffix, golden.RecipeSuffix, golden.WantSuffix} {
		if n, cut := strings.CutSuffix(base, suf); cut {
			name, ok = n, true
		}
	}
	return ok && ownCase(name)
}

// ownCase reports whether a case name is one Build makes (random, flags, extreme, real_<data>):
// any other case in a golden directory is the user's.
func ownCase(name string) bool { return golden.IsSeeded(name) || strings.HasPrefix(name, "real_") }

// Foreign says how the cases lossgen wrote into dir (random, flags, extreme, real_*) show
// they are another spec's, or "" when they could be g's (or dir holds none): a case input g
// does not have, or one with another number of elements; and it reports a write into dir
// that was cut short (the next golden -update or generate on dir resolves it). Two specs of
// one module that share a package name share their golden directory, and each -update
// replaces the other's cases.
func Foreign(dir string, g *ir.Graph) string {
	if dirtx.Pending(dir) {
		return fmt.Sprintf("%s: a write was cut short (%s): the next lossgen golden -update on it undoes or finishes it", dir, dirtx.TxnDir)
	}
	stored, err := golden.OpenCases(dir)
	if err != nil {
		return "" // none, or unreadable: golden -update replaces its own, Check reports the rest
	}
	lens := map[string]int{}
	for _, in := range g.Inputs {
		lens[in.Name] = in.Shape.Numel()
	}
	for _, c := range stored {
		if !ownCase(c.Name) {
			continue // a user's own case: its extra arrays are allowed, and -update keeps it
		}
		got := map[string]int{}
		if c.Recipe != nil {
			for _, ri := range c.Recipe.Inputs {
				got[ri.Name] = ri.Len()
			}
		} else {
			for name, a := range c.Inputs {
				got[name] = a.Len()
			}
		}
		for _, name := range slices.Sorted(maps.Keys(got)) {
			n, ok := lens[name]
			switch {
			case !ok:
				return fmt.Sprintf("%s: case %s has an input %q that the spec does not have: the cases are another spec's", dir, c.Name, name)
			case n != got[name]:
				return fmt.Sprintf("%s: case %s's input %q has %d elements, the spec's %d: the cases are another spec's", dir, c.Name, name, got[name], n)
			}
		}
	}
	return ""
}

// Check compares the cases with those stored in dir: a seeded case's recipe must be the one
// Build makes, a stored-input case's inputs identical, and expected outputs (whole, or
// their summaries) equal within 1e-12 relative (float64 math libraries may differ in the
// last bit across platforms). A seeded case stored in an older golden format is reported as
// such. It compacts the seeded cases (golden.Case.Compact). It returns one line per
// difference.
func Check(dir string, cs []golden.Case) ([]Difference, error) {
	stale, err := goldenw.StaleFormat(dir)
	if err != nil {
		return nil, err
	}
	stored, err := golden.OpenCases(dir)
	if err != nil {
		if len(stale) > 0 {
			return texts(stale), nil
		}
		return nil, err
	}
	byName := map[string]golden.Case{}
	for _, c := range stored {
		byName[c.Name] = c
	}
	diffs := texts(stale)
	staleCase := map[string]bool{}
	for _, name := range golden.SeededCases {
		for _, line := range stale {
			if strings.HasPrefix(line, filepath.Join(dir, name)+".") {
				staleCase[name] = true
			}
		}
	}
	tol := golden.Tol{Abs: 1e-300, Rel: 1e-12}
	for _, c := range cs {
		s, ok := byName[c.Name]
		if !ok {
			diffs = append(diffs, Difference{Case: c.Name, Text: fmt.Sprintf("%s: case %s is missing", dir, c.Name)})
			continue
		}
		delete(byName, c.Name)
		if staleCase[c.Name] {
			continue
		}
		if c.Recipe != nil {
			a, _ := json.Marshal(c.Recipe)
			b, _ := json.Marshal(s.Recipe)
			if !bytes.Equal(a, b) {
				diffs = append(diffs, Difference{Case: c.Name, Text: fmt.Sprintf("%s: case %s: the recipe (seed, samples, shapes or checksums of the inputs) differs", dir, c.Name)})
			}
		} else {
			for name, a := range c.Inputs {
				b, ok := s.Inputs[name]
				if !ok || !slices.Equal(a.Shape, b.Shape) || a.DType() != b.DType() || !sameBits(a.Float64s(), b.Float64s()) {
					diffs = append(diffs, Difference{Case: c.Name, Text: fmt.Sprintf("%s: case %s: input %s differs", dir, c.Name, name)})
				}
			}
		}
		c.Compact()
		for name, sum := range c.Summary {
			stored, ok := s.Summary[name]
			if !ok {
				diffs = append(diffs, Difference{Case: c.Name, Output: name, Text: fmt.Sprintf("%s: case %s: output %s missing or reshaped", dir, c.Name, name)})
				continue
			}
			for _, d := range stored.Equal(sum, tol) {
				diffs = append(diffs, Difference{Case: c.Name, Output: name, Values: d.Bad, MaxRel: d.MaxRel,
					Text: fmt.Sprintf("%s: case %s: output %s: %s", dir, c.Name, name, d)})
			}
		}
		for name, a := range c.Want {
			b, ok := s.Want[name]
			if !ok || !slices.Equal(a.Shape, b.Shape) {
				diffs = append(diffs, Difference{Case: c.Name, Output: name, Text: fmt.Sprintf("%s: case %s: output %s missing or reshaped", dir, c.Name, name)})
				continue
			}
			if d := golden.Compare(b.Float64s(), a.Float64s(), tol); d.Bad > 0 {
				diffs = append(diffs, Difference{Case: c.Name, Output: name, Values: d.Bad, MaxRel: d.MaxRel,
					Text: fmt.Sprintf("%s: case %s: output %s differs at %d elements (max rel %.3g)", dir, c.Name, name, d.Bad, d.MaxRel)})
			}
		}
	}
	for name := range byName {
		if golden.IsSeeded(name) || strings.HasPrefix(name, "real_") { // a user's own case is theirs
			diffs = append(diffs, Difference{Case: name, Text: fmt.Sprintf("%s: case %s is not produced any more", dir, name)})
		}
	}
	slices.SortFunc(diffs, func(a, b Difference) int { return strings.Compare(a.Text, b.Text) })
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
