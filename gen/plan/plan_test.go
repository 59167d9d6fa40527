package plan_test

import (
	"testing"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/plan"
	"github.com/lossgen/lossgen/spec"
)

func TestPrint(t *testing.T) {
	for _, f := range []string{"clip_ppo_gae", "clip_ppo", "gae"} {
		s, err := spec.ParseFile("../../spec/examples/" + f + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		g, err := lower.Lower(s)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s\n%s", f, plan.Build(g))
	}
}
