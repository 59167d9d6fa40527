package spec_test

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/bad/*.err from the diagnostics")

var positioned = regexp.MustCompile(`^testdata/bad/[a-z_0-9]+\.yaml:\d+:\d+: \S`)

var reg = lower.Registry()

// TestBadSpecs compiles every testdata/bad/*.yaml (parsing, validation and lowering, which
// reports the keys a stage reads but the spec maps to null) and compares the diagnostics with
// the .err file beside it. Every line must be FILE:LINE:COL: message.
func TestBadSpecs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			_, err := gen.Compile(f)
			require.Error(t, err)
			var list spec.ErrorList
			var one *spec.Error
			require.True(t, errors.As(err, &list) || errors.As(err, &one), "want spec errors, got %T: %v", err, err)
			got := registryLists().Replace(err.Error() + "\n")
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

// registryLists replaces, in diagnostics, the registry's lists of stage types and keys with
// placeholders (<loss types>, <keys>), so that the .err files do not change when a stage is
// added.
func registryLists() *strings.Replacer {
	var pairs []string
	for _, k := range []spec.Kind{spec.Transform, spec.Estimator, spec.Loss} {
		pairs = append(pairs, "allowed: "+strings.Join(reg.Types(k), ", ")+")", "allowed: <"+k.String()+" types>)")
	}
	pairs = append(pairs, "allowed: "+strings.Join(reg.Keys(), ", ")+")", "allowed: <keys>)")
	return strings.NewReplacer(pairs...)
}

func TestExamplesParse(t *testing.T) {
	files, err := filepath.Glob("examples/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		_, err := spec.ParseFile(f, reg)
		require.NoError(t, err, f)
	}
}

func parse(t *testing.T, src string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse("t.yaml", []byte(src), reg)
	require.NoError(t, err)
	return s
}

// TorchRL's defaults (SEMANTICS.md §7) apply to every key left out.
func TestDefaults(t *testing.T) {
	s := parse(t, "package: p\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae}\nloss: {type: clip_ppo}\n")
	require.Equal(t, spec.Float32, s.DType)
	require.Equal(t, spec.Float32, s.ParamDType)
	e, l := s.Estimator, s.Loss
	require.Equal(t, 0.99, e.Float("gamma"))
	require.Equal(t, 0.95, e.Float("lmbda"))
	require.False(t, e.Bool("average_gae"))
	require.Equal(t, 0.2, l.Float("clip_epsilon"))
	require.True(t, l.Bool("entropy_bonus"))
	require.Equal(t, 0.01, l.Float("entropy_coeff"))
	require.Equal(t, 1.0, l.Float("critic_coeff"))
	require.Equal(t, "smooth_l1", l.String("loss_critic_type"))
	require.False(t, l.Bool("normalize_advantage"))
	require.Nil(t, l.Get("clip_value"))
	require.True(t, l.Bool("log_explained_variance"))
	require.Equal(t, "mean", l.String("reduction"))
	require.Equal(t, []string{"next", "reward"}, s.Keys["reward"])
	require.Equal(t, []string{"next", "state_value"}, s.Keys["next_value"])
}

// Renaming value renames next_value too, as TorchRL's estimators read ("next", value_key).
func TestKeysRename(t *testing.T) {
	s := parse(t, "package: p\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae}\nloss: {type: clip_ppo}\nkeys: {value: v, reward: [next, r], terminated: null}\n")
	require.Equal(t, []string{"next", "v"}, s.Keys["next_value"])
	require.Equal(t, "next.r", spec.DataName(s.Keys["reward"]))
	require.Nil(t, s.Keys["terminated"])
}

func TestWarnings(t *testing.T) {
	s := parse(t, "package: p\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae}\nloss: {type: clip_ppo, clip_value: 0.5}\n")
	require.Len(t, s.Warnings, 1)
	require.Contains(t, s.Warnings[0].Error(), "t.yaml:5:36: warning: loss.clip_value: has no effect when the estimator runs in the kernel")

	// heads name the keys of a per-head entropy_coeff; with one coefficient they do nothing.
	s = parse(t, "package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo, heads: [a, b]}\n")
	require.Len(t, s.Warnings, 1)
	require.Contains(t, s.Warnings[0].Error(), "t.yaml:4:31: warning: loss.heads: is ignored: it names the heads of a per-head entropy_coeff mapping")
	s = parse(t, "package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo, heads: [a, b], entropy_coeff: {a: 0.1, b: 0.2}}\n")
	require.Empty(t, s.Warnings)

	// The layout is the order of dims: a batch listed otherwise does not transpose anything
	// (a user's time-major [T, N] with dims {N, T} ran its GAE over N, silently).
	s = parse(t, "package: p\ndims: {N: 2, T: 3}\nbatch: [T, N]\nestimator: {type: gae, gamma: 0.9, lmbda: 0.9, time_dim: 0}\n")
	require.Len(t, s.Warnings, 1)
	require.Contains(t, s.Warnings[0].Error(), "t.yaml:3:8: warning: batch: [T, N] lists its dims in another order than dims declares them; "+
		"tensors are laid out in the order of dims, [N, T]")
	s = parse(t, "package: p\ndims: {T: 3, N: 2}\nbatch: [T, N]\nestimator: {type: gae, gamma: 0.9, lmbda: 0.9, time_dim: 0}\n")
	require.Empty(t, s.Warnings)

	// entropy_bonus: false switches the entropy term off, whatever entropy_coeff says.
	for _, typ := range []string{"clip_ppo", "grpo"} {
		s = parse(t, "package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: "+typ+", entropy_bonus: false, entropy_coeff: 0.5}\n")
		require.Len(t, s.Warnings, 1, typ)
		require.Contains(t, s.Warnings[0].Error(), "warning: loss.entropy_coeff: is ignored: entropy_bonus is false (no entropy term)", typ)
		s = parse(t, "package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: "+typ+", entropy_bonus: false}\n")
		require.Empty(t, s.Warnings, typ)
	}
}

// numericDefaults lists every number-valued parameter of every stage with TorchRL's default
// (a parameter without a default gets a valid value).
func numericParams(t *testing.T) []struct {
	kind spec.Kind
	typ  string
	p    spec.ParamDef
} {
	var out []struct {
		kind spec.Kind
		typ  string
		p    spec.ParamDef
	}
	for _, k := range []spec.Kind{spec.Transform, spec.Estimator, spec.Loss} {
		for _, typ := range reg.Types(k) {
			for _, p := range reg.Stage(k, typ).Params {
				switch p.Type {
				case spec.Float, spec.FloatOrBool, spec.FloatOrPair, spec.FloatOrMap, spec.Int:
					out = append(out, struct {
						kind spec.Kind
						typ  string
						p    spec.ParamDef
					}{k, typ, p})
				}
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// stageSpec writes a spec whose stage of kind k and type typ sets param to value: the
// stage's own minimal example (lower.Example) with the parameter set.
func stageSpec(k spec.Kind, typ, param, value string) string {
	return lower.Example(k, typ, param, value)
}

// Every stage's example parses as it is: the input the parameter tests start from.
func TestStageExamplesParse(t *testing.T) {
	n := 0
	for _, k := range []spec.Kind{spec.Transform, spec.Estimator, spec.Loss} {
		for _, typ := range reg.Types(k) {
			_, err := spec.Parse("t.yaml", []byte(lower.Example(k, typ)), reg)
			require.NoError(t, err, "%s %s", k, typ)
			n++
		}
	}
	require.GreaterOrEqual(t, n, 3)
}

// Every numeric parameter of every stage accepts TorchRL's default written out explicitly
// (a parser once passed an upper bound of 0 where +inf was meant and rejected them all).
func TestEveryNumericDefaultAccepted(t *testing.T) {
	for _, x := range numericParams(t) {
		v := x.p.Default
		if v == nil {
			v = (x.p.Min + math.Min(x.p.Max, x.p.Min+2)) / 2 // a valid value where TorchRL has none
			if math.IsInf(x.p.Min, -1) {
				v = 0.5
			}
			if x.p.Type == spec.Int {
				v = int(x.p.Min) + 1
			}
		}
		text := fmt.Sprint(v)
		if pair, ok := v.([]float64); ok { // DAPO's clip_epsilon [0.2, 0.28], in YAML
			text = fmt.Sprintf("[%v, %v]", pair[0], pair[1])
		}
		src := stageSpec(x.kind, x.typ, x.p.Name, text)
		_, err := spec.Parse("t.yaml", []byte(src), reg)
		require.NoError(t, err, "%s %s: %s: %v", x.kind, x.typ, x.p.Name, v)
	}
}

// And one value out of each parameter's range is an error that states the range.
func TestEveryNumericRangeStated(t *testing.T) {
	n := 0
	for _, x := range numericParams(t) {
		var bad float64
		switch {
		case !math.IsInf(x.p.Max, 1):
			bad = x.p.Max + 1
		case !math.IsInf(x.p.Min, -1):
			bad = x.p.Min - 1
		default:
			continue // unbounded
		}
		n++
		src := stageSpec(x.kind, x.typ, x.p.Name, fmt.Sprint(bad))
		_, err := spec.Parse("t.yaml", []byte(src), reg)
		require.Error(t, err, "%s %s: %s = %v", x.kind, x.typ, x.p.Name, bad)
		lb, rb := "[", "]"
		if x.p.MinOpen {
			lb = "("
		}
		if x.p.MaxOpen {
			rb = ")"
		}
		require.Contains(t, err.Error(), "must be in "+lb, "%s %s: %s", x.kind, x.typ, x.p.Name)
		require.Contains(t, err.Error(), rb+", got", "%s %s: %s", x.kind, x.typ, x.p.Name)
	}
	require.Greater(t, n, 10)
}

// A constant the kernel bakes in must fit its float type (it used to compile to float32(-Inf)).
func TestConstantBeyondFloat32(t *testing.T) {
	_, err := spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo, entropy_coeff: 1e39}\n"), reg)
	require.EqualError(t, err, "t.yaml:4:39: loss.entropy_coeff: 1e+39 does not fit the float32 the kernel holds it in (largest 3.4028235e+38); TorchRL would hold inf")
	_, err = spec.Parse("t.yaml", []byte("package: p\ndtype: float64\nparam_dtype: float64\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo, entropy_coeff: 1e39}\n"), reg)
	require.NoError(t, err, "a float64 kernel holding float64 parameters takes it")
}

// Limits a user can hit are positioned errors that name the limit.
func TestLimits(t *testing.T) {
	var dims, batch []string
	for i := 0; i < 7; i++ {
		dims = append(dims, fmt.Sprintf("D%d: 2", i))
		batch = append(batch, fmt.Sprintf("D%d", i))
	}
	_, err := spec.Parse("t.yaml", []byte("package: p\ndims: {"+strings.Join(dims, ", ")+"}\nbatch: ["+strings.Join(batch, ", ")+"]\nloss: {type: clip_ppo}\n"), reg)
	require.ErrorContains(t, err, "t.yaml:3:8: batch: 7 dims; a kernel takes at most 6 batch dims")
	long := strings.Repeat("p", 100000)
	_, err = spec.Parse("t.yaml", []byte("package: "+long+"\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo}\n"), reg)
	require.ErrorContains(t, err, "t.yaml:1:10: package: a name of 100000 characters; at most 64")
	_, err = spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo}\nkeys: {reward: "+long+"}\n"), reg)
	require.ErrorContains(t, err, "t.yaml:5:16: keys.reward: a key part of 100000 characters; at most 64")
}

// A spec is a regular file of at most MaxSpecBytes: /dev/zero, a directory or a 2 MB file is
// an error at once (reading /dev/zero grew to 1.3 GB before; from the adversarial trial).
func TestReadFileLimits(t *testing.T) {
	_, err := spec.ReadFile("/dev/zero")
	require.ErrorContains(t, err, "/dev/zero: a device, not a regular file")
	_, err = spec.ReadFile(t.TempDir())
	require.ErrorContains(t, err, "a directory, not a regular file")
	big := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, spec.MaxSpecBytes+1), 0o644))
	_, err = spec.ReadFile(big)
	require.ErrorContains(t, err, "larger than 1048576 bytes")
	ok := filepath.Join(t.TempDir(), "ok.yaml")
	require.NoError(t, os.WriteFile(ok, []byte("package: p\n"), 0o644))
	b, err := spec.ReadFile(ok)
	require.NoError(t, err)
	require.Equal(t, "package: p\n", string(b))
}
