// Package specdoc describes the spec format from the stage registry, so that nothing about
// it is maintained by hand: docs/spec-reference.md (Reference: every top-level field, and
// every loss, estimator and transform with its TorchRL class, parameters and keys), the
// JSON Schema editors validate and complete specs with (Schema, docs/spec.schema.json), and
// the commented starter spec lossgen init prints (Starter).
//
// The top-level fields are the parser's own (spec/parse.go); fields.go describes them, and
// a test checks the list against the keys the parser accepts. Everything below them comes
// from the spec.Registry given.
package specdoc

//go:generate go run ../../cmd/lossgen reference -force -o ../../docs/spec-reference.md
//go:generate go run ../../cmd/lossgen schema -force -o ../../docs/spec.schema.json
