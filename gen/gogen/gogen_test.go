package gogen_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/spec"
)

func TestEmitExamples(t *testing.T) {
	for _, f := range []string{"clip_ppo_gae", "clip_ppo", "gae"} {
		s, err := spec.ParseFile("../../spec/examples/" + f + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		g, err := lower.Lower(s)
		if err != nil {
			t.Fatal(err)
		}
		files, err := gogen.Generate(plan.Build(g), gogen.Meta{Package: s.Package, SpecFile: f, GenVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(os.Getenv("OUTDIR"), s.Package)
		os.MkdirAll(dir, 0o755)
		for name, src := range files {
			os.WriteFile(filepath.Join(dir, name), src, 0o644)
		}
	}
}
