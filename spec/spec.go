// Package spec reads a lossgen spec file: one YAML document that describes one generated
// package (a loss, the advantage estimator that feeds it, transforms, keys and fixed shapes).
//
// Key names follow TorchRL's constructor arguments and set_keys names (clip_epsilon, lmbda,
// sample_log_prob, value_target, reduction ...), so a TorchRL user can write a spec from memory;
// TorchRL's other spellings the Registry declares (a class name as the type, a deprecated
// argument name, an integer time_dim, a linspace support, a <key>_key argument) read as the
// canonical ones, with a note (Spec.Notes) where TorchRL deprecates the spelling; TorchRL
// arguments that change nothing the kernel computes (functional, device, ...) are accepted
// with a note that says why (docs/SEMANTICS.md §11.21).
// Parsing is strict: unknown keys, wrong types and impossible values are errors, and every
// error reads "FILE:LINE:COL: message" naming the key and the allowed values; one Parse
// reports every independent error of the file (ErrorList). Defaults are
// TorchRL v0.11.0's (docs/SEMANTICS.md §7), applied by Parse. The losses, estimators and
// transforms a spec can name, with their parameters, come from a Registry (gen/lower's).
package spec

import "fmt"

// DType is the element type of a generated kernel's floating-point tensors.
type DType string

// The supported kernel element types.
const (
	Float32 DType = "float32"
	Float64 DType = "float64"
)

// Dim is one named, fixed extent (N trajectories, T time steps, B minibatch, ...).
type Dim struct {
	Name string
	Size int
	Pos  Pos
}

// Spec is a parsed, defaulted and validated spec file.
type Spec struct {
	File    string // path as given to Parse; used in every diagnostic
	Package string // Go package name of the generated code
	DType   DType
	// ParamDType is how hyper-parameters are held (SEMANTICS.md §11.14): float32 (TorchRL's
	// default-dtype tensors, so a float64 batch still sees float32-rounded coefficients where
	// TorchRL rounds them) or float64.
	ParamDType DType
	Dims       []Dim    // in file order
	Batch      []string // batch dims, outermost first

	Transforms []*Stage // applied first, in order
	Estimator  *Stage   // nil: advantage and value_target are kernel inputs
	Loss       *Stage   // nil: a standalone estimator or transform kernel

	// Keys maps each logical key (TorchRL's tensor_keys names plus lossgen's network-output
	// names) to the nested data key; nil means "absent from the data".
	Keys map[string][]string

	// Warnings are non-fatal diagnostics (TorchRL behaviours a user may not expect).
	Warnings []*Error
	// Notes name the canonical spelling of each deprecated TorchRL spelling the spec used
	// ("note: loss.entropy_coef: …; write entropy_coeff") and say why each value-neutral
	// TorchRL argument has no effect, by position. They change nothing in the Spec, which is
	// the canonical spelling's.
	Notes []*Error

	pos map[string]Pos // "loss.clip_epsilon" -> position of its value, for later diagnostics
}

// Stages lists the configured stages in the order they run: transforms, estimator, loss.
func (s *Spec) Stages() []*Stage {
	out := append([]*Stage(nil), s.Transforms...)
	if s.Estimator != nil {
		out = append(out, s.Estimator)
	}
	if s.Loss != nil {
		out = append(out, s.Loss)
	}
	return out
}

// Warnf adds a warning positioned at a spec path (lowering's warnings: keys and dims the
// kernel does not use).
func (s *Spec) Warnf(path, format string, args ...any) {
	s.Warnings = append(s.Warnings, &Error{Pos: s.PosOf(path), Msg: "warning: " + fmt.Sprintf(format, args...)})
}

// Diagnostics returns the notes and warnings together, sorted by position: what lossgen's
// commands print on stderr for a spec that parsed.
func (s *Spec) Diagnostics() []*Error {
	return append(append(ErrorList(nil), s.Notes...), s.Warnings...).sortDedup()
}

// DimSize returns the extent of the named dim, or 0 when there is none.
func (s *Spec) DimSize(name string) int {
	for _, d := range s.Dims {
		if d.Name == name {
			return d.Size
		}
	}
	return 0
}

// BatchShape returns the extents of the batch dims, outermost first.
func (s *Spec) BatchShape() []int {
	out := make([]int, len(s.Batch))
	for i, n := range s.Batch {
		out[i] = s.DimSize(n)
	}
	return out
}

// PosOf returns the position of the value at a dotted key path ("loss.reduction"), or the
// position of the file's first line when the key was not written (a default applies).
func (s *Spec) PosOf(path string) Pos {
	if p, ok := s.pos[path]; ok {
		return p
	}
	return Pos{File: s.File, Line: 1, Col: 1}
}

// HasPos reports whether the spec's file writes path, so PosOf names its place.
func (s *Spec) HasPos(path string) bool {
	_, ok := s.pos[path]
	return ok
}

// DataName joins a nested key with '.', the name of its array in .npz files.
func DataName(key []string) string {
	n := ""
	for i, k := range key {
		if i > 0 {
			n += "."
		}
		n += k
	}
	return n
}
