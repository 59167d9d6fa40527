package lower_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

func lowered(t *testing.T, src string) (*spec.Spec, *ir.Graph) {
	t.Helper()
	s, err := spec.Parse("t.yaml", []byte(src), lower.Registry())
	require.NoError(t, err)
	g, _, err := lower.Lower(s)
	require.NoError(t, err)
	return s, g
}

// Only a PPO loss without an estimator in the kernel says that the estimator's results are
// inputs; IQL reads none.
func TestSummary(t *testing.T) {
	const head = "package: p\ndims: {N: 4, T: 3}\nbatch: [N, T]\n"
	const sentence = "The estimator's results (advantage, value_target) are inputs, computed beforehand, e.g. over the whole rollout."
	for src, want := range map[string][]string{
		head + "loss: {type: clip_ppo}\n":                                                                  {sentence},
		head + "estimator: {type: gae}\nloss: {type: clip_ppo}\n":                                          nil,
		head + "transforms: [{type: kl_reward}]\nloss: {type: ppo}\n":                                      {sentence},
		head + "loss: {type: iql}\n":                                                                       nil,
		head + "estimator: {type: gae, gamma: 0.9, lmbda: 0.9}\n":                                          nil,
		"package: p\ndims: {N: 4, T: 3, A: 2}\nbatch: [N, T]\nloss: {type: discrete_iql, action_dim: A}\n": nil,
	} {
		s, _ := lowered(t, src)
		require.Equal(t, want, lower.Summary(s), src)
	}
}

// An input's doc describes the configuration that reads it, not every configuration that
// could (the action's form, the Q layout).
func TestKeyDocsPerConfiguration(t *testing.T) {
	doc := func(src, name string) string {
		_, g := lowered(t, "package: p\ndims: {N: 4, T: 3, A: 2}\nbatch: [N, T]\n"+src)
		for _, in := range g.Inputs {
			if in.Name == name {
				return in.Doc
			}
		}
		t.Fatalf("no input %s", name)
		return ""
	}
	require.Equal(t, "the stored action: an index into A [*batch]", doc("loss: {type: ppo, distribution: categorical, action_dim: A}\n", "action"))
	require.Equal(t, "the stored action: a one-hot vector [*batch, A]", doc("loss: {type: ppo, distribution: one_hot_categorical, action_dim: A}\n", "action"))
	require.Equal(t, "the stored action: a point [*batch, A] (the tanh_normal sample)", doc("loss: {type: ppo, distribution: tanh_normal, action_dim: A}\n", "action"))
	require.Equal(t, "the stored action: a one-hot vector of flags [*batch, A]", doc("loss: {type: discrete_iql, action_dim: A, action_space: one_hot}\n", "action"))
	require.Contains(t, doc("loss: {type: iql}\n", "state_action_value"), "at the stored action [Q, *batch] (")
	require.Contains(t, doc("loss: {type: discrete_iql, action_dim: A}\n", "state_action_value"), "for every action [Q, *batch, A] (")
}
