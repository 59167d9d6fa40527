package gen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/ir"
)

// policyCombo is one kind × distribution × action_space of README's PPO-family and IQL
// sections, with the inputs README says it reads: name → "kind [dims]".
type policyCombo struct {
	loss   string
	inputs map[string]string
}

func policyCombos() map[string]policyCombo {
	cs := map[string]policyCombo{}
	acts := map[string]string{"categorical": "index [B]", "one_hot_categorical": "float [B A]", "normal": "float [B D]", "tanh_normal": "float [B D]"}
	for _, kind := range []string{"ppo", "clip_ppo", "klpen_ppo"} {
		for _, dist := range []string{"none", "categorical", "one_hot_categorical", "normal", "tanh_normal"} {
			if kind == "klpen_ppo" && dist == "none" {
				continue // a spec error: KLPEN's KL is closed-form
			}
			c := policyCombo{loss: fmt.Sprintf("{type: %s, distribution: %s", kind, dist), inputs: map[string]string{}}
			switch dist {
			case "none":
				c.inputs["log_prob"] = "float [B]"
			case "categorical", "one_hot_categorical":
				c.loss += ", action_dim: A"
				c.inputs["logits"], c.inputs["action"] = "float [B A]", acts[dist]
			default:
				c.loss += ", action_dim: D"
				c.inputs["loc"], c.inputs["action"] = "float [B D]", acts[dist]
			}
			cs[kind+"_"+dist] = policyCombo{loss: c.loss + "}", inputs: c.inputs}
		}
	}
	// Continuous IQL: Q at the stored action, [Q, B], whatever the actor; the action is a
	// float point read by log π only.
	for _, dist := range []string{"none", "normal", "tanh_normal"} {
		c := policyCombo{loss: "{type: iql, distribution: " + dist, inputs: map[string]string{
			"state_action_value": "float [Q B]", "target_state_action_value": "float [Q B]"}}
		if dist == "none" {
			c.inputs["log_prob"] = "float [B]"
		} else {
			c.loss += ", action_dim: D"
			c.inputs["action"], c.inputs["loc"] = "float [B D]", "float [B D]"
		}
		cs["iql_"+dist] = policyCombo{loss: c.loss + "}", inputs: c.inputs}
	}
	// Discrete IQL: every action's Q, [Q, B, A], at an index or a one-hot (bool) action.
	for space, dist := range map[string]string{"categorical": "categorical", "one_hot": "one_hot_categorical"} {
		act := map[string]string{"categorical": "index [B]", "one_hot": "bool [B A]"}[space]
		for _, d := range []string{"none", dist} {
			c := policyCombo{loss: fmt.Sprintf("{type: discrete_iql, action_dim: A, action_space: %s, distribution: %s}", space, d),
				inputs: map[string]string{"state_action_value": "float [Q B A]", "target_state_action_value": "float [Q B A]", "action": act}}
			if d == "none" {
				c.inputs["log_prob"] = "float [B]"
			} else {
				c.inputs["logits"] = "float [B A]"
			}
			cs["discrete_iql_"+space+"_"+d] = c
		}
	}
	for name := range vettedCombos {
		if _, ok := cs[name]; !ok {
			panic("vettedCombos names no combination " + name)
		}
	}
	return cs
}

// vettedCombos are the combinations TestPolicyCombos generates and vets by default: ppo,
// clip_ppo, klpen_ppo, iql and discrete_iql; no distribution, categorical, one-hot, normal and
// tanh-normal; discrete IQL's index and one-hot actions.
var vettedCombos = map[string]bool{
	"ppo_none": true, "clip_ppo_categorical": true, "klpen_ppo_one_hot_categorical": true, "klpen_ppo_normal": true,
	"clip_ppo_tanh_normal": true, "iql_none": true, "iql_tanh_normal": true,
	"discrete_iql_categorical_categorical": true, "discrete_iql_one_hot_none": true,
}

// TestPolicyCombos compiles every combination with the inputs README documents for it, then
// generates each package into one module and vets it (which type-checks the Go and AVX2
// kernels and their tests). The default run generates and vets the combinations in
// vettedCombos, every kind, distribution and discrete action space among them;
// LOSSGEN_FULL=1 every one.
func TestPolicyCombos(t *testing.T) {
	t.Parallel()
	mod := t.TempDir()
	for name, c := range policyCombos() {
		src := fmt.Sprintf("package: %s\ndtype: float32\ndims: {Q: 2, B: 5, A: 3, D: 2}\nbatch: [B]\nloss: %s\n", name, c.loss)
		path := filepath.Join(mod, name+".yaml")
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
		comp, err := gen.Compile(path)
		require.NoError(t, err, src)
		ins := map[string]*ir.Input{}
		for _, x := range comp.Graph.Inputs {
			ins[x.Name] = x
		}
		for in, want := range c.inputs {
			x := ins[in]
			require.NotNil(t, x, "%s reads no %s", name, in)
			kind := map[ir.ElemKind]string{ir.Float: "float", ir.Bool: "bool", ir.Index: "index"}[x.Kind]
			require.Equal(t, want, kind+" "+fmt.Sprint(x.Shape.Names()), "%s: %s", name, in)
		}
		if testing.Short() || !full() && !vettedCombos[name] {
			continue
		}
		dir := filepath.Join(mod, name)
		_, files, err := gen.Generate(path, gen.Options{OutDir: dir})
		require.NoError(t, err)
		require.NoError(t, gen.Write(dir, files))
	}
	if testing.Short() {
		return
	}
	scratchModule(t, mod, "combos")
	out, err := goIn(mod, "vet", "./...")
	require.NoError(t, err, "%s", out)
}
