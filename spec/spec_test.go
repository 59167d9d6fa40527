package spec_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/bad/*.err from the parser's output")

var positioned = regexp.MustCompile(`^testdata/bad/[a-z_]+\.yaml:\d+:\d+: \S`)

// TestBadSpecs parses every testdata/bad/*.yaml and compares the diagnostics with the .err
// file beside it. Every line must be FILE:LINE:COL: message.
func TestBadSpecs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			_, err := spec.ParseFile(f)
			require.Error(t, err)
			var list spec.ErrorList
			require.True(t, errors.As(err, &list), "want an ErrorList, got %T", err)
			got := err.Error() + "\n"
			for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
				require.Regexp(t, positioned, line)
			}
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), got)
		})
	}
}

func TestExamplesParse(t *testing.T) {
	files, err := filepath.Glob("examples/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		_, err := spec.ParseFile(f)
		require.NoError(t, err, f)
	}
}

func parse(t *testing.T, src string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse("t.yaml", []byte(src))
	require.NoError(t, err)
	return s
}

// TorchRL's defaults (SEMANTICS.md §7) apply to every key left out.
func TestDefaults(t *testing.T) {
	s := parse(t, "package: p\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae}\nloss: {type: clip_ppo}\n")
	require.Equal(t, spec.Float32, s.DType)
	e, l := s.Estimator, s.Loss
	require.Equal(t, 0.99, e.Gamma)
	require.Equal(t, 0.95, e.Lmbda)
	require.False(t, e.AverageGAE)
	require.Equal(t, 0.2, l.ClipEpsilon)
	require.True(t, l.EntropyBonus)
	require.Equal(t, 0.01, l.EntropyCoeff)
	require.Equal(t, 1.0, l.CriticCoeff)
	require.Equal(t, "smooth_l1", l.LossCriticType)
	require.False(t, l.NormalizeAdvantage)
	require.Zero(t, l.ClipValue)
	require.True(t, l.LogExplainedVariance)
	require.Equal(t, "mean", l.Reduction)
	require.Equal(t, []string{"next", "reward"}, s.Keys["reward"])
	require.Equal(t, []string{"next", "state_value"}, s.Keys["next_value"])
	require.Equal(t, []string{"log_prob", "sample_log_prob", "entropy", "value", "reward", "done", "terminated", "next_value"}, s.UsedKeys())
}

func TestClipValueTrueIsEpsilon(t *testing.T) {
	s := parse(t, "package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo, clip_epsilon: 0.1, clip_value: true}\n")
	require.Equal(t, 0.1, s.Loss.ClipValue)
	require.Contains(t, s.UsedKeys(), "old_value")
	s = parse(t, "package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo, clip_value: null, critic_coeff: null}\n")
	require.Zero(t, s.Loss.ClipValue)
	require.False(t, s.Loss.HasCritic())
	require.NotContains(t, s.UsedKeys(), "value")
}

// Renaming value renames next_value too, as TorchRL's estimators read ("next", value_key).
func TestKeysRename(t *testing.T) {
	s := parse(t, "package: p\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae}\nloss: {type: clip_ppo}\nkeys: {value: v, reward: [next, r], terminated: null}\n")
	require.Equal(t, []string{"next", "v"}, s.Keys["next_value"])
	require.Equal(t, "next.r", spec.DataName(s.Keys["reward"]))
	require.NotContains(t, s.UsedKeys(), "terminated", "terminated: null falls back to done")
}

func TestWarnings(t *testing.T) {
	s := parse(t, "package: p\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae}\nloss: {type: clip_ppo, clip_value: 0.5}\n")
	require.Len(t, s.Warnings, 1)
	require.Contains(t, s.Warnings[0].Error(), "t.yaml:5:36: warning: loss.clip_value has no effect when the estimator runs in the kernel")
}

func TestWarningsUnusedDimsAndKeys(t *testing.T) {
	s := parse(t, "package: p\ndims: {B: 8, T: 9}\nbatch: [B]\nloss: {type: clip_ppo}\nkeys: {next_value: nv}\n")
	var msgs []string
	for _, w := range s.Warnings {
		msgs = append(msgs, w.Error())
	}
	require.Equal(t, []string{
		"t.yaml:2:17: warning: dims.T is not in batch; nothing uses it",
		"t.yaml:5:20: warning: keys.next_value is neither read nor written by this spec's loss clip_ppo; it is ignored",
	}, msgs)
}
