package spec_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

// sameSpec parses a spec written with TorchRL's spelling and with lossgen's canonical one
// (laid out so that every value starts in the same column) and requires the two Specs to
// be deep-equal, apart from the notes; it returns the alias spelling's notes.
func sameSpec(t *testing.T, alias, canonical string) []*spec.Error {
	t.Helper()
	want, err := spec.Parse("t.yaml", []byte(canonical), reg)
	require.NoError(t, err, "canonical:\n%s", canonical)
	require.Empty(t, want.Notes)
	got, err := spec.Parse("t.yaml", []byte(alias), reg)
	require.NoError(t, err, "alias:\n%s", alias)
	notes := got.Notes
	got.Notes = nil
	forgetNulls(want)
	forgetNulls(got)
	require.Equal(t, want, got, "alias:\n%s", alias)
	return notes
}

// forgetNulls clears Value.Null, which records how a value was written (null, or the value
// it stands for), not what it is.
func forgetNulls(s *spec.Spec) {
	for _, st := range s.Stages() {
		for k, v := range st.Values {
			v.Null = false
			st.Values[k] = v
		}
	}
}

// TorchRL v0.9–v0.10's deprecated entropy_coef and critic_coef (removed in v0.11, TypeError)
// read as entropy_coeff and critic_coeff, each with a note naming the spelling to write.
func TestDeprecatedCoefNames(t *testing.T) {
	const head = "package: p\ndims: {B: 4}\nbatch: [B]\nloss:\n  type: clip_ppo\n"
	notes := sameSpec(t,
		head+"  entropy_coef:  0.02\n  critic_coef:  0.5\n",
		head+"  entropy_coeff: 0.02\n  critic_coeff: 0.5\n")
	require.Len(t, notes, 2)
	require.Equal(t, "t.yaml:6:3: note: loss.entropy_coef: TorchRL's name up to v0.8, deprecated in v0.9 and v0.10 and removed in v0.11 (TypeError); read as entropy_coeff, the spelling to write", notes[0].Error())
	require.Equal(t, "t.yaml:7:3: note: loss.critic_coef: TorchRL's name up to v0.9.1, deprecated in v0.9.2 and v0.10 and removed in v0.11 (TypeError); read as critic_coeff, the spelling to write", notes[1].Error())

	// A per-head mapping keeps its heads' positions under the canonical name.
	notes = sameSpec(t,
		head+"  heads: [move, talk]\n  entropy_coef:  {move: 0.1, talk: 0.2}\n",
		head+"  heads: [move, talk]\n  entropy_coeff: {move: 0.1, talk: 0.2}\n")
	require.Len(t, notes, 1)

	// Both spellings at once: TorchRL v0.9–v0.10 raise ValueError, lossgen says to write one.
	_, err := spec.Parse("t.yaml", []byte(head+"  entropy_coef: 0.1\n  entropy_coeff: 0.2\n"), reg)
	require.EqualError(t, err, `t.yaml:7:3: loss.entropy_coeff: "entropy_coeff" and "entropy_coef" (line 6) are two spellings of entropy_coeff; write it once, as entropy_coeff`)
}

// Every registered stage's TorchRL class name is accepted as its type, in the stage's own
// minimal example (lower.Example).
func TestClassNameAsType(t *testing.T) {
	n := 0
	for _, k := range []spec.Kind{spec.Transform, spec.Estimator, spec.Loss} {
		for _, typ := range reg.Types(k) {
			class := reg.Stage(k, typ).Class
			require.NotEmpty(t, class, typ)
			// Pad the shorter name so that the two specs' later columns agree.
			w := max(len(typ), len(class))
			ex := lower.Example(k, typ)
			src := func(name string) string {
				return strings.Replace(ex, "{type: "+typ, fmt.Sprintf("{type: %-*s", w, name), 1)
			}
			require.NotEqual(t, ex, src(class), "the example has the type %s", typ)
			require.Empty(t, sameSpec(t, src(class), src(typ)), "no note: TorchRL accepts the class")
			n++
		}
	}
	require.GreaterOrEqual(t, n, 13)

	// A misspelt class gets the class suggested; the allowed list is of type names.
	_, err := spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: ClipPPOLos}\n"), reg)
	require.EqualError(t, err, `t.yaml:4:14: loss.type: unknown value "ClipPPOLos" (did you mean "ClipPPOLoss"? allowed: `+strings.Join(reg.Types(spec.Loss), ", ")+")")
	// A type written as a class lossgen lacks (GSPOLoss, gspo's class being Liger's) gets the
	// type it names but for case and the Loss suffix, not the class one letter away (GRPOLoss).
	for _, typ := range []string{"GSPOLoss", "gspoloss", "GSPO"} {
		_, err = spec.Parse("t.yaml", []byte("package: p\ndims: {B: 4}\nbatch: [B]\nloss: {type: "+typ+"}\n"), reg)
		require.EqualError(t, err, `t.yaml:4:14: loss.type: unknown value "`+typ+`" (did you mean "gspo"? allowed: `+strings.Join(reg.Types(spec.Loss), ", ")+")")
	}
}

// The action spaces' other spellings that TorchRL's ACTION_SPACE_MAP accepts read as the
// canonical ones, without a note (TorchRL deprecates none of them).
func TestActionSpaceAliases(t *testing.T) {
	const head = "package: p\ndims: {B: 4, A: 3}\nbatch: [B]\n"
	for alias, canonical := range map[string]string{
		"one-hot": "one_hot", "mult-one-hot": "mult_one_hot", "multi_one_hot": "mult_one_hot", "multi-one-hot": "mult_one_hot",
	} {
		src := func(v string) string {
			return head + fmt.Sprintf("transforms: [{type: qvalue, action_dim: A, var_nums: [1, 2], action_space: %-13s}]\n", v)
		}
		if canonical == "one_hot" {
			src = func(v string) string {
				return head + fmt.Sprintf("transforms: [{type: qvalue, action_dim: A, action_space: %-7s}]\n", v)
			}
		}
		require.Empty(t, sameSpec(t, src(alias), src(canonical)), alias)
	}
	// DiscreteIQLLoss takes one-hot too, but no mult_one_hot in any spelling.
	require.Empty(t, sameSpec(t,
		head+"loss: {type: discrete_iql, action_dim: A, action_space: one-hot}\n",
		head+"loss: {type: discrete_iql, action_dim: A, action_space: one_hot}\n"))
	_, err := spec.Parse("t.yaml", []byte(head+"loss: {type: discrete_iql, action_dim: A, action_space: multi-one-hot}\n"), reg)
	require.EqualError(t, err, `t.yaml:4:57: loss.action_space: unknown value "multi-one-hot" (allowed: categorical, one_hot)`)
}

// TorchRL's integer time_dim counts the batch dims of the keys' layout (the order of dims),
// negative from the end, and reads as the name of that dim.
func TestIntegerTimeDim(t *testing.T) {
	src := func(batch, timeDim string) string {
		return "package: p\ndims: {N: 4, T: 3}\nbatch: " + batch + "\nestimator: {type: gae, time_dim: " + timeDim + "}\nloss: {type: clip_ppo}\n"
	}
	for _, c := range []struct{ index, name string }{{"0 ", "N "}, {"-2", "N "}, {"1 ", "T "}, {"-1", "T "}} {
		require.Empty(t, sameSpec(t, src("[N, T]", c.index), src("[N, T]", c.name)), c.index)
		// The layout is the order of dims, whatever the order batch lists them in.
		require.Empty(t, sameSpec(t, src("[T, N]", c.index), src("[T, N]", c.name)), c.index)
	}
	_, err := spec.Parse("t.yaml", []byte(src("[N, T]", "2")), reg)
	require.EqualError(t, err, "t.yaml:4:34: estimator.time_dim: 2 is not a batch dim: TorchRL's integer dims count the 2 batch dims [N, T] of the keys' layout (0 or -2 is N; 1 or -1 is T); write one of them, e.g. time_dim: T")
	_, err = spec.Parse("t.yaml", []byte(src("[N, T]", "-3")), reg)
	require.ErrorContains(t, err, "t.yaml:4:34: estimator.time_dim: -3 is not a batch dim")
	_, err = spec.Parse("t.yaml", []byte(src("[N, T]", "1.5")), reg)
	require.EqualError(t, err, "t.yaml:4:34: estimator.time_dim: want a dim name or TorchRL's integer dim (0 the first batch dim, -1 the last), got number 1.5")
}

// torch.linspace's values, as torch's CPU kernel gives them (checked against torch 1.13 over
// 407 random (start, end, n) in float32 and float64), derived here by hand: step = (end −
// start)/(n − 1) in the dtype; elements in pairs of 8-lane (float32) or 4-lane (float64)
// vectors, each vector's first element fma(step, i, start) below n/2 (fma(−step, n−1−i, end)
// from there) and lane k that plus f32(k·step); the rest the first element's formula.
func TestLinspace(t *testing.T) {
	// float32 linspace(0, 1, 4) has no pair of vectors: step = f32(1/3) = 11184811·2⁻²⁵;
	// element 2 is fma(−step, 1, 1) = 1 − step = 22369621·2⁻²⁵, a tie between two float32s,
	// rounded to the even 11184810·2⁻²⁴; the forward formula's 2·step would give
	// 0.6666666865348816.
	require.Equal(t, []float64{0, 0.3333333432674408, 0.6666666269302368, 1}, spec.Linspace(0, 1, 4, spec.Float32))
	// float64: 1 − f64(1/3) is again a tie, rounded to the even 6004799503160662·2⁻⁵³
	// (2.0/3 is 0.6666666666666666).
	require.Equal(t, []float64{0, 0.3333333333333333, 0.6666666666666667, 1}, spec.Linspace(0, 1, 4, spec.Float64))
	// C51's support: step = f32(0.4) = 0.4000000059604645. Element 11 is lane 3 of the
	// vector at 8: x₀ = f32(−10 + 8·step) = −6.800000190734863, plus f32(3·step) =
	// 1.2000000476837158, gives −5.600000381469727 (the scalar formula: −5.599999904632568).
	// The vector at 24 starts below n/2 = 25: x₀ = f32(−10 + 24·step) = −0.39999985694885254,
	// and its lanes continue that formula past the middle: element 25 is x₀ + step =
	// 1.4901161193847656e-07, not 0, and element 26 is 0.4000001549720764, not the mirror of
	// element 24. Elements 48 to 50 follow the last pair of vectors: end − step·(n−1−i).
	c51 := spec.Linspace(-10, 10, 51, spec.Float32)
	require.Len(t, c51, 51)
	require.Equal(t, -10.0, c51[0])
	require.Equal(t, -9.600000381469727, c51[1])
	require.Equal(t, -5.600000381469727, c51[11])
	require.Equal(t, -0.39999985694885254, c51[24])
	require.Equal(t, 1.4901161193847656e-07, c51[25])
	require.Equal(t, 0.4000001549720764, c51[26])
	require.Equal(t, 8.800000190734863, c51[47])
	require.Equal(t, 9.199999809265137, c51[48])
	require.Equal(t, 9.600000381469727, c51[49])
	require.Equal(t, 10.0, c51[50])
	for _, x := range c51 {
		require.Equal(t, x, float64(float32(x)), "a float32 value")
	}
	// float64: 4-lane vectors; element 24 is f64(−10 + 24·0.4) from its vector's first element.
	c51d := spec.Linspace(-10, 10, 51, spec.Float64)
	require.Equal(t, []float64{-9.6, -8.8, -0.39999999999999947, 0.4000000000000006, 9.6}, []float64{c51d[1], c51d[3], c51d[24], c51d[26], c51d[49]})
	// steps = 1 is [start] (RangeFactories.cpp fills it).
	require.Equal(t, []float64{0.10000000149011612}, spec.Linspace(0.1, 5, 1, spec.Float32))
}

// support: {vmin, vmax, n_atoms} is the list torch.linspace gives in the param_dtype; n_atoms
// must be the atom dim's size.
func TestLinspaceSupport(t *testing.T) {
	src := func(paramDType, support string) string {
		return "package: p\nparam_dtype: " + paramDType + "\ndims: {B: 4, K: 4, A: 3}\nbatch: [B]\n" +
			"transforms: [{type: distributional_qvalue, action_dim: A, atom_dim: K, support: " + support + "}]\n"
	}
	require.Empty(t, sameSpec(t,
		src("float32", "{vmin: 0, vmax: 1, n_atoms: 4}"),
		src("float32", "[0, 0.3333333432674408, 0.6666666269302368, 1]")))
	require.Empty(t, sameSpec(t,
		src("float64", "{vmin: 0, vmax: 1, n_atoms: 4}"),
		src("float64", "[0, 0.3333333333333333, 0.6666666666666667, 1]")))
	// torch.linspace's own argument names read the same.
	require.Empty(t, sameSpec(t,
		src("float32", "{start: 0, end: 1, steps: 4}"),
		src("float32", "{vmin: 0, vmax: 1, n_atoms: 4}")))

	_, err := spec.Parse("t.yaml", []byte(src("float32", "{vmin: 0, vmax: 1, n_atoms: 51}")), reg)
	require.EqualError(t, err, "t.yaml:5:109: transforms[0].support.n_atoms: 51, but the atom dim K (atom_dim) has 4: n_atoms must equal dims.K")
	_, err = spec.Parse("t.yaml", []byte(src("float32", "{vmin: 0, vmax: 1}")), reg)
	require.EqualError(t, err, `t.yaml:5:81: transforms[0].support: missing key "n_atoms": write {vmin: V_MIN, vmax: V_MAX, n_atoms: K}, the support torch.linspace(vmin, vmax, n_atoms)`)
	_, err = spec.Parse("t.yaml", []byte(src("float32", "{vmin: 0, vmax: 1, atoms: 4}")), reg)
	require.EqualError(t, err, `t.yaml:5:81: transforms[0].support: missing key "n_atoms": write {vmin: V_MIN, vmax: V_MAX, n_atoms: K}, the support torch.linspace(vmin, vmax, n_atoms)
t.yaml:5:100: transforms[0].support: unknown key "atoms" (did you mean "n_atoms"? allowed: n_atoms, vmax, vmin)`)
	_, err = spec.Parse("t.yaml", []byte(src("float32", "{vmin: 0, vmax: 1e39, n_atoms: 4}")), reg)
	require.EqualError(t, err, "t.yaml:5:81: transforms[0].support: 1e+39 does not fit the float32 the kernel holds it in (largest 3.4028235e+38); TorchRL would hold inf")
	_, err = spec.Parse("t.yaml", []byte(src("float32", "5")), reg)
	require.EqualError(t, err, "t.yaml:5:81: transforms[0].support: want a list of numbers or {vmin: V, vmax: V, n_atoms: K} (torch.linspace(vmin, vmax, n_atoms)), got number 5")
}

// Every independent error of a spec is reported in one run, sorted by position: decoding
// errors (an unknown key, a bad value) together with the checks of the stages they leave
// meaningful (a support of the wrong length, a time dim that is no batch dim).
func TestEveryIndependentErrorInOneRun(t *testing.T) {
	src := `package: p
dims: {N: 4, T: 8, K: 5, A: 3}
batch: [N, T]
transforms:
  - type: distributional_qvalue
    action_dim: A
    atom_dim: K
    atoms: 5
    support: [-1, 0, 1]
estimator: {type: gae, time_dim: A}
loss: {type: clip_ppo, reduction: max}
`
	_, err := spec.Parse("t.yaml", []byte(src), reg)
	var list spec.ErrorList
	require.True(t, errors.As(err, &list), "%T", err)
	require.Len(t, list, 4)
	require.EqualError(t, err, `t.yaml:8:5: transforms[0]: unknown key "atoms" (did you mean "n_atoms"? allowed: action_dim, action_space, atom_dim, n_atoms, support, type, var_nums, vmax, vmin)
t.yaml:9:14: transforms[0].support: has 3 values but the atom dim K has 5 (TorchRL: "Support length and number of atoms in module output should match")
t.yaml:10:34: estimator.time_dim: "A" is not a batch dim [N T]
t.yaml:11:35: loss.reduction: unknown value "max" (allowed: mean, none, sum)`)
	var one *spec.Error
	require.True(t, errors.As(list[2], &one))
	require.Equal(t, spec.Pos{File: "t.yaml", Line: 10, Col: 34}, one.Pos)
}

// What an error makes meaningless is not reported again: a dim whose size is bad is not
// "undeclared" in batch, and the checks of a stage whose parameter is bad do not run on the
// default in its place.
func TestNoConsequentialErrors(t *testing.T) {
	for src, want := range map[string]string{
		// N is written (with a bad size): batch's N is not also undeclared.
		"package: p\ndims: {N: 0, T: 8}\nbatch: [N, T]\nloss: {type: clip_ppo}\n": "t.yaml:2:11: dims.N: a dim must be > 0, got 0",
		// No dims at all: nothing is "undeclared", and no stage is checked against them.
		"package: p\nbatch: [B]\nloss: {type: discrete_iql, action_dim: A}\n": `t.yaml:1:1: missing required key "dims"`,
		// A bad action_dim is reported once, not also as "required" by the check.
		"package: p\ndims: {B: 4, A: 3}\nbatch: [B]\nloss: {type: discrete_iql, action_dim: [A]}\n": "t.yaml:4:40: loss.action_dim: want a string, got a list",
		"package: !!binary aGVsbG8=\ndims: {B: 4}\nbatch: [B]\nloss: {type: clip_ppo}\n":            "t.yaml:1:10: package: want a string, got a value tagged !!binary (\"aGVsbG8=\")",
		// A bad action_space is not replaced by the default before the distribution is checked.
		"package: p\ndims: {B: 4, A: 3}\nbatch: [B]\nloss: {type: discrete_iql, action_dim: A, action_space: onehot, distribution: categorical}\n": `t.yaml:4:57: loss.action_space: unknown value "onehot" (did you mean "one_hot"? allowed: categorical, one_hot)`,
		// A loss that failed leaves the estimator's defaults unknown (a standalone estimator has none).
		"package: p\ndims: {N: 2, T: 3}\nbatch: [N, T]\nestimator: {type: gae}\nloss: {type: clipppo}\n": `t.yaml:5:14: loss.type: unknown value "clipppo" (did you mean "clip_ppo"? allowed: ` + strings.Join(reg.Types(spec.Loss), ", ") + ")",
	} {
		_, err := spec.Parse("t.yaml", []byte(src), reg)
		require.EqualError(t, err, want, src)
	}
}

// TDLambdaEstimator's and GAE's vectorized (an implementation choice, the same estimate) is
// accepted with a note that it has no effect; the estimators that do not take it (TD(0), TD(1),
// V-trace) refuse it as an unknown key.
func TestVectorizedIgnored(t *testing.T) {
	const head = "package: p\ndims: {B: 4, T: 8}\nbatch: [B, T]\nestimator:\n"
	for _, est := range []string{"td_lambda", "gae"} {
		notes := sameSpec(t,
			head+"  type: "+est+"\n  gamma: 0.99\n  lmbda: 0.95\n  vectorized: true\n",
			head+"  type: "+est+"\n  gamma: 0.99\n  lmbda: 0.95\n")
		require.Len(t, notes, 1)
		require.Equal(t, "t.yaml:8:15: note: estimator.vectorized: no effect here: TorchRL's choice between its vectorized and looped implementations, which give the same estimate; lossgen's kernel is always the fused form", notes[0].Error())
	}
	// GAE's is bool | None; TDLambdaEstimator's a bool.
	require.Len(t, sameSpec(t, head+"  type: gae\n  gamma: 0.99\n  lmbda: 0.95\n  vectorized: null\n", head+"  type: gae\n  gamma: 0.99\n  lmbda: 0.95\n"), 1)
	_, err := spec.Parse("t.yaml", []byte(head+"  type: td_lambda\n  gamma: 0.99\n  lmbda: 0.95\n  vectorized: 1\n"), reg)
	require.EqualError(t, err, "t.yaml:8:15: estimator.vectorized: want true or false, got number 1")
	_, err = spec.Parse("t.yaml", []byte(head+"  type: td1\n  gamma: 0.99\n  vectorized: true\n"), reg)
	require.ErrorContains(t, err, `t.yaml:7:3: estimator: unknown key "vectorized"`)
}

// An unwritten action dim defaults to the one declared dim after the batch dims that no
// other dim parameter of the stage names; with several candidates the error names them.
func TestActionDimDefault(t *testing.T) {
	const head = "package: p\ndims: {Q: 2, N: 4, T: 3, A: 4}\nbatch: [N, T]\n"
	got, err := spec.Parse("t.yaml", []byte(head+"loss: {type: discrete_iql, action_space: one_hot}\n"), reg)
	require.NoError(t, err)
	want, err := spec.Parse("t.yaml", []byte(head+"loss: {type: discrete_iql, action_space: one_hot, action_dim: A}\n"), reg)
	require.NoError(t, err)
	require.Equal(t, "A", got.Loss.String("action_dim"))
	require.False(t, got.Loss.Written("action_dim"))
	got.Loss.Values["action_dim"] = want.Loss.Values["action_dim"] // the written value's position
	require.Equal(t, want.Loss, got.Loss)
	require.Equal(t, want.Estimator, got.Estimator) // the implied TD(0) target
	require.Equal(t, want.Keys, got.Keys)

	// The distributional module's atom dim is named, so A is the only candidate left.
	const c51 = "package: p\ndims: {N: 4, T: 3, K: 5, A: 4}\nbatch: [N, T]\n"
	got, err = spec.Parse("t.yaml", []byte(c51+"transforms: [{type: distributional_qvalue, atom_dim: K, support: [-2, -1, 0, 1, 2]}]\n"), reg)
	require.NoError(t, err)
	require.Equal(t, "A", got.Transforms[0].String("action_dim"))

	// Both unwritten: the atom dim is the one of the support's length, the action dim the other.
	got, err = spec.Parse("t.yaml", []byte(c51+"transforms: [{type: distributional_qvalue, support: [-2, -1, 0, 1, 2]}]\n"), reg)
	require.NoError(t, err)
	require.Equal(t, "K", got.Transforms[0].String("atom_dim"))
	require.Equal(t, "A", got.Transforms[0].String("action_dim"))
	// With K and A of one size the support cannot tell them apart: the error names both.
	const same = "package: p\ndims: {N: 4, T: 3, K: 5, A: 5}\nbatch: [N, T]\n"
	_, err = spec.Parse("t.yaml", []byte(same+"transforms: [{type: distributional_qvalue, support: [-2, -1, 0, 1, 2]}]\n"), reg)
	require.EqualError(t, err, "t.yaml:4:14: transforms[0].action_dim: required: one of K, A (the dims declared after the batch dims)")
	// A categorical policy's action dim is the one dim after the batch dims, too.
	got, err = spec.Parse("t.yaml", []byte("package: p\ndims: {N: 4, T: 3, A: 6}\nbatch: [N, T]\nloss: {type: clip_ppo, distribution: categorical}\n"), reg)
	require.NoError(t, err)
	require.Equal(t, "A", got.Loss.String("action_dim"))
	_, err = spec.Parse("t.yaml", []byte("package: p\ndims: {N: 4, T: 3}\nbatch: [N, T]\nloss: {type: clip_ppo, distribution: categorical}\n"), reg)
	require.EqualError(t, err, "t.yaml:4:38: loss.distribution: categorical needs action_dim, the dim of its logits [*batch, A]: declare it under dims after the batch dims (e.g. A: <size>)")
	_, err = spec.Parse("t.yaml", []byte("package: p\ndims: {N: 4, T: 3}\nbatch: [N, T]\ntransforms: [{type: qvalue}]\n"), reg)
	require.EqualError(t, err, "t.yaml:4:14: transforms[0].action_dim: required: the name of a dim declared under dims, after the batch dims")
}

// C51's support written flat, vmin, vmax and n_atoms in the stage's own mapping, reads as
// support: {vmin, vmax, n_atoms}; a missing support says how to write it.
func TestFlatLinspaceSupport(t *testing.T) {
	const head = "package: p\ndims: {B: 4, K: 51, A: 3}\nbatch: [B]\ntransforms:\n- type: distributional_qvalue\n  action_dim: A\n  atom_dim: K\n"
	require.Empty(t, sameSpec(t,
		head+"  vmin:    -10\n  vmax: 10\n  n_atoms: 51\n",
		head+"  support: {vmin: -10, vmax: 10, n_atoms: 51}\n"))
	got, err := spec.Parse("t.yaml", []byte(head+"  n_atoms: 51\n  vmax: 10\n  vmin: -10\n"), reg)
	require.NoError(t, err)
	sup := got.Transforms[0].Get("support").([]float64)
	require.Len(t, sup, 51)
	require.Equal(t, []float64{-10, 10}, []float64{sup[0], sup[50]})
	require.Equal(t, float64(float32(-10+float32(0.4)*float32(1))), sup[1])

	for src, msg := range map[string]string{
		"":                          "t.yaml:5:3: transforms[0]: required: support, a list of the atoms or {vmin: …, vmax: …, n_atoms: …}",
		"  vmin: -10\n  vmax: 10\n": `t.yaml:8:9: transforms[0].support: missing key "n_atoms": write {vmin: V_MIN, vmax: V_MAX, n_atoms: K}, the support torch.linspace(vmin, vmax, n_atoms)`,
		"  vmin: -10\n  vmax: 10\n  n_atoms: 5\n":                                               "t.yaml:10:12: transforms[0].support.n_atoms: 5, but the atom dim K (atom_dim) has 51: n_atoms must equal dims.K",
		"  vmin: -1\n  vmax: 1\n  n_atoms: 51\n  support: {vmin: -10, vmax: 10, n_atoms: 51}\n": "t.yaml:8:3: transforms[0]: vmin and support: write the support once, as support: {vmin: …, vmax: …, n_atoms: …} or as flat vmin, vmax and n_atoms",
	} {
		_, err := spec.Parse("t.yaml", []byte(head+src), reg)
		require.EqualError(t, err, msg, src)
	}
}

// SAC's action_dim, an integer in TorchRL, may name the dim the actions have elsewhere in
// the spec; it reads as that dim's size, and the dim then counts as used.
func TestActionDimAsDimName(t *testing.T) {
	src := func(actionDim string) string {
		return "package: p\ndims: {Q: 2, B: 4, D: 6}\nbatch: [B]\nloss: {type: sac, action_dim: " + actionDim + "}\n"
	}
	s, err := spec.Parse("t.yaml", []byte(src("D")), reg)
	require.NoError(t, err)
	require.Equal(t, 6, s.Loss.Int("action_dim"))
	require.True(t, s.Loss.Written("action_dim"))
	_, _, err = lower.Lower(s)
	require.NoError(t, err)
	for _, w := range s.Warnings {
		require.NotContains(t, w.Error(), "dims.D", "D is named by action_dim")
	}
	n, err := spec.Parse("t.yaml", []byte(src("6")), reg)
	require.NoError(t, err)
	require.Equal(t, 6, n.Loss.Int("action_dim"))
	_, err = spec.Parse("t.yaml", []byte(src("E")), reg)
	require.EqualError(t, err, `t.yaml:4:31: loss.action_dim: "E" is not a dim: want an integer, or the name of a dim declared under dims (read as its size)`)
	_, err = spec.Parse("t.yaml", []byte(strings.Replace(src("D"), "D: 6", "D: 0", 1)), reg)
	require.Error(t, err)
}
