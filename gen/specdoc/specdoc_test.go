package specdoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

var reg = lower.Registry()

// TestDocsFresh compares the committed reference and schema with what the registry gives
// today, so that neither goes stale.
func TestDocsFresh(t *testing.T) {
	for _, c := range []struct {
		file, command string
		render        func(spec.Registry) []byte
	}{
		{"spec-reference.md", ReferenceCommand, Reference},
		{"spec.schema.json", SchemaCommand, Schema},
	} {
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", c.file))
		require.NoError(t, err)
		if !bytes.Equal(got, c.render(reg)) {
			t.Errorf("docs/%s is stale: the stage registry changed; run make docs (%s) and commit it", c.file, c.command)
		}
	}
}

// compileSchema compiles the schema with a maintained validator (which also checks it
// against the draft 2020-12 meta-schema).
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema(reg)))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(SchemaID, doc))
	sch, err := c.Compile(SchemaID)
	require.NoError(t, err)
	return sch
}

// yamlToJSON is a spec as the JSON value an editor's YAML support validates.
func yamlToJSON(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(src, &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return inst
}

// TestSchemaAcceptsExamples validates every shipped example spec against the schema.
func TestSchemaAcceptsExamples(t *testing.T) {
	sch := compileSchema(t)
	files, err := filepath.Glob("../../spec/examples/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		if err := sch.Validate(yamlToJSON(t, src)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// base is a valid spec that the cases below change one thing of.
const base = "package: p\ndims: {B: 8, A: 4}\nbatch: [B]\n"

// TestSchemaRejects checks that the schema rejects what the parser rejects for one reason
// each, and accepts the valid variants beside them (so that a rejection is for that reason).
func TestSchemaRejects(t *testing.T) {
	sch := compileSchema(t)
	for _, c := range []struct {
		name, spec string
		ok         bool
	}{
		{"valid", "loss: {type: clip_ppo, clip_epsilon: 0.5}", true},
		{"pair", "loss: {type: clip_ppo, clip_epsilon: [0.2, 0.28]}", true},
		{"null critic", "loss: {type: clip_ppo, critic_coeff: null}", true},
		{"heads", "loss: {type: clip_ppo, entropy_coeff: {move: 0.01, talk: 0.02}, heads: [move, talk]}", true},
		{"unknown param", "loss: {type: clip_ppo, clip_epsilonn: 0.5}", false},
		{"wrong type", "loss: {type: clip_ppo, entropy_bonus: 1}", false},
		{"string for number", "loss: {type: clip_ppo, clip_epsilon: high}", false},
		{"out of range", "loss: {type: clip_ppo, clip_epsilon: 1.5}", false},
		{"open bound", "loss: {type: clip_ppo, clip_epsilon: 0}", false},
		{"pair out of range", "loss: {type: clip_ppo, clip_epsilon: [0.2, 1]}", false},
		{"pair of three", "loss: {type: clip_ppo, clip_epsilon: [0.1, 0.2, 0.3]}", false},
		{"null not allowed", "loss: {type: clip_ppo, entropy_bonus: null}", false},
		{"null reduction", "loss: {type: clip_ppo, reduction: null}", true},
		{"unknown loss type", "loss: {type: clip_ppo2}", false},
		{"missing type", "loss: {clip_epsilon: 0.2}", false},
		{"estimator as loss", "loss: {type: gae}", false},
		{"param of another stage", "estimator: {type: td0, gamma: 0.9, lmbda: 0.9}", false},
		{"unknown enum value", "loss: {type: ppo, reduction: avg}", false},
		{"integer param", "loss: {type: iql, num_qvalue_nets: 0}", false},
		{"transform param", "transforms: [{type: qvalue, action_dim: A, action_space: one_hot}]", true},
		{"transform unknown param", "transforms: [{type: qvalue, action_dim: A, actions: one_hot}]", false},
		{"unknown top-level key", "losses: {type: ppo}", false},
		{"unknown logical key", "loss: {type: ppo}\nkeys: {rewards: r}", false},
		{"nested key", "loss: {type: ppo}\nkeys: {value: [critic, out], mask: null}", true},
		{"bad key part", "loss: {type: ppo}\nkeys: {value: 'a.b'}", false},
		{"no stage", "", false},
		// TorchRL's spellings (spec/schema.go Alias, DimIndex, LinspaceDim).
		{"class name", "loss: {type: ClipPPOLoss}", true},
		{"deprecated alias", "loss: {type: clip_ppo, entropy_coef: 0.02, critic_coef: 0.5}", true},
		{"enum alias", "transforms: [{type: qvalue, action_dim: A, action_space: one-hot}]", true},
		{"integer time_dim", "estimator: {type: td0, gamma: 0.9, time_dim: 0}", true},
		{"rejected argument", "loss: {type: clip_ppo, critic_network: critic}", false},
		{"value-neutral arguments", "loss: {type: clip_ppo, functional: false, separate_losses: true, device: cuda}", true},
		{"key arguments", "estimator: {type: gae, gamma: 0.9, lmbda: 0.9, advantage_key: adv, value_target_key: [next, vt], value_key: null}", true},
		{"key argument of a key the stage lacks", "loss: {type: clip_ppo, action_mask_key: legal}", false},
		{"key argument's bad part", "loss: {type: clip_ppo, advantage_key: 'a.b'}", false},
		{"ignored argument", "estimator: {type: td_lambda, gamma: 0.9, lmbda: 0.9, vectorized: true}", true},
		{"ignored argument's type", "estimator: {type: td_lambda, gamma: 0.9, lmbda: 0.9, vectorized: 1}", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := []byte(base + c.spec + "\n")
			err := sch.Validate(yamlToJSON(t, src))
			if c.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err, "the schema accepts a spec the parser rejects")
			}
			// The parser agrees (the valid cases parse; lowering is not the schema's business).
			_, perr := spec.Parse("t.yaml", src, reg)
			require.Equal(t, c.ok, perr == nil, "parser: %v", perr)
		})
	}
	// C51's support as torch.linspace's arguments, and without its n_atoms.
	c51 := "package: p\ndims: {B: 8, K: 5, A: 4}\nbatch: [B]\ntransforms: [{type: distributional_qvalue, action_dim: A, atom_dim: K, support: %s}]\n"
	for sup, ok := range map[string]bool{"{vmin: -1, vmax: 1, n_atoms: 5}": true, "{vmin: -1, vmax: 1}": false, "{start: -1, end: 1, steps: 5}": true, "{start: -1, end: 1}": false, "[-1, 0, 1, 2, 3]": true} {
		src := []byte(fmt.Sprintf(c51, sup))
		require.Equal(t, ok, sch.Validate(yamlToJSON(t, src)) == nil, sup)
		_, err := spec.Parse("t.yaml", src, reg)
		require.Equal(t, ok, err == nil, "%s: %v", sup, err)
	}
	// The same written flat in the stage's mapping.
	flat := "package: p\ndims: {B: 8, K: 5, A: 4}\nbatch: [B]\ntransforms: [{type: distributional_qvalue, action_dim: A, atom_dim: K, %s}]\n"
	for sup, ok := range map[string]bool{"vmin: -1, vmax: 1, n_atoms: 5": true, "vmin: -1, vmax: 1, n_atoms: 0": false, "vmin: -1, vmax: x, n_atoms: 5": false} {
		src := []byte(fmt.Sprintf(flat, sup))
		require.Equal(t, ok, sch.Validate(yamlToJSON(t, src)) == nil, sup)
		_, err := spec.Parse("t.yaml", src, reg)
		require.Equal(t, ok, err == nil, "%s: %v", sup, err)
	}
	// Bad dims: a lower-case name, a zero size, no dims at all.
	for _, src := range []string{
		"package: p\ndims: {b: 8}\nbatch: [b]\nloss: {type: ppo}\n",
		"package: p\ndims: {B: 0}\nbatch: [B]\nloss: {type: ppo}\n",
		"package: p\ndims: {}\nbatch: [B]\nloss: {type: ppo}\n",
		"package: func\ndims: {B: 8}\nbatch: [B]\nloss: {type: ppo}\n",
		"package: P\ndims: {B: 8}\nbatch: [B]\nloss: {type: ppo}\n",
	} {
		require.Error(t, sch.Validate(yamlToJSON(t, []byte(src))), src)
		_, err := spec.Parse("t.yaml", []byte(src), reg)
		require.Error(t, err, src)
	}
}

// allowedList is the list of allowed names in the parser's error for an unknown name.
var allowedList = regexp.MustCompile(`allowed: ([^)]*)\)`)

// parserAllowed parses src, which has one unknown name, and returns what the parser says it
// allows there.
func parserAllowed(t *testing.T, src string) []string {
	t.Helper()
	_, err := spec.Parse("t.yaml", []byte(src), reg)
	require.Error(t, err)
	m := allowedList.FindStringSubmatch(err.Error())
	require.NotNil(t, m, "no allowed list in %v", err)
	return strings.Split(m[1], ", ")
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestSchemaAgreesWithParser compares every name the schema accepts with what the parser
// says it allows: the top-level fields, each kind's stage types, each stage's keys, each enum
// parameter's values and the logical keys. When the parser learns a new spelling (an alias),
// this fails until the schema accepts it too (stageTypes, paramNames).
func TestSchemaAgreesWithParser(t *testing.T) {
	var root map[string]any
	require.NoError(t, json.Unmarshal(Schema(reg), &root))
	defs := root["$defs"].(map[string]any)
	props := func(def map[string]any) []string { return sortedKeys(def["properties"].(map[string]any)) }

	require.Equal(t, parserAllowed(t, base+"zz_unknown: 1\n"), props(root))
	var fields []string
	for _, f := range Fields {
		fields = append(fields, f.Name)
	}
	sort.Strings(fields)
	require.Equal(t, fields, props(root))
	require.Equal(t, parserAllowed(t, base+"loss: {type: ppo}\nkeys: {zz_unknown: x}\n"), props(defs["keys"].(map[string]any)))

	wrap := map[spec.Kind]func(string) string{
		spec.Loss:      func(m string) string { return "loss: " + m },
		spec.Estimator: func(m string) string { return "estimator: " + m },
		spec.Transform: func(m string) string { return "transforms: [" + m + "]" },
	}
	for _, k := range stageKinds {
		types := defs[k.String()].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["enum"].([]any)
		var got []string
		for _, x := range types {
			got = append(got, x.(string))
		}
		want := parserAllowed(t, base+wrap[k]("{type: zz_unknown}")+"\n")
		for _, typ := range reg.Types(k) {
			want = append(want, reg.Stage(k, typ).Class) // a class name spells its type
		}
		sort.Strings(want)
		sort.Strings(got)
		require.Equal(t, want, got, k.String())
		for _, typ := range reg.Types(k) {
			def := defs[stageDef(k, typ)].(map[string]any)
			require.Equal(t, false, def["additionalProperties"], typ)
			want := parserAllowed(t, base+wrap[k]("{type: "+typ+", zz_unknown: 1}")+"\n")
			for _, p := range reg.Stage(k, typ).Params {
				for _, a := range p.Aliases {
					want = append(want, a.Name)
				}
			}
			// The value-neutral arguments and the <key>_key ones, which the parser takes
			// but leaves out of its list of allowed keys.
			var hidden []string
			for _, p := range reg.Stage(k, typ).Ignored {
				hidden = append(hidden, p.Name)
			}
			for _, a := range reg.Stage(k, typ).KeyArguments() {
				hidden = append(hidden, a)
			}
			for _, name := range hidden {
				_, err := spec.Parse("t.yaml", []byte(base+wrap[k]("{type: "+typ+", "+name+": zz}")+"\n"), reg)
				if err != nil {
					require.NotContains(t, err.Error(), "unknown key", "%s.%s", typ, name)
				}
			}
			want = append(want, hidden...)
			sort.Strings(want)
			require.Equal(t, want, props(def), typ)
			for _, p := range reg.Stage(k, typ).Params {
				if p.Type != spec.Enum {
					continue
				}
				var vals []string
				prop := def["properties"].(map[string]any)[p.Name].(map[string]any)
				if alts, ok := prop["anyOf"].([]any); ok { // an enum that also takes null
					prop = alts[0].(map[string]any)
				}
				for _, v := range prop["enum"].([]any) {
					vals = append(vals, v.(string))
				}
				sort.Strings(vals)
				want := parserAllowed(t, base+wrap[k]("{type: "+typ+", "+p.Name+": zz_unknown}")+"\n")
				for _, a := range p.ValueAliases {
					want = append(want, a.Name)
				}
				sort.Strings(want)
				require.Equal(t, want, vals, typ+"."+p.Name)
			}
		}
	}
}

// TestReference checks the reference's content against the registry: every stage under its
// kind with its class, a row per parameter with its type, default and range, every key with
// its shape, and the layout rule.
func TestReference(t *testing.T) {
	ref := string(Reference(reg))
	require.Contains(t, ref, LayoutDoc)
	require.Contains(t, ref, "| `clip_epsilon` | number or [low, high] | `0.2` | `(0, 1)` | ε: log-weights are clamped")
	require.Contains(t, ref, "| `reduction` | string | `mean` | `none` \\| `mean` \\| `sum` | How the loss_* outputs are reduced. |")
	require.Contains(t, ref, "| `gamma` | number | — (lossgen init: `0.99`) | `[0, 1]` | The discount γ. |")
	require.Contains(t, ref, "| `num_qvalue_nets` | integer | `2` | `[1, inf)` |")
	require.Contains(t, ref, "| `logits` | `logits` | `[*batch, A]` | float (dtype) | network output: the loss differentiates with respect to it |")
	require.Contains(t, ref, "| `reward` | `next.reward` | `[*batch]` | float (dtype) | data |")
	require.Contains(t, ref, "| `next_value` | — | `[*batch]` | float (dtype) | derived: [next, &lt;data key of value>] unless mapped |")
	for _, k := range stageKinds {
		section := ref[strings.Index(ref, "\n## "+kindTitle(k)+"\n"):]
		section = section[:strings.Index(section[1:], "\n## ")+1]
		for _, typ := range reg.Types(k) {
			d := reg.Stage(k, typ)
			require.Contains(t, section, "\n### "+typ+" ("+d.Class+")\n")
			for _, p := range d.Params {
				require.Contains(t, section, "| `"+p.Name+"` | "+cell(paramTypeText(&p))+" |", typ)
			}
		}
	}
	for _, name := range reg.Keys() {
		require.Contains(t, ref, "\n| `"+name+"` |")
	}
	for _, f := range Fields {
		require.Contains(t, ref, "\n| `"+f.Name+"` |")
	}
}

// starterCase is one stage combination lossgen init is asked for.
type starterCase struct {
	o StarterOptions
	// fails is the parser's complaint when TorchRL rejects the combination.
	fails string
}

func starterCases() []starterCase {
	var cs []starterCase
	// gspo's default variant takes one advantage per sequence, which only mc_advantage writes.
	unsupported := map[string]string{}
	for _, e := range reg.Types(spec.Estimator) {
		if e != "mc_advantage" {
			unsupported["gspo/"+e] = " with variant sequence"
		}
		unsupported["distributional_dqn/"+e] = ": it takes no estimator"
	}
	for _, l := range reg.Types(spec.Loss) {
		cs = append(cs, starterCase{o: StarterOptions{Loss: l}})
		// A loss that brings its own TD estimator when the spec has none (IQL, DQN, ...) is one
		// whose make_value_estimator refuses GAE and V-trace.
		td := false
		if out, err := Starter(StarterOptions{Loss: l}); err == nil {
			s, err := spec.Parse("init.yaml", out, reg)
			td = err == nil && s.Estimator != nil
		}
		for _, e := range reg.Types(spec.Estimator) {
			c := starterCase{o: StarterOptions{Loss: l, Estimator: e}}
			if td && e != "td0" && e != "td1" && e != "td_lambda" {
				c.fails = "estimator.type: " + e + " is not supported by " + l + " (TorchRL raises NotImplementedError)"
			} else if why, ok := unsupported[l+"/"+e]; ok {
				c.fails = "estimator.type: " + e + " is not supported by " + l + why
			}
			cs = append(cs, c)
		}
	}
	for _, e := range reg.Types(spec.Estimator) {
		cs = append(cs, starterCase{o: StarterOptions{Estimator: e}})
	}
	for _, tr := range reg.Types(spec.Transform) {
		cs = append(cs, starterCase{o: StarterOptions{Transforms: []string{tr}}})
	}
	return cs
}

// TestStarter asks lossgen init for every loss (alone and with every estimator), every
// standalone estimator and every transform: each starter parses, lowers with no warning and
// validates against the schema, states its stages' defaults, and names the schema and the
// layout rule; a combination TorchRL rejects is the parser's error.
func TestStarter(t *testing.T) {
	sch := compileSchema(t)
	for _, c := range starterCases() {
		name := strings.Trim(c.o.Loss+"+"+c.o.Estimator+"+"+strings.Join(c.o.Transforms, ","), "+")
		t.Run(name, func(t *testing.T) {
			out, err := Starter(c.o)
			if c.fails != "" {
				require.ErrorContains(t, err, c.fails)
				return
			}
			require.NoError(t, err)
			s, err := spec.Parse("init.yaml", out, reg)
			require.NoError(t, err)
			require.Empty(t, s.Warnings)
			g, _, err := lower.Lower(s)
			require.NoError(t, err)
			require.Empty(t, s.Warnings)
			require.NoError(t, sch.Validate(yamlToJSON(t, out)))
			// Every key the kernel reads is listed (DQN's and IQL's reward and terminated are
			// read by a shared TD target, not declared by the loss).
			for _, in := range g.Inputs {
				if in.Key != "" {
					require.Regexp(t, `(?m)^  (# )?`+regexp.QuoteMeta(in.Key)+`: `, string(out), "key %s", in.Key)
				}
			}
			require.True(t, strings.HasPrefix(string(out), "# yaml-language-server: $schema="+SchemaID+"\n"))
			require.Contains(t, string(out), "# The order of the dims mapping is the memory layout")
			// Every parameter written with a default has TorchRL's default after parsing.
			for _, st := range s.Stages() {
				for _, p := range st.Def.Params {
					if _, ex := exampleParam(st.Def, p.Name); ex || p.Default == nil || !st.Written(p.Name) {
						continue
					}
					if st.Def.Example != nil && st.Def.Example.Sizes[p.Name] != "" {
						continue
					}
					require.Equal(t, p.Default, st.Get(p.Name), "%s.%s", st.Path, p.Name)
				}
			}
		})
	}
}

// TestStarterText checks one starter line by line where it matters: the stages' defaults and
// docs, sized dims in layout order, and the keys the kernel reads.
func TestStarterText(t *testing.T) {
	out, err := Starter(StarterOptions{Loss: "clip_ppo", Estimator: "gae", Dims: []spec.Dim{{Name: "N", Size: 64}, {Name: "T", Size: 421}}})
	require.NoError(t, err)
	text := string(out)
	for _, want := range []string{
		"\npackage: clip_ppo_gae\n",
		"\ndims:\n  N: 64\n  T: 421\nbatch: [N, T]\n",
		"\nestimator:\n  type: gae  # TorchRL's GAE (torchrl/objectives/value/advantages.py)\n  # the discount γ ([0, 1])\n  gamma: 0.99\n",
		"\n  # ε: log-weights are clamped to [log1p(−ε), log1p(ε)]; [ε_low, ε_high] clips asymmetrically\n  # ((0, 1))\n  clip_epsilon: 0.2\n",
		"\n  clip_value: null\n",
		"\n  reduction: mean\n",
		"\n  # low: -1.0  # is ignored: it bounds a tanh_normal action\n",
		"\n  # [N, T] float: reward of step t (TorchRL key (next, reward))\n  reward: [next, reward]\n",
		"\n  value: state_value\n",
		"\n  # state_value)); read at (next, value's data key) unless mapped here:\n  # next_value: [next, state_value]\n",
	} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, text, "\n  next_value:")

	// A stage's own dims go where the layout needs them, sized from -dims when named there;
	// num_qvalue_nets follows the ensemble's size.
	out, err = Starter(StarterOptions{Loss: "discrete_iql", Estimator: "td_lambda", Dims: []spec.Dim{{Name: "A", Size: 6}, {Name: "N", Size: 4}, {Name: "T", Size: 32}, {Name: "Q", Size: 3}}, Package: "diql"})
	require.NoError(t, err)
	text = string(out)
	require.Contains(t, text, "\npackage: diql\n")
	require.Contains(t, text, "\ndims:\n  Q: 3\n  N: 4\n  T: 32\n  A: 6\nbatch: [N, T]\n")
	require.Contains(t, text, "\n  num_qvalue_nets: 3\n")
	require.Contains(t, text, "\n  action_dim: A\n")
	require.Contains(t, text, "\n  # [Q, N, T, A] float: ")
	s, err := spec.Parse("x.yaml", out, reg)
	require.NoError(t, err)
	require.Equal(t, 3, s.Loss.Int("num_qvalue_nets"))

	out, err = Starter(StarterOptions{Transforms: []string{"distributional_qvalue"}})
	require.NoError(t, err)
	require.Contains(t, string(out), "\ndims:\n  B: 256\n  K: 5\n  A: 4\nbatch: [B]\n")
	require.Contains(t, string(out), "\n    support: [-2.0, -1.0, 0.0, 1.0, 2.0]\n")

	// Sized otherwise, the example's support and group dim fit the starter's dims: the
	// support over the example's range with K atoms, the group the outermost batch dim.
	for _, c := range []struct {
		o    StarterOptions
		want string
	}{
		{StarterOptions{Transforms: []string{"distributional_qvalue"}, Dims: []spec.Dim{{Name: "B", Size: 8}, {Name: "K", Size: 1}}},
			"\n    support: {vmin: -2.0, vmax: 2.0, n_atoms: 1}\n"},
		{StarterOptions{Transforms: []string{"distributional_qvalue"}, Dims: []spec.Dim{{Name: "B", Size: 4}, {Name: "K", Size: 3}}},
			"\n    support: {vmin: -2.0, vmax: 2.0, n_atoms: 3}\n"},
		{StarterOptions{Loss: "grpo", Estimator: "mc_advantage", Dims: []spec.Dim{{Name: "B", Size: 2}, {Name: "L", Size: 3}}},
			"\n  group_dim: B\n"},
		{StarterOptions{Loss: "grpo", Estimator: "mc_advantage"}, "\n  group_dim: N\n"},
	} {
		out, err := Starter(c.o)
		require.NoError(t, err)
		require.Contains(t, string(out), c.want)
	}
	out, err = Starter(StarterOptions{Transforms: []string{"distributional_qvalue"}, Dims: []spec.Dim{{Name: "B", Size: 4}, {Name: "K", Size: 3}}})
	require.NoError(t, err)
	s, err = spec.Parse("x.yaml", out, reg)
	require.NoError(t, err)
	require.Equal(t, []float64{-2, 0, 2}, s.Transforms[0].Get("support"))

	for _, c := range []struct {
		o    StarterOptions
		want string
	}{
		{StarterOptions{Loss: "clip_ppo2"}, `no loss "clip_ppo2" (allowed: ` + strings.Join(reg.Types(spec.Loss), ", ") + ")"},
		{StarterOptions{Loss: "gae"}, `no loss "gae"`},
		{StarterOptions{}, "no stage"},
		{StarterOptions{Loss: "ppo", Dims: []spec.Dim{{Name: "b", Size: 4}}}, `lossgen init:19:3: dims: dim name "b" must be an ASCII Go identifier`},
		{StarterOptions{Loss: "ppo", Package: "func"}, `lossgen init:7:10: package: "func" is a Go keyword`},
	} {
		_, err := Starter(c.o)
		require.ErrorContains(t, err, c.want)
	}
}

// TestYAMLString checks that strings YAML would read as another type are quoted.
func TestYAMLString(t *testing.T) {
	for in, want := range map[string]string{"state_value": "state_value", "null": `"null"`, "true": `"true"`, "1.5": `"1.5"`, "a-b": "a-b"} {
		require.Equal(t, want, yamlString(in))
	}
	require.Equal(t, "[next, reward]", dataKeyText([]string{"next", "reward"}))
	require.True(t, slices.Contains(goKeywords(), "func") && slices.Contains(goKeywords(), "var") && len(goKeywords()) == 25)
}

// TestStarterGenerates generates the Go package of two starters: what lossgen init prints is
// a spec lossgen generate takes as it is.
func TestStarterGenerates(t *testing.T) {
	for _, o := range []StarterOptions{{Loss: "clip_ppo", Estimator: "gae"}, {Loss: "discrete_iql", Estimator: "td0"}} {
		out, err := Starter(o)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "spec.yaml")
		require.NoError(t, os.WriteFile(path, out, 0o644))
		c, files, err := gen.Generate(path, gen.Options{OutDir: t.TempDir()})
		require.NoError(t, err)
		require.Equal(t, starterPackage(o), c.Spec.Package)
		require.Contains(t, string(files[c.Spec.Package+".go"]), "package "+c.Spec.Package)
	}
}
