package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// QValueModule and DistributionalQValueModule (torchrl/modules/tensordict_module/actors.py,
// SEMANTICS.md §5.2, §5.3, §11.8): the greedy action of a Q-value policy, as transforms.

const actorsSource = "torchrl/modules/tensordict_module/actors.py"

// The keys the Q-value modules read and write.
var (
	keyActionValue = spec.KeyDef{Name: "action_value", Default: []string{"action_value"}, Differentiable: true, Shape: "[*batch, A] | [*batch, K, A] | [Q, *batch, A]",
		Doc:    "the Q-network's action values [*batch, A] (distributional: log-softmax values [*batch, K, A]) (TorchRL key action_value)",
		Sample: spec.Sample{Dist: "uniform", Lo: -4, Hi: -0.01, ExtremeTie: true}}
	keyActionMask = spec.KeyDef{Name: "action_mask", Kind: spec.BoolKey, Shape: "[*batch, A]",
		Doc:    "the allowed actions [*batch, A], true where allowed (TorchRL's action_mask_key; absent unless mapped)",
		Sample: spec.Sample{Dist: "flag", P: 0.7, ExtremeRows: true}}
	keyChosenActionValue = spec.KeyDef{Name: "chosen_action_value", Default: []string{"chosen_action_value"},
		Doc: "the value of the chosen action (TorchRL key chosen_action_value)"}
)

func init() {
	spaces := []string{"one_hot", "categorical", "mult_one_hot"}
	params := []spec.ParamDef{
		{Name: "action_space", Type: spec.Enum, Default: "one_hot", Enum: spaces, ValueAliases: actionSpaceAliases,
			Doc: "one_hot (every maximal action marked), categorical (the first maximal index) or mult_one_hot (one_hot per chunk of var_nums)"},
		paramActionDim,
		{Name: "var_nums", Type: spec.IntList, Min: 1, Max: math.Inf(1), Doc: "mult_one_hot's chunk sizes along the action dim (torch.split sizes; they sum to A)"},
	}
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Transform, Type: "qvalue", Class: "QValueModule", Source: actorsSource,
			Params: params, Keys: []spec.KeyDef{keyActionValue, keyActionMask, keyAction, keyChosenActionValue},
			Check:   func(c *spec.Check) { checkQValue(c) },
			Example: &spec.Example{Params: map[string]any{"action_dim": "A"}, After: []spec.Dim{{Name: "A", Size: 4}}}},
		Lower: lowerQValue,
	})
	register(&Stage{
		StageDef: spec.StageDef{Kind: spec.Transform, Type: "distributional_qvalue", Class: "DistributionalQValueModule", Source: actorsSource,
			Params: append(append([]spec.ParamDef(nil), params...),
				spec.ParamDef{Name: "atom_dim", Type: spec.DimName, Doc: "the dim of the atoms, declared after the batch dims and before action_dim (values are [*batch, K, A])"},
				spec.ParamDef{Name: "support", Type: spec.FloatList, Min: math.Inf(-1), Max: math.Inf(1), LinspaceDim: "atom_dim", Doc: "the K atoms' values (TorchRL's support tensor)"}),
			Keys: []spec.KeyDef{keyActionValue, keyActionMask, keyAction},
			Check: func(c *spec.Check) {
				inferAtomDim(c)
				if checkQValue(c) && checkInnerDim(c, "atom_dim", "after") {
					checkSupport(c)
				}
			},
			Example: &spec.Example{Params: map[string]any{"action_dim": "A", "atom_dim": "K", "support": []float64{-2, -1, 0, 1, 2}},
				After: []spec.Dim{{Name: "K", Size: 5}, {Name: "A", Size: 4}}}},
		Lower: lowerDistributionalQValue,
	})
}

// actionSpaceAliases are the other spellings TorchRL's _find_action_space accepts for the
// action spaces lossgen takes (ACTION_SPACE_MAP, torchrl/data/utils.py).
var (
	oneHotAlias        = spec.Alias{Name: "one-hot", For: "one_hot"}
	actionSpaceAliases = []spec.Alias{oneHotAlias,
		{Name: "mult-one-hot", For: "mult_one_hot"},
		{Name: "multi_one_hot", For: "mult_one_hot"},
		{Name: "multi-one-hot", For: "mult_one_hot"}}
)

// checkQValue checks the action dim and mult_one_hot's var_nums (QValueModule raises
// ValueError without them; torch.split fails on sizes that do not sum to A). It reports
// whether the action dim is usable.
func checkQValue(c *spec.Check) bool {
	st := c.Stage
	if !checkInnerDim(c, "action_dim", "after") {
		return false
	}
	nums, _ := st.Get("var_nums").([]int)
	if st.String("action_space") != "mult_one_hot" {
		if nums != nil {
			c.Warnf("var_nums", "is used by action_space mult_one_hot only; ignored")
		}
		return true
	}
	if len(nums) == 0 {
		c.Errorf("var_nums", "required for action_space mult_one_hot: the chunk sizes along the action dim (TorchRL raises ValueError without them)")
		return false
	}
	a := st.String("action_dim")
	sum := 0
	for _, n := range nums {
		if n < 1 {
			c.Errorf("var_nums", "chunk sizes must be at least 1, got %v", nums)
			return false
		}
		sum += n
	}
	if sum != c.Spec.DimSize(a) {
		c.Errorf("var_nums", "the chunk sizes %v sum to %d, but the action dim %s has %d actions (torch.split needs them to agree)", nums, sum, a, c.Spec.DimSize(a))
		return false
	}
	return true
}

// checkSupport checks the distributional module's support and dims: K atoms declared between
// the batch dims and the action dim, one support value per atom (TorchRL raises RuntimeError
// otherwise), and for mult_one_hot at most K chunks (v0.11 zips the chunks with the support's
// K values, silently dropping chunks beyond the K-th).
func checkSupport(c *spec.Check) {
	st, s := c.Stage, c.Spec
	k, a := st.String("atom_dim"), st.String("action_dim")
	if k == a {
		c.Errorf("atom_dim", "is the action dim %s; the atoms need a dim of their own", a)
		return
	}
	pos := map[string]int{}
	for i, d := range s.Dims {
		pos[d.Name] = i
	}
	if pos[k] > pos[a] {
		c.Errorf("atom_dim", "dims.%s must be declared before the action dim %s (values are [*batch, %s, %s], TorchRL's atoms on dim −2)", k, a, k, a)
		return
	}
	sup, _ := st.Get("support").([]float64)
	if sup == nil {
		c.Errorf("", "required: support, a list of the atoms or {vmin: …, vmax: …, n_atoms: …}")
		return
	}
	if len(sup) != s.DimSize(k) {
		c.Errorf("support", "has %d values but the atom dim %s has %d (TorchRL: \"Support length and number of atoms in module output should match\")", len(sup), k, s.DimSize(k))
		return
	}
	if nums, _ := st.Get("var_nums").([]int); st.String("action_space") == "mult_one_hot" && len(nums) > len(sup) {
		c.Errorf("var_nums", "%d chunks but %d atoms: TorchRL v0.11 pairs each chunk with one support value and drops the chunks beyond the %d-th", len(nums), len(sup), len(sup))
	}
}

// lowest is torch.finfo(dtype).min, the most negative finite value of the kernel's dtype,
// which the Q-value modules write into masked-out action values.
func lowest(dt ir.DType) float64 {
	if dt == ir.F64 {
		return -math.MaxFloat64
	}
	return -math.MaxFloat32
}

// maskedActionValues reads the action values of the given shape and, with keys.action_mask,
// replaces masked-out entries by the dtype's most negative finite value: torch.where(mask,
// values, finfo.min) (QValueModule.forward). The mask is [*batch, A]; over the atoms of a
// distributional module it broadcasts (TorchRL's [*batch, 1, A]).
func (l *Lowerer) maskedActionValues(shape ir.Shape, a string) *ir.Node {
	v := l.ReadShaped("action_value", shape)
	if !l.Mapped("action_mask") {
		return v
	}
	mask := l.ReadShaped("action_mask", l.B.Shape(append(l.Batch().Names(), a)...))
	return l.B.Note(l.B.Where(mask, v, l.B.Const(lowest(l.DType()))), "masked_action_value")
}

// greedy is the action a Q-value module chooses from values q [*batch, A]:
// one_hot: 1 where q equals its row's maximum (every tie marked; QValueModule._one_hot);
// categorical: the first maximal index (torch.argmax); mult_one_hot: one_hot within each
// chunk of var_nums (QValueModule._mult_one_hot, torch.split then cat).
func (l *Lowerer) greedy(st *spec.Stage, q *ir.Node) *ir.Node {
	b := l.B
	a := st.String("action_dim")
	switch st.String("action_space") {
	case "categorical":
		return b.ArgMax(q, a)
	case "mult_one_hot":
		// Each action's chunk maximum: the maximum of q with the other chunks' entries at −inf
		// (NaN stays within its chunk, as torch.max of the split does).
		// Chunk j holds the actions [starts[j], starts[j+1]).
		nums, _ := st.Get("var_nums").([]int)
		starts := []int{0}
		for _, n := range nums {
			starts = append(starts, starts[len(starts)-1]+n)
		}
		iota := b.Iota(a, false)
		var m *ir.Node
		for j := len(nums) - 1; j >= 0; j-- {
			in := b.Mul(b.Ge(iota, b.Const(float64(starts[j]))), b.Lt(iota, b.Const(float64(starts[j+1]))))
			mj := b.ReduceMax(b.Where(in, q, b.Const(math.Inf(-1))), a)
			if m == nil {
				m = b.Broadcast(mj, q.Shape)
			} else {
				m = b.Where(in, mj, m)
			}
		}
		return b.Eq(q, m)
	}
	return b.Eq(q, b.ReduceMax(q, a))
}

// lowerQValue is QValueModule.forward (v0.11; SEMANTICS.md §5.2, §11.8):
//
//	values = where(action_mask, action_value, finfo(dtype).min)     (with keys.action_mask)
//	action = greedy(values)                 (one_hot / categorical / mult_one_hot)
//	chosen_action_value = Σ_a action_a·values_a       (one_hot, mult_one_hot: k·max for a k-way tie)
//	                    = values[action]              (categorical)
//
// action_value is written back as the masked values, as TorchRL's out_keys do.
func lowerQValue(l *Lowerer, st *spec.Stage) {
	b := l.B
	a := st.String("action_dim")
	v := l.maskedActionValues(b.Shape(append(l.Batch().Names(), a)...), a)
	act := l.greedy(st, v)
	chosen := l.valueAt(st, v, act)
	l.Write("action", act, ir.Transformed, actionDoc(st))
	l.Write("action_value", v, ir.Transformed, "the action values, with masked-out actions at the dtype's most negative finite value (TorchRL key action_value)")
	l.Write("chosen_action_value", chosen, ir.Transformed,
		"the chosen action's value: Σ_a action_a·values_a (k·max for a k-way tie), or values[action] for categorical; [*batch] (TorchRL's [*batch, 1])")
}

func actionDoc(st *spec.Stage) string {
	switch st.String("action_space") {
	case "categorical":
		return "the greedy action: the first maximal index along the action dim, as a float (TorchRL: int64 [*batch])"
	case "mult_one_hot":
		return "the greedy action: within each chunk of var_nums, 1 at every maximal entry (ties all marked), 0 elsewhere, as floats (TorchRL: int64)"
	}
	return "the greedy action: 1 at every maximal entry of the row (ties all marked), 0 elsewhere, as floats (TorchRL: int64)"
}

// lowerDistributionalQValue is DistributionalQValueModule.forward (v0.11; SEMANTICS.md §5.3):
//
//	values = where(action_mask, action_value, finfo(dtype).min)     (with keys.action_mask)
//	Q[a]   = Σ_k exp(values[k, a])·support[k]        (_support_expected)
//	action = greedy(Q)
//
// TorchRL raises ValueError when a value is above 0 (the input must be log-softmax values):
// the kernel counts such elements in the fault output invalid_action_value, and Forward
// returns a *runtime.DataError when it is not 0. The support is a tensor of torch's default
// dtype in TorchRL, so param_dtype float32 rounds it to float32 (SEMANTICS.md §11.14).
func lowerDistributionalQValue(l *Lowerer, st *spec.Stage) {
	b := l.B
	a, k := st.String("action_dim"), st.String("atom_dim")
	v := l.maskedActionValues(b.Shape(append(l.Batch().Names(), k, a)...), a)
	q := l.expectedValues(v, l.support(st), k)
	l.Write("action", l.greedy(st, q), ir.Transformed, actionDoc(st)+"; of the expected values Σ_k exp(values[k, a])·support[k]")
	l.Write("action_value", v, ir.Transformed, "the log-softmax action values, with masked-out actions at the dtype's most negative finite value (TorchRL key action_value)")
	l.Output("expected_action_value", q, ir.Transformed,
		"each action's expected value Σ_k exp(values[k, a])·support[k] [*batch, A], what the action is chosen from (TorchRL computes it in DistributionalQValueModule._support_expected and does not return it)")
	l.Output("invalid_action_value", b.SumAll(b.Gt(v, b.Const(0))), ir.Fault,
		"the number of (unmasked) action_value elements above 0: log-softmax values must be ≤ 0, and TorchRL raises ValueError (exact up to 2^24 in float32; Forward returns a *runtime.DataError when it is not 0)")
}

// valueAt is q [..., A] at an action along the stage's action dim, Q(s, a): for an index
// (categorical) the gathered entry, torch.gather(q, -1, action[..., None]).squeeze(-1); for
// flags (one_hot, mult_one_hot) (q·action).sum(-1), which is k·max at a k-way tie of a
// greedy one-hot action (QValueModule's chosen_action_value).
func (l *Lowerer) valueAt(st *spec.Stage, q, act *ir.Node) *ir.Node {
	a := st.String("action_dim")
	if st.String("action_space") == "categorical" {
		return l.B.Gather(q, act, a)
	}
	return l.B.Sum(l.B.Mul(q, act), a)
}

// storedAction reads the data's action for the stage's action space: an index into the
// action dim [*batch] (categorical), or a one-hot vector of flags [*batch, A] (TorchRL's
// losses cast it with action.to(torch.float)).
func (l *Lowerer) storedAction(st *spec.Stage) *ir.Node {
	a := st.String("action_dim")
	if st.String("action_space") == "categorical" {
		act := l.ReadAs("action", l.Batch(), spec.IndexKey)
		l.KeyDoc("action", "the stored action: an index into "+a+" [*batch]")
		return act
	}
	act := l.ReadAs("action", l.B.Shape(append(l.Batch().Names(), a)...), spec.BoolKey)
	l.KeyDoc("action", "the stored action: a one-hot vector of flags [*batch, "+a+"]")
	return act
}

// checkActionSpace applies the action space TorchRL's discrete losses fall back to: one_hot,
// with a warning, when neither the loss nor its value network gives one.
func checkActionSpace(c *spec.Check) {
	if c.Stage.Get("action_space") == nil {
		c.Warnf("action_space", "not given: one_hot is used, as TorchRL's %s does with a warning (write action_space: one_hot or categorical)", c.Stage.Def.Class)
		c.Stage.Set("action_space", "one_hot")
	}
}

// support is the stage's support parameter as TorchRL holds it: a tensor of torch's default
// dtype, so param_dtype float32 rounds each atom to float32 (SEMANTICS.md §11.14).
func (l *Lowerer) support(st *spec.Stage) []float64 {
	sup, _ := st.Get("support").([]float64)
	vals := make([]float64, len(sup))
	for i, x := range sup {
		vals[i] = x
		if l.S.ParamDType == spec.Float32 {
			vals[i] = float64(float32(x))
		}
	}
	return vals
}

// expectedValues is each action's expected value Σ_k exp(v[k, a])·support[k] over the atom
// dim k of log-softmax values v [*batch, K, A] (DistributionalQValueModule._support_expected).
func (l *Lowerer) expectedValues(v *ir.Node, sup []float64, k string) *ir.Node {
	b := l.B
	return b.Note(b.Sum(b.Mul(b.Exp(v), b.ConstTensor(b.Shape(k), sup)), k), "expected_q")
}
