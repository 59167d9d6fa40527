package spec_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

// exported is a Spec's exported fields: what a spec written with a stage's <key>_key
// arguments shares with the one written with keys:, whose positions differ.
func exported(s *spec.Spec) spec.Spec {
	return spec.Spec{File: s.File, Package: s.Package, DType: s.DType, ParamDType: s.ParamDType, Dims: s.Dims, Batch: s.Batch,
		Transforms: s.Transforms, Estimator: s.Estimator, Loss: s.Loss, Keys: s.Keys, Warnings: s.Warnings}
}

// stagePath is where lower.Example puts a stage of the kind.
var stagePath = map[spec.Kind]string{spec.Transform: "transforms[0]", spec.Estimator: "estimator", spec.Loss: "loss"}

// withArg is lower.Example's spec with "name: value" added last in the stage's flow mapping,
// so that every other value keeps its column.
func withArg(kind spec.Kind, typ, arg string) string {
	ex := lower.Example(kind, typ)
	i := strings.LastIndex(ex, "}")
	return ex[:i] + ", " + arg + ex[i:]
}

// argValue is a value of an Ignored argument's type.
func argValue(p spec.ParamDef) string {
	switch p.Type {
	case spec.Bool:
		return "true"
	case spec.Text:
		return "cuda:0"
	case spec.Int:
		return "4"
	case spec.Float, spec.FloatOrBool:
		return "0.5"
	case spec.Enum:
		return p.Enum[len(p.Enum)-1]
	case spec.FloatList:
		return "[-1, 1]"
	}
	panic(fmt.Sprintf("argValue: type %d of %s", p.Type, p.Name))
}

// Every stage's value-neutral TorchRL arguments (StageDef.Ignored) parse to the Spec written
// without them, with one note at the value saying it has no effect here and why; a null
// reads so too where TorchRL takes None.
func TestValueNeutralArgumentsAccepted(t *testing.T) {
	seen := map[string][]string{}
	for _, k := range []spec.Kind{spec.Transform, spec.Estimator, spec.Loss} {
		for _, typ := range reg.Types(k) {
			for _, p := range reg.Stage(k, typ).Ignored {
				if p.Refuse != nil {
					continue // TestMonteCarloSampleCounts
				}
				vals := []string{argValue(p)}
				if p.Null != nil {
					vals = append(vals, "null")
				}
				for _, v := range vals {
					arg := p.Name + ": " + v
					notes := sameSpec(t, withArg(k, typ, arg), lower.Example(k, typ))
					require.Len(t, notes, 1, "%s %s", typ, arg)
					col := strings.Index(strings.Split(withArg(k, typ, arg), "\n")[3], arg) + len(p.Name) + 3
					require.Equal(t, fmt.Sprintf("t.yaml:4:%d: note: %s.%s: no effect here: %s", col, stagePath[k], p.Name, p.Doc), notes[0].Error())
				}
				seen[typ] = append(seen[typ], p.Name)
			}
		}
	}
	for typ, want := range map[string][]string{
		"clip_ppo":  {"functional", "separate_losses", "device"},
		"klpen_ppo": {"samples_mc_kl", "functional", "separate_losses", "device"},
		"dqn":       {"functional", "separate_losses", "device"},
		"grpo":      {"samples_mc_entropy", "gamma", "clip_value", "functional", "separate_losses", "device"},
		"gae":       {"vectorized", "differentiable", "skip_existing", "shifted", "deactivate_vmap", "device"},
		"vtrace":    {"differentiable", "skip_existing", "shifted", "deactivate_vmap", "device"},
		"kl_reward": {"device", "padding_side", "use_ray_service"},
	} {
		require.Equal(t, want, seen[typ], typ)
	}
	// Liger's GSPO loss and MCAdvantage (a TorchRL transform) take none of TorchRL's
	// LossModule's or ValueEstimatorBase's arguments.
	require.Empty(t, seen["gspo"])
	require.Empty(t, seen["mc_advantage"])
	// An ignored argument's type is still checked.
	_, err := spec.Parse("t.yaml", []byte(withArg(spec.Loss, "clip_ppo", "functional: 3")), reg)
	require.EqualError(t, err, "t.yaml:4:36: loss.functional: want true or false, got number 3")
}

// samples_mc_entropy and samples_mc_kl are TorchRL's Monte-Carlo sample counts, used only
// where the distribution has no closed form: a note where the kernel's distribution has
// one, as TorchRL's has; an error that says what to do where TorchRL would sample.
func TestMonteCarloSampleCounts(t *testing.T) {
	const head = "package: p\ndims: {B: 4, A: 3}\nbatch: [B]\n"
	src := func(typ, dist, extra string) string {
		return head + "loss: {type: " + typ + ", distribution: " + dist + ", action_dim: A" + extra + "}\n"
	}
	const entropyNote = "no effect here: TorchRL samples the entropy only where the distribution has none in closed form: categorical, one_hot_categorical and normal have one, which TorchRL and the kernel compute, " +
		"and without entropy_bonus no entropy is computed (with tanh_normal or none and entropy_bonus it is an error: the entropy is then an input, keys.entropy)"
	for _, typ := range []string{"ppo", "clip_ppo", "klpen_ppo", "a2c"} {
		for _, dist := range []string{"categorical", "normal", "one_hot_categorical"} {
			if typ == "klpen_ppo" && dist == "normal" {
				continue
			}
			notes := sameSpec(t, src(typ, dist, ", samples_mc_entropy: 4"), src(typ, dist, ""))
			require.Len(t, notes, 1)
			require.Equal(t, "loss.samples_mc_entropy: "+entropyNote, strings.TrimPrefix(notes[0].Msg, "note: "))
		}
		if typ == "klpen_ppo" {
			continue // distribution none is no KLPEN
		}
		for _, dist := range []string{"tanh_normal", "none"} {
			line := src(typ, dist, ", samples_mc_entropy: 4")
			_, err := spec.Parse("t.yaml", []byte(line), reg)
			require.EqualError(t, err, fmt.Sprintf("t.yaml:4:%d: loss.samples_mc_entropy: not taken with distribution %s: TorchRL would estimate the entropy from samples_mc_entropy samples, "+
				"and lossgen samples nothing (SEMANTICS.md §11.9): the entropy is an input, keys.entropy, that you compute (by sampling, §2.5); "+
				"remove samples_mc_entropy, or use distribution categorical, one_hot_categorical or normal, whose entropy the kernel computes in closed form",
				strings.Index(strings.Split(line, "\n")[3], ": 4}")+3, dist))
			// Without the entropy bonus TorchRL computes no entropy: the count changes nothing.
			require.Len(t, sameSpec(t,
				src(typ, dist, ", entropy_bonus: false, samples_mc_entropy: 4"),
				src(typ, dist, ", entropy_bonus: false")), 1)
		}
	}
	// Every distribution KLPEN takes has a closed-form KL.
	for _, dist := range []string{"categorical", "tanh_normal"} {
		notes := sameSpec(t, src("klpen_ppo", dist, ", samples_mc_kl: 8"), src("klpen_ppo", dist, ""))
		require.Len(t, notes, 1)
		require.Contains(t, notes[0].Msg, "loss.samples_mc_kl: no effect here: TorchRL samples the KL only where the distributions have no closed-form KL")
	}
	// ClipPPOLoss has no samples_mc_kl in TorchRL either: an unknown key.
	_, err := spec.Parse("t.yaml", []byte(head+"loss: {type: clip_ppo, samples_mc_kl: 4}\n"), reg)
	require.ErrorContains(t, err, `t.yaml:4:24: loss: unknown key "samples_mc_kl" (allowed: action_dim,`)
}

// A stage's <key>_key argument (TorchRL's deprecated constructor arguments and set_keys
// names) reads as that key's entry of keys:, with a note naming the keys: form.
func TestKeyArguments(t *testing.T) {
	const head = "package: p\ndims: {N: 4, T: 3, A: 2}\nbatch: [N, T]\n"
	parse := func(src string) *spec.Spec {
		t.Helper()
		s, err := spec.Parse("t.yaml", []byte(src), reg)
		require.NoError(t, err, src)
		return s
	}
	same := func(alias, canonical string) []*spec.Error {
		t.Helper()
		got, want := parse(alias), parse(canonical)
		require.Empty(t, want.Notes)
		require.Equal(t, exported(want), exported(got), alias)
		return got.Notes
	}
	notes := same(
		head+"estimator: {type: gae, advantage_key: adv, value_target_key: [next, vt]}\nloss: {type: clip_ppo, advantage_key: adv}\n",
		head+"estimator: {type: gae}\nloss: {type: clip_ppo}\nkeys: {advantage: adv, value_target: [next, vt]}\n")
	require.Equal(t, []string{
		"t.yaml:4:39: note: estimator.advantage_key: TorchRL's argument for the key advantage; read as keys: {advantage: adv}, the form to write (one mapping for every stage)",
		"t.yaml:4:62: note: estimator.value_target_key: TorchRL's argument for the key value_target; read as keys: {value_target: [next, vt]}, the form to write (one mapping for every stage)",
		"t.yaml:5:39: note: loss.advantage_key: TorchRL's argument for the key advantage; read as keys: {advantage: adv}, the form to write (one mapping for every stage)",
	}, errorStrings(notes))
	s := parse(head + "loss: {type: clip_ppo, value_key: v}\n")
	require.Equal(t, []string{"v"}, s.Keys["value"])
	require.Equal(t, []string{"next", "v"}, s.Keys["next_value"], "next_value follows value, as from keys:")
	require.True(t, s.KeyWritten("value"))
	require.Equal(t, spec.Pos{File: "t.yaml", Line: 4, Col: 35}, s.PosOf("keys.value"), "warnings about the key point at the argument")

	// The same data key under keys: as well is redundant, not an error.
	require.Len(t, same(head+"loss: {type: clip_ppo, advantage_key: adv}\nkeys: {advantage: adv}\n", head+"loss: {type: clip_ppo}\nkeys: {advantage: adv}\n"), 1)
	// QValueModule's action_mask_key, DQNLoss's deprecated priority_key.
	require.Len(t, same(head+"transforms: [{type: qvalue, action_mask_key: legal}]\n", head+"transforms: [{type: qvalue}]\nkeys: {action_mask: legal}\n"), 1)
	require.Len(t, same(head+"loss: {type: dqn, action_space: one_hot, priority_key: td_error}\n", head+"loss: {type: dqn, action_space: one_hot}\nkeys: {priority: td_error}\n"), 1)
	// null is TorchRL's default (None): the key keeps its mapping.
	notes = same(head+"loss: {type: clip_ppo, advantage_key: null}\n", head+"loss: {type: clip_ppo}\n")
	require.Equal(t, []string{"t.yaml:4:39: note: loss.advantage_key: null is TorchRL's default: keys.advantage keeps its mapping"}, errorStrings(notes))
	// A parameter named <key>_key is the parameter (kl_reward's log_prob_key picks a key).
	s = parse(head + "transforms: [{type: kl_reward, log_prob_key: sample_log_prob}]\n")
	require.Equal(t, "sample_log_prob", s.Transforms[0].String("log_prob_key"))
	require.Empty(t, s.Notes)

	for src, want := range map[string]string{
		// Two data keys for one key: keys: serves every stage.
		head + "loss: {type: clip_ppo, advantage_key: adv}\nkeys: {advantage: a2}\n":                    "t.yaml:4:39: loss.advantage_key: maps advantage to adv, but keys.advantage (line 5) maps it to a2: one data key serves every stage; write it once, under keys:",
		head + "estimator: {type: gae, advantage_key: a1}\nloss: {type: clip_ppo, advantage_key: a2}\n": "t.yaml:5:39: loss.advantage_key: maps advantage to a2, but estimator.advantage_key (line 4) maps it to a1: one data key serves every stage; write it once, as keys: {advantage: …}",
		head + "loss: {type: clip_ppo, advantage_key: adv}\nkeys: {advantage: null}\n":                  "t.yaml:4:39: loss.advantage_key: maps advantage to adv, but keys.advantage (line 5) maps it to null: one data key serves every stage; write it once, under keys:",
		// A key the stage neither reads nor writes.
		head + "loss: {type: clip_ppo, action_mask_key: legal}\n": "t.yaml:4:24: loss.action_mask_key: loss reads and writes no key action_mask; to map it for the stages that do, write it at the top level as keys: {action_mask: legal}",
		// A bad data key is reported as under keys:.
		head + "loss: {type: clip_ppo, advantage_key: [next, a.b]}\n": `t.yaml:4:46: loss.advantage_key[1]: key part "a.b" must be ASCII letters, digits, '_' or '-', starting with a letter or '_' (it names a Go field; '.' joins nested keys in .npz names)`,
	} {
		_, err := spec.Parse("t.yaml", []byte(src), reg)
		require.EqualError(t, err, want, src)
	}
	// Not a logical key: the usual unknown key.
	_, err := spec.Parse("t.yaml", []byte(head+"loss: {type: ppo, foo_key: x}\n"), reg)
	require.ErrorContains(t, err, `loss: unknown key "foo_key"`)
}

func errorStrings(es []*spec.Error) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Error())
	}
	return out
}

// TorchRL arguments that would change the values and that lossgen does not take (the
// networks, gamma on a loss, a transform's in_keys, KLRewardTransform's reference model)
// are errors that say why and what to write; gamma has one text for every loss.
func TestTorchRLArgumentsThatMatterSayWhat(t *testing.T) {
	const gamma = "loss.gamma: not taken: TorchRL's losses raise TypeError for gamma, which is the value estimator's (loss.make_value_estimator(..., gamma=...)); write it in the estimator section, e.g. estimator: {type: td0, gamma: 0.99}"
	n := 0
	for _, typ := range reg.Types(spec.Loss) {
		if !strings.HasPrefix(reg.Stage(spec.Loss, typ).Source, "torchrl/objectives/") || slices.Contains([]string{"grpo", "dapo", "cispo"}, typ) {
			continue // Liger's GSPO; GRPOLoss takes gamma and never reads it
		}
		if reg.Stage(spec.Loss, typ).Param("gamma") == nil { // DistributionalDQNLoss takes its own
			_, err := spec.Parse("t.yaml", []byte(withArg(spec.Loss, typ, "gamma: 0.9")), reg)
			require.ErrorContains(t, err, gamma, typ)
		}
		for _, net := range []string{"actor_network", "critic_network", "value_network", "qvalue_network"} {
			_, err := spec.Parse("t.yaml", []byte(withArg(spec.Loss, typ, net+": net")), reg)
			require.ErrorContains(t, err, "loss."+net+": not taken: the kernel takes the ", typ)
			require.ErrorContains(t, err, "outputs as inputs, not the network", typ)
		}
		n++
	}
	require.GreaterOrEqual(t, n, 15)
	_, err := spec.Parse("t.yaml", []byte(withArg(spec.Loss, "clip_ppo", "critic_network: critic")), reg)
	require.EqualError(t, err, "t.yaml:4:24: loss.critic_network: not taken: the kernel takes the critic's outputs as inputs, not the network: keys value (state_value) and, with an estimator, next_value (next.state_value); remove critic_network")
	_, err = spec.Parse("t.yaml", []byte(withArg(spec.Estimator, "vtrace", "actor_network: a")), reg)
	require.ErrorContains(t, err, "estimator.actor_network: not taken: the kernel takes the actor's outputs as inputs, not the network: keys log_prob")
	_, err = spec.Parse("t.yaml", []byte(withArg(spec.Estimator, "gae", "value_network: v")), reg)
	require.ErrorContains(t, err, "estimator.value_network: not taken: the kernel takes the value network's outputs as inputs")
	for arg, want := range map[string]string{
		"in_keys: [a]":          "transforms[0].in_keys: not taken: TorchRL's in_keys are lossgen's keys: mapping",
		"ref_model: ref":        "transforms[0].ref_model: not taken: the kernel takes the reference model's outputs as inputs, not the model: keys ref_log_prob",
		"assistant_only: false": "transforms[0].assistant_only: not taken: which tokens count is keys.mask here",
	} {
		_, err := spec.Parse("t.yaml", []byte(withArg(spec.Transform, "kl_reward", arg)), reg)
		require.ErrorContains(t, err, want)
	}
}

// TorchRL's losses read reduction=None as "mean".
func TestReductionNull(t *testing.T) {
	for _, typ := range []string{"clip_ppo", "dqn", "sac", "grpo"} {
		require.Empty(t, sameSpec(t, withArg(spec.Loss, typ, "reduction: null"), withArg(spec.Loss, typ, "reduction: mean")), typ)
	}
}

// KLRewardTransform's add_to_reward: false leaves the reward alone (neither read nor
// written); coef then has no effect, with a warning.
func TestKLRewardAddToReward(t *testing.T) {
	s, err := spec.Parse("t.yaml", []byte(withArg(spec.Transform, "kl_reward", "add_to_reward: false, coef: 0.5")), reg)
	require.NoError(t, err)
	require.False(t, s.Transforms[0].Bool("add_to_reward"))
	require.Equal(t, []string{"t.yaml:4:60: warning: transforms[0].coef: has no effect with add_to_reward: false (the reward is left alone)"}, errorStrings(s.Warnings))
}

// DiscreteSACLoss's num_actions is a note when it is the action dim's size and an error that
// says so when not; its delay_qvalue note names the key the next Q-values arrive under.
func TestDiscreteSACNumActions(t *testing.T) {
	src := func(n string) string {
		return "package: p\ndims: {Q: 2, B: 4, A: 6}\nbatch: [B]\nloss: {type: discrete_sac, action_dim: A, num_actions: " + n + ", delay_qvalue: true}\n"
	}
	s, err := spec.Parse("t.yaml", []byte(src("6")), reg)
	require.NoError(t, err)
	var notes []string
	for _, n := range s.Notes {
		notes = append(notes, n.Error())
	}
	require.Len(t, notes, 2)
	require.Contains(t, notes[0], "loss.num_actions: no effect here: the number of actions, which is the size of the dim action_dim names")
	require.Contains(t, notes[1], "loss.delay_qvalue: no effect here: whether TorchRL evaluates the next Q-values with target (delayed) Q-network parameters; the kernel takes them as an input (keys.next_action_value)")
	_, err = spec.Parse("t.yaml", []byte(src("5")), reg)
	require.EqualError(t, err, "t.yaml:4:56: loss.num_actions: 5 differs from the size 6 of action_dim A: the number of actions is that dim's size; remove num_actions, or declare A: 5 under dims")
}
