package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Limits a spec must stay within, so that every backend can generate its kernels (each is
// reported at the key that exceeds it, naming the limit).
const (
	// MaxElements is the largest batch a kernel takes: 2^31 − 1 elements, so every index fits
	// the signed 32-bit arithmetic of the PTX kernels. The same bounds every other tensor
	// (logits [*batch, A], an ensemble [Q, *batch]), which package gen checks once lowering
	// has given each its shape.
	MaxElements = 1<<31 - 1
	// MaxBatchRank is the most batch dims: each is a loop counter held in a general-purpose
	// register of the AVX2 kernels.
	MaxBatchRank = 6
	// MaxDims is the most dims a spec declares.
	MaxDims = 16
	// MaxNameLen bounds the package name, dim names and key parts: they become file names,
	// Go identifiers and .npz entry names.
	MaxNameLen = 64
	// MaxKeyDepth bounds a nested key's parts.
	MaxKeyDepth = 4
)

// validate applies the defaults that depend on more than one key and checks the spec as a
// whole. Errors are positioned at the value at fault, or at the mapping that lacks a key.
//
// It runs after decoding errors too, so that one run reports every independent error, and
// skips only what an earlier error makes meaningless: a check of a dim that failed to
// decode, the stages' checks when the dims or the batch are unusable (they lay tensors out
// along them), a stage's check when one of its parameters failed (it would see the default
// in place of what the spec wrote), and the loss's and the estimator's checks when the
// other failed to decode (each reads whether the other is there).
func (d *decoder) validate(s *Spec, root *yaml.Node) {
	rootPos := Pos{File: d.file, Line: root.Line, Col: root.Column}
	at := func(path string) Pos {
		if p, ok := d.pos[path]; ok {
			return p
		}
		return rootPos
	}
	errAt := func(path string, msg string) { d.errs = append(d.errs, &Error{Pos: at(path), Msg: msg}) }

	// batch: declared, distinct dims.
	if len(s.Batch) == 0 && d.batchOK {
		errAt("batch", "batch: at least one batch dim is needed, e.g. [N, T] or [B]")
	}
	if len(s.Batch) > MaxBatchRank {
		errAt("batch", "batch: "+itoa(len(s.Batch))+" dims; a kernel takes at most "+itoa(MaxBatchRank)+" batch dims (merge some: the kernels are specialised for fixed sizes anyway)")
	}
	if len(s.Dims) > MaxDims {
		errAt("dims", "dims: "+itoa(len(s.Dims))+" dims; a spec declares at most "+itoa(MaxDims))
	}
	layoutOK := d.dimsOK && d.batchOK && len(s.Batch) > 0
	seen := map[string]bool{}
	for i, b := range s.Batch {
		p := "batch[" + itoa(i) + "]"
		if s.DimSize(b) == 0 {
			layoutOK = false
			if d.dimsOK && !d.badDims[b] {
				errAt(p, p+": "+quote(b)+" is not a dim declared under dims "+allowedFor(b, dimNames(s)))
			}
		}
		if seen[b] {
			layoutOK = false
			errAt(p, p+": "+quote(b)+" appears twice")
		}
		seen[b] = true
	}

	if layoutOK {
		if msg := batchOrderWarning(s); msg != "" {
			d.warns = append(d.warns, &Error{Pos: at("batch"), Msg: "warning: " + msg})
		}
	}
	if s.Estimator == nil && s.Loss == nil && len(s.Transforms) == 0 && len(d.failed) == 0 {
		errAt("", "the spec needs a loss, an estimator or a transform")
	}
	numel := 1
	for _, n := range s.BatchShape() {
		if n > 0 && numel > MaxElements/n {
			errAt("batch", "batch: "+strings.Join(s.Batch, "×")+" holds more than "+itoa(MaxElements)+" elements, the most a kernel indexes (32-bit GPU thread indices); split the batch")
			break
		}
		numel *= max(n, 1)
	}
	d.resolveKeys(s)

	// The stages' own checks need the layout and the dtypes; TorchRL's spellings that depend
	// on them (an integer time_dim, a linspace support) are resolved first, for every stage.
	checks := layoutOK && !d.broken["dtype"] && !d.broken["param_dtype"]
	usable := map[*Stage]bool{}
	for _, st := range s.Stages() {
		usable[st] = checks && d.resolve(s, st)
	}
	// The loss first (it may imply an estimator: IQL's TD(0) target), then the estimator (its
	// defaults depend on whether a loss builds it), then the transforms.
	check := func(st *Stage, otherFailed bool) {
		d.stageParams(s, st)
		if st.Def.Check != nil && usable[st] && !otherFailed {
			st.Def.Check(&Check{Spec: s, Stage: st, Registry: d.reg, d: d})
		}
	}
	if s.Loss != nil {
		check(s.Loss, d.failed[Estimator])
	}
	if s.Estimator != nil {
		if _, ok := usable[s.Estimator]; !ok { // implied by the loss's check
			usable[s.Estimator] = true
		}
		check(s.Estimator, d.failed[Loss])
	}
	for _, st := range s.Transforms {
		check(st, false)
	}
	for _, a := range d.ignored {
		d.ignoredArg(s, a, usable[a.st])
	}
}

// ignoredArg is a StageDef.Ignored argument a stage's mapping wrote.
type ignoredArg struct {
	st   *Stage
	def  *ParamDef
	path string
	pos  Pos
	v    any // the value written
}

// ignoredArg reports a written Ignored argument: a note that it has no effect here and why,
// or, where its Refuse says that it matters for the stage as configured, that error. Refuse
// runs only on a stage whose parameters all decoded and whose check ran (checked).
func (d *decoder) ignoredArg(s *Spec, a ignoredArg, checked bool) {
	if a.def.Refuse != nil {
		if !checked {
			return
		}
		if why := a.def.Refuse(s, a.st, a.v); why != "" {
			d.errs = append(d.errs, &Error{Pos: a.pos, Msg: a.path + ": " + why})
			return
		}
	}
	d.notes = append(d.notes, &Error{Pos: a.pos, Msg: "note: " + a.path + ": no effect here: " + a.def.Doc})
}

// resolve turns the TorchRL spellings of st's parameters that need the whole spec into
// their canonical values (DimIndex, DimSize, LinspaceDim). It reports whether every parameter of st
// is usable: none failed to decode or to resolve.
func (d *decoder) resolve(s *Spec, st *Stage) bool {
	ok := true
	for i := range st.Def.Params {
		p := &st.Def.Params[i]
		if d.broken[st.Path+"."+p.Name] {
			ok = false
			continue
		}
		if !d.resolveDimIndex(s, st, p) || !d.resolveDimSize(s, st, p) || !d.resolveLinspace(s, st, p) {
			d.broken[st.Path+"."+p.Name] = true
			ok = false
		}
	}
	return ok
}

// stageParams checks what every stage's parameters need beyond their own types: a dim name
// names a declared dim; a number the kernel bakes in fits its float type.
func (d *decoder) stageParams(s *Spec, st *Stage) {
	limit := math.MaxFloat64
	if s.DType == Float32 || s.ParamDType == Float32 {
		limit = math.MaxFloat32
	}
	for _, p := range st.Def.Params {
		v := st.Values[p.Name]
		if !v.Written {
			continue
		}
		path := st.Path + "." + p.Name
		if p.Type == DimName {
			if name, ok := v.V.(string); ok && s.DimSize(name) == 0 && d.dimsOK && !d.badDims[name] {
				d.errs = append(d.errs, &Error{Pos: v.Pos, Msg: path + ": " + quote(name) + " is not a dim declared under dims " + allowedFor(name, dimNames(s)) +
					"; declare it there with its size (" + name + ": <size>)"})
			}
			continue
		}
		if d.broken["dtype"] || d.broken["param_dtype"] {
			continue
		}
		var nums []float64
		switch x := v.V.(type) {
		case float64:
			nums = []float64{x}
		case []float64:
			nums = x
		case map[string]float64:
			for _, y := range x {
				nums = append(nums, y)
			}
		case linspaceArgs: // unresolved: the spec has errors that stop the checks
			nums = []float64{x.start, x.end}
		}
		for _, x := range nums {
			if math.Abs(x) > limit {
				d.errs = append(d.errs, &Error{Pos: v.Pos, Msg: path + ": " + strconv.FormatFloat(x, 'g', -1, 64) + " does not fit the float32 the kernel holds it in (largest 3.4028235e+38); TorchRL would hold inf"})
			}
		}
	}
}

// KeyWritten reports whether the spec maps the logical key k under keys (rather than taking
// TorchRL's default).
func (s *Spec) KeyWritten(k string) bool {
	_, ok := s.pos["keys."+k]
	return ok
}

func dimNames(s *Spec) []string {
	var out []string
	for _, d := range s.Dims {
		out = append(out, d.Name)
	}
	return out
}

func quote(s string) string { return "\"" + s + "\"" }

func itoa(i int) string { return strconv.Itoa(i) }

// batchOrderWarning is the warning when batch lists its dims in another order than dims declares them:
// tensors are laid out in the order of dims whatever batch's order, so a user who wrote
// batch: [T, N] for a time-major [T, N] tensor, with dims {N, T}, gets [N, T] (and an
// integer time_dim counts in that order too).
func batchOrderWarning(s *Spec) string {
	in := map[string]bool{}
	for _, b := range s.Batch {
		in[b] = true
	}
	var layout []string
	for _, d := range s.Dims {
		if in[d.Name] {
			layout = append(layout, d.Name)
		}
	}
	if strings.Join(layout, ",") != strings.Join(s.Batch, ",") {
		return fmt.Sprintf("batch: [%s] lists its dims in another order than dims declares them; tensors are laid out in the order of dims, [%s], whatever batch's order (an integer time_dim counts in that order too): to mean [%s], declare dims in that order",
			strings.Join(s.Batch, ", "), strings.Join(layout, ", "), strings.Join(s.Batch, ", "))
	}
	return ""
}
