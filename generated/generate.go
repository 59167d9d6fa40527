// Package generated holds the packages lossgen generates from spec/examples; CI regenerates
// them and fails on any difference, so they are always what the generator makes today.
//
// Regenerate with `go generate ./generated/...` (or `make generate`).
package generated

//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o clipppogae -golden ../golden/clipppogae ../spec/examples/clip_ppo_gae.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o clipppo -golden ../golden/clipppo ../spec/examples/clip_ppo.yaml
//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o gae -golden ../golden/gae ../spec/examples/gae.yaml
