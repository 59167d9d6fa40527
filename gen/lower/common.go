package lower

import (
	"strings"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// Building blocks several stages share (SEMANTICS.md §1).

// reductions are _reduce's modes; distances are distance_loss's.
var (
	reductions = []string{"none", "mean", "sum"}
	distances  = []string{"l1", "l2", "smooth_l1"}
)

// distance is torchrl/objectives/utils.py distance_loss(v1, v2, fn), elementwise:
// l2 (v1−v2)², l1 |v1−v2|, smooth_l1 Huber with beta 1 (PyTorch's F.smooth_l1_loss).
func (l *Lowerer) distance(v1, v2 *ir.Node, fn string) *ir.Node {
	b := l.B
	x := b.Note(b.Sub(v1, v2), "diff")
	switch fn {
	case "l2":
		return b.Note(b.Square(x), "l2")
	case "l1":
		return b.Note(b.Abs(x), "l1")
	}
	z := b.Note(b.Abs(x), "abs_diff")
	half := b.Const(0.5)
	return b.Note(b.Where(b.Lt(z, b.Const(1)), b.Mul(b.Mul(half, z), z), b.Sub(z, half)), "smooth_l1")
}

// timeDim is the estimator st's time axis in the kernel being lowered (TimeDim).
func (l *Lowerer) timeDim(st *spec.Stage) string { return TimeDim(st, l.Batch()) }

// TimeDim is estimator st's time axis in a kernel whose batch (in layout order) is batch: its
// time_dim, or the last batch dim (TorchRL's default for a tensordict without a dim named
// "time", SEMANTICS.md §0.3).
func TimeDim(st *spec.Stage, batch ir.Shape) string {
	if t := st.String("time_dim"); t != "" {
		return t
	}
	return batch[len(batch)-1].Name
}

// paramTimeDim is the time_dim parameter every estimator takes.
var paramTimeDim = spec.ParamDef{Name: "time_dim", Type: spec.DimName, DimIndex: true,
	Doc: "the batch dim that is time (default: the last batch dim), so a time-major batch runs without a transpose; " +
		"explained_variance and ESS stay along dim 0 as in TorchRL, so a time-major batch changes them (SEMANTICS.md §11.23)"}

// paramVectorized is TDLambdaEstimator's and GAE's vectorized (GAE's may be None), which
// picks TorchRL's vectorized or looped implementation of the same estimate
// (torchrl/objectives/value/advantages.py): accepted on those stages (StageDef.Ignored) and
// ignored with a note.
func paramVectorized(null any) spec.ParamDef {
	return spec.ParamDef{Name: "vectorized", Type: spec.Bool, Null: null,
		Doc: "TorchRL's choice between its vectorized and looped implementations, which give the same estimate; lossgen's kernel is always the fused form"}
}

// checkTimeDim checks that time_dim, a declared dim (the spec checks that), is a batch dim.
func checkTimeDim(c *spec.Check) {
	if t := c.Stage.String("time_dim"); t != "" && c.Spec.DimSize(t) > 0 && !contains(c.Spec.Batch, t) {
		c.Errorf("time_dim", "%q is not a batch dim %v", t, c.Spec.Batch)
	}
}

// discountDefaults applies the defaults a loss injects into the estimator it builds (γ 0.99,
// λ 0.95, torchrl/objectives/utils.py default_value_kwargs); a standalone estimator class has
// none, so there they are required (SEMANTICS.md §1.7).
func discountDefaults(c *spec.Check, params ...string) {
	for _, p := range params {
		if c.Stage.Get(p) != nil {
			continue
		}
		if c.Spec.Loss != nil {
			c.Stage.Set(p, lossDiscounts[p])
			continue
		}
		c.Errorf(p, "required for a standalone %s estimator (TorchRL's estimator classes have no default)", c.Stage.Type)
	}
}

// lossDiscounts are the discounts a loss gives the estimator it builds.
var lossDiscounts = map[string]float64{"gamma": 0.99, "lmbda": 0.95}

// discountExample is an estimator's starter-spec entry: the loss defaults of its discounts,
// which a standalone estimator needs written.
func discountExample(params ...string) *spec.Example {
	e := &spec.Example{Params: map[string]any{}}
	for _, p := range params {
		e.Params[p] = lossDiscounts[p]
	}
	return e
}

// unitInterval is a parameter range [0, 1].
func unitParam(name, doc string) spec.ParamDef {
	return spec.ParamDef{Name: name, Type: spec.Float, Min: 0, Max: 1, Doc: doc}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// lastStep is 1 at the last index of the time dim and 0 elsewhere: the "done" TorchRL's
// return recursions force at the end of a row, where they bootstrap from V'. It counts from
// the end, so that it is exact in float32 on a time dim of any length.
func (l *Lowerer) lastStep(time string) *ir.Node {
	return l.B.Eq(l.B.Iota(time, true), l.B.Const(0))
}

// averageRewards is the TD estimators' average_rewards (SEMANTICS.md §3.1, §11.10): the reward
// standardised over every element with the unbiased std floored at floor, before the
// estimator reads it.
func (l *Lowerer) averageRewards(st *spec.Stage, r *ir.Node, floor float64) *ir.Node {
	if !st.Bool("average_rewards") {
		return r
	}
	return l.B.Note(l.standardize(r, nil, floor), "reward_standardized")
}

// estimatorCheck is what every estimator checks: its discount defaults, time_dim, and a
// standardisation that would divide by NaN.
func estimatorCheck(params []string, standardise string) func(c *spec.Check) {
	return func(c *spec.Check) {
		discountDefaults(c, params...)
		checkTimeDim(c)
		if standardise != "" {
			checkStandardise(c, standardise)
		}
	}
}

// paramAverageRewards is TD0/TD1/TD(λ)'s average_rewards.
var paramAverageRewards = spec.ParamDef{Name: "average_rewards", Type: spec.Bool, Default: false,
	Doc: "standardise the reward first: (R − mean R)/max(std R, floor), unbiased std over every element"}

// checkInnerDim checks a parameter naming a non-batch dim (an ensemble, action or atom dim):
// it is required (one laid out after the batch dims defaults to the only dim that can be it,
// defaultInnerDim), declared, not a batch dim, and declared before ("before") or after
// ("after") every batch dim, as the tensors' layout ([Q, *batch], [*batch, A]) puts it: a
// tensor's dims are in the order of dims. It reports whether the dim is usable.
func checkInnerDim(c *spec.Check, param, where string) bool {
	s := c.Spec
	name := c.Stage.String(param)
	if name == "" && where == "after" {
		name = defaultInnerDim(c, param)
	} else if name == "" {
		c.Errorf(param, "required: the name of a dim declared under dims")
	}
	if name == "" {
		return false
	}
	if s.DimSize(name) == 0 {
		return false // reported with the other dim names
	}
	if contains(s.Batch, name) {
		c.Errorf(param, "%q is a batch dim; it must be a dim of its own, not in batch %v", name, s.Batch)
		return false
	}
	pos := map[string]int{}
	for i, d := range s.Dims {
		pos[d.Name] = i
	}
	for _, bd := range s.Batch {
		if where == "before" && pos[name] > pos[bd] || where == "after" && pos[name] < pos[bd] {
			c.Errorf(param, "dims.%s must be declared %s every batch dim (tensors are laid out in the order of dims: %s)", name, where, layoutHint(where, name, s.Batch))
			return false
		}
	}
	return true
}

// defaultInnerDim gives an unwritten dim parameter laid out after the batch dims (an action
// or atom dim) the one declared dim that can be it: after every batch dim and named by no
// other dim parameter of the stage. With none or several it reports the parameter as
// required, naming the candidates, and returns "".
func defaultInnerDim(c *spec.Check, param string) string {
	s, st := c.Spec, c.Stage
	taken := map[string]bool{}
	for _, p := range st.Def.Params {
		if p.Type == spec.DimName && p.Name != param {
			taken[st.String(p.Name)] = true
		}
	}
	var cands []string
	for _, d := range s.Dims[lastBatchDim(s)+1:] {
		if !taken[d.Name] {
			cands = append(cands, d.Name)
		}
	}
	switch len(cands) {
	case 1:
		st.Set(param, cands[0])
		return cands[0]
	case 0:
		c.Errorf(param, "required: the name of a dim declared under dims, after the batch dims")
	default:
		c.Errorf(param, "required: one of %s (the dims declared after the batch dims)", strings.Join(cands, ", "))
	}
	return ""
}

func layoutHint(where, name string, batch []string) string {
	b := "*batch"
	if len(batch) == 1 {
		b = batch[0]
	}
	if where == "before" {
		return "[" + name + ", " + b + ", ...]"
	}
	return "[" + b + ", ..., " + name + "]"
}

// checkTDEstimator gives a loss that bootstraps its target with a TD estimator (IQL, DQN, the
// discrete CQL) its default, TD(0) with γ 0.99 when the spec has no estimator (the loss's
// default_value_estimator), and rejects any other (GAE and V-trace, which the loss's
// make_value_estimator refuses with NotImplementedError, and GRPO's MCAdvantage, which is
// no value estimator).
func checkTDEstimator(c *spec.Check) {
	if e := c.Spec.Estimator; e == nil {
		c.Spec.Estimator = c.NewStage(spec.Estimator, "td0", map[string]any{"gamma": lossDiscounts["gamma"]})
	} else if e.Type != "td0" && e.Type != "td1" && e.Type != "td_lambda" {
		c.ErrorAt("estimator.type", "estimator.type: "+e.Type+" is not supported by "+c.Stage.Type+" (TorchRL raises NotImplementedError) (allowed: td0, td1, td_lambda)")
	}
}

// dimAfterBatch reports whether s declares a dim after its last batch dim (an action or atom
// dim's place in the layout).
func dimAfterBatch(s *spec.Spec) bool { return lastBatchDim(s)+1 < len(s.Dims) }

// lastBatchDim is the position in dims of the last batch dim (-1 with none).
func lastBatchDim(s *spec.Spec) int {
	last := -1
	for i, d := range s.Dims {
		if contains(s.Batch, d.Name) {
			last = i
		}
	}
	return last
}

// inferAtomDim gives an unwritten atom_dim the one dim after the batch dims whose size is
// the support's length (C51's atoms), so that defaultInnerDim can tell the action dim from it.
func inferAtomDim(c *spec.Check) {
	s, st := c.Spec, c.Stage
	support, _ := st.Get("support").([]float64)
	if st.String("atom_dim") != "" || len(support) == 0 {
		return
	}
	var cands []string
	for _, d := range s.Dims {
		if d.Size == len(support) && !contains(s.Batch, d.Name) && d.Name != st.String("action_dim") {
			cands = append(cands, d.Name)
		}
	}
	if len(cands) == 1 {
		st.Set("atom_dim", cands[0])
	}
}
