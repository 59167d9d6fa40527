package specdoc

import (
	"math"

	"github.com/lossgen/lossgen/spec"
)

// Field is one top-level key of a spec file, as spec.Parse reads it.
type Field struct {
	Name     string
	Required bool
	Type     string // the value's form, for the reference
	Default  string // "" when none
	Doc      string
	// schema is the field's JSON Schema; stage kinds refer to their $defs entries.
	schema func() obj
}

// LayoutDoc says how the order of dims sets the memory layout, which the reference, the
// schema and the starter spec all state: a TorchRL user, whose tensors carry their own
// strides, would not guess it.
const LayoutDoc = "The order of the dims mapping is the memory layout: every tensor's dims are laid out in the order they are declared, the first outermost (row-major, as a contiguous torch.Tensor), whatever the order of the batch list. So dims {T: 256, N: 16} with batch [N, T] takes time-major [T, N] tensors; a dim declared before the batch dims comes first in every tensor that has it (the IQL Q ensemble: [Q, *batch]) and one declared after comes last (logits [*batch, A]; distributional action values [*batch, K, A], so the atoms K before the actions A). TorchRL users may expect otherwise: a TorchRL tensor carries its own strides, a lossgen kernel takes the one layout the spec declares, and the parser rejects an order a stage cannot use."

// Fields are the top-level keys of a spec, in the parser's order (spec/parse.go).
var Fields = []Field{
	{Name: "package", Required: true, Type: "Go package name",
		Doc: "the generated Go package's name, also the stem of its main file <package>.go: lower-case ASCII letters, digits and '_', not a Go keyword, not main",
		schema: func() obj {
			return obj{"type": "string", "pattern": spec.PackageNamePattern, "maxLength": spec.MaxNameLen, "not": obj{"enum": append(goKeywords(), "main", "_")}}
		}},
	{Name: "dtype", Type: "float32 | float64", Default: "float32",
		Doc: "the element type of the kernel's floating-point tensors",
		schema: func() obj {
			return obj{"enum": []string{string(spec.Float32), string(spec.Float64)}, "default": string(spec.Float32)}
		}},
	{Name: "param_dtype", Type: "float32 | float64", Default: "float32",
		Doc: "how hyper-parameters are held: float32 (TorchRL's default-dtype tensors, so a float64 batch still sees float32-rounded coefficients where TorchRL rounds them) or float64",
		schema: func() obj {
			return obj{"enum": []string{string(spec.Float32), string(spec.Float64)}, "default": string(spec.Float32)}
		}},
	{Name: "dims", Required: true, Type: "mapping: dim name → size",
		Doc: "every fixed extent the kernel is specialised for, in layout order (see Dims and memory layout): names are Go identifiers starting with an upper-case letter (they become exported constants), sizes integers ≥ 1",
		schema: func() obj {
			return obj{"type": "object", "minProperties": 1, "maxProperties": spec.MaxDims,
				"propertyNames":        obj{"pattern": spec.DimNamePattern, "maxLength": spec.MaxNameLen},
				"additionalProperties": obj{"type": "integer", "minimum": 1, "maximum": math.MaxInt32}}
		}},
	{Name: "batch", Required: true, Type: "list of dim names",
		Doc: "the batch dims, each declared under dims (tensors are laid out in the order of dims, not of this list); with an estimator, time is the last batch dim in the order of dims (TorchRL's last tensor dim) unless the estimator's time_dim names another",
		schema: func() obj {
			return obj{"type": "array", "minItems": 1, "maxItems": spec.MaxBatchRank, "uniqueItems": true,
				"items": obj{"type": "string", "pattern": spec.DimNamePattern}}
		}},
	{Name: "estimator", Type: "mapping with type", Doc: "the value estimator that writes advantage and value_target for the loss (none: they are inputs)",
		schema: func() obj { return ref(spec.Estimator.String()) }},
	{Name: "loss", Type: "mapping with type", Doc: "the loss (none: a standalone estimator or transform kernel)",
		schema: func() obj { return ref(spec.Loss.String()) }},
	{Name: "transforms", Type: "list of mappings with type", Doc: "transforms applied first, in order (a Q-value policy head, the KL reward)",
		schema: func() obj { return obj{"type": "array", "items": ref(spec.Transform.String())} }},
	{Name: "keys", Type: "mapping: logical key → data key",
		Doc:    "the data key each logical key reads or writes, where it is not TorchRL's default: a name, a nested key as a list of names ([next, reward]; .npz arrays join them with '.'), or null for a key absent from the data",
		schema: func() obj { return ref("keys") }},
}

// stageKinds are the stage kinds in the order the reference describes them.
var stageKinds = []spec.Kind{spec.Loss, spec.Estimator, spec.Transform}

// KeyRole says what a logical key is, from its registry definition.
func KeyRole(k spec.KeyDef) string {
	switch {
	case k.Differentiable:
		return "network output: the loss differentiates with respect to it"
	case k.NextOf != "":
		return "derived: [next, <data key of " + k.NextOf + ">] unless mapped"
	case k.Default == nil:
		return "optional: absent unless mapped"
	}
	return "data"
}

// KeyShape is a key's layout, [*batch] unless the registry says otherwise.
func KeyShape(k spec.KeyDef) string {
	if k.Shape == "" {
		return "[*batch]"
	}
	return k.Shape
}

// KeyDType is how a key's elements are stored.
func KeyDType(k spec.KeyDef) string {
	switch k.Kind {
	case spec.BoolKey:
		return "bool"
	case spec.IndexKey:
		return "int64 index, or float (one-hot, continuous)"
	}
	return "float (dtype)"
}
