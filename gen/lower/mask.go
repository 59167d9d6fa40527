package lower

import (
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// Token masks (SEMANTICS.md §11.16): a loss given keys.mask reduces every loss term and
// metric over the valid elements only — mean = Σ_valid x / n_valid, sum = Σ_valid x, none
// keeps the shape with 0 where the mask is false — and reports n_valid (num_valid), so that
// means merge exactly across micro-batches and ranks. Masked-out elements are never read
// into a result: a NaN in padding stays out of every output and gradient (TorchRL's _reduce
// selects the valid entries, tensor[mask]). A mean over no valid element is 0.

var keyMask = spec.KeyDef{Name: "mask", Kind: spec.BoolKey,
	Doc:    "true where a batch element is valid (token-level RL: false at padding); every reduction of the loss runs over the valid elements only. Mapped in a spec with an estimator (gae, td1, td_lambda, vtrace, standalone too), it also cuts the estimator's recursion at done steps, so that padding after a done step reaches no valid step, and its standardisations (average_gae, average_rewards, average_adv) run over the valid elements",
	Sample: spec.Sample{Dist: "flag", P: 0.85, ExtremeRows: true}}

// readMask reads keys.mask when the spec maps it, for the loss being lowered, and reports
// the valid count.
func (l *Lowerer) readMask() {
	if !l.Mapped("mask") {
		return
	}
	b := l.B
	l.mask = l.Read("mask")
	l.valid = b.Note(b.SumAll(l.maskOf(b.Const(1))), "num_valid")
	l.Output("num_valid", l.valid, ir.Metric,
		"the number of valid (mask true) elements: merge a mean over the valid elements across micro-batches as Σ(mean·num_valid)/Σ num_valid (a mean over other elements by its own count: docs/SEMANTICS.md §12.7)")
}

// cutAtDone reports whether an estimator's recursion cuts at a done step (ir.Node.Cut): in a
// spec with a mask, where padding after a sequence's done step may hold anything (NaN, ±inf),
// and 0·NaN would carry it into the valid steps before it.
func (l *Lowerer) cutAtDone() bool { return l.Mapped("mask") }

// selectValid is what a loss with a mask reads for a float or index key: the value where the
// mask is true and the key's Pad where it is false, selected before any arithmetic. Multiplying by 0
// after the fact is not enough: 0·f'(garbage) is NaN when padding holds NaN, ±inf or a value
// whose derivative overflows, and the autodiff pass would carry it into the gradient. With
// the select, masked elements compute the loss at Pad (finite, with finite derivatives), the
// reductions drop them, and the select's own rule sends them an exact 0 gradient. A flag is
// selected only where its Pad says so: done is true at padding, so a recursion restarts
// there and padding enters it as 0 whatever its flags hold. An index key (a categorical
// action) reads 0 at masked elements, and its range check covers the valid elements only
// (ir.IndexChecks): padding may hold any index, as -100 in LLM labels.
func (l *Lowerer) selectValid(x *ir.Node, def spec.KeyDef, kind spec.KeyKind) *ir.Node {
	if l.mask == nil && l.indexMask != nil && kind == spec.IndexKey {
		return l.B.Where(l.indexMask, x, l.B.Const(def.Pad))
	}
	if l.mask == nil || (kind == spec.BoolKey && def.Pad == 0) || x == l.mask {
		return x
	}
	for _, d := range l.mask.Shape {
		if !x.Shape.Has(d.Name) {
			return x // a value shared by every element (none today) has no padding
		}
	}
	return l.B.Where(l.mask, x, l.B.Const(def.Pad))
}

// maskOf is x where the mask is true and 0 elsewhere (x itself without a mask).
func (l *Lowerer) maskOf(x *ir.Node) *ir.Node {
	if l.mask == nil {
		return x
	}
	return l.B.Where(l.mask, x, l.B.Const(0))
}

// reduce is TorchRL's _reduce (torchrl/objectives/utils.py): none keeps x, mean and sum run
// over every element; with a mask, over the valid ones.
func (l *Lowerer) reduce(x *ir.Node, reduction string) *ir.Node {
	switch reduction {
	case "mean":
		return l.mean(x)
	case "sum":
		return l.B.SumAll(l.maskOf(x))
	}
	return l.maskOf(x)
}

// mean is the mean over every (valid) element: a metric's or a loss term's.
func (l *Lowerer) mean(x *ir.Node) *ir.Node {
	b := l.B
	if l.mask == nil {
		return b.MeanAll(x)
	}
	// n_valid ≥ 1 in the divisor: 0/1 = 0 for no valid element, with a finite gradient.
	return b.Div(b.SumAll(l.maskOf(x)), b.Max(l.valid, b.Const(1)))
}

// standardize is torchrl/_utils.py _standardize: (x − mean)/clamp_min(std, eps) with the
// unbiased std, statistics over the named dims (all of x's dims when empty). With a mask the
// statistics run over the valid elements (a single valid element standardises to 0), also in
// an estimator before the loss, whose inputs are not masked (average_gae, average_rewards,
// average_adv): padding, whatever it holds, reaches no statistic.
func (l *Lowerer) standardize(x *ir.Node, over []string, eps float64) *ir.Node {
	b := l.B
	if len(over) == 0 {
		over = x.Shape.Names()
	}
	m := l.mask
	if m == nil && l.Mapped("mask") && x.Shape.Equal(l.Batch()) {
		m = l.Read("mask") // the loss reads it later (readMask); a per-sequence x has no padding
	}
	if m == nil {
		mean := b.Note(b.Mean(x, over...), "mean")
		// torch.std: the root taken on the float64 variance before rounding, so a float32
		// spread beyond 1.8e19 (whose variance overflows float32) still standardises.
		std := b.Note(b.Std(x, 1, over...), "std")
		return b.Div(b.Sub(x, mean), b.Max(std, b.Const(eps)))
	}
	valid := func(x *ir.Node) *ir.Node { return b.Where(m, x, b.Const(0)) }
	n := b.Sum(valid(b.Const(1)), over...)
	mean := b.Note(b.Div(b.Sum(valid(x), over...), b.Max(n, b.Const(1))), "mean")
	d := b.Sub(x, mean)
	// Σ over the valid elements of d² / max(n − 1, 1), as torch.std's float64 Welford: the
	// unbiased std over all N elements with the padding set to the mean (where it deviates
	// by nothing) is √(Σ_valid d² / (N − 1)); rescaled to n − 1. Squares formed in float32
	// would overflow beyond a spread of 1.8e19 and standardise everything to 0.
	total := x.Shape.Numel() / x.Shape.Without(over...).Numel()
	if total == 1 {
		return b.Mul(d, b.Const(0)) // one element: 0 where valid, as (x − x)/eps
	}
	sd := b.Std(b.Where(m, x, mean), 1, over...)
	std := b.Note(b.Mul(sd, b.Sqrt(b.Div(b.Const(float64(total-1)), b.Max(b.Sub(n, b.Const(1)), b.Const(1))))), "std")
	return b.Div(d, b.Max(std, b.Const(eps)))
}

// var0 is the biased variance along the first batch dim (explained_variance's Var₀), over
// the valid elements with a mask (0 for a column with none).
func (l *Lowerer) var0(x *ir.Node) *ir.Node {
	b := l.B
	first := l.Batch()[0].Name
	if l.mask == nil {
		return b.Var(x, 0, first)
	}
	n := b.Max(b.Sum(l.maskOf(b.Const(1)), first), b.Const(1))
	mean := b.Div(b.Sum(l.maskOf(x), first), n)
	return b.Div(b.Sum(l.maskOf(b.Square(b.Sub(x, mean))), first), n)
}
