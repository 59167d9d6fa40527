package lower

import (
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// DistillationLoss (torchrl/objectives/llm/distillation.py): on-policy distillation of a
// student towards a teacher's token log-probabilities (SEMANTICS.md §12.6).

var keyTeacherLogProb = spec.KeyDef{Name: "teacher_log_prob", Default: []string{"teacher_log_prob"},
	Doc:    "log-probability of the token under the teacher model (TorchRL key (next, teacher_log_probs, full))",
	Sample: spec.Sample{Dist: "normal", Std: 0.25, Offset: "log_prob", ExtremeLog: true}}

func init() {
	register(&Stage{
		StageDef: spec.StageDef{
			Kind: spec.Loss, Type: "distillation", Class: "DistillationLoss", Source: "torchrl/objectives/llm/distillation.py",
			Params: []spec.ParamDef{
				{Name: "kl_direction", Type: spec.Enum, Default: "reverse", Enum: []string{"reverse", "forward"},
					Doc: "reverse: KL(student ‖ teacher), d = teacher_log_prob − log_prob; forward: KL(teacher ‖ student), d = log_prob − teacher_log_prob; both the k3 estimate e^d − 1 − d per token"},
				{Name: "reduction", Type: spec.Enum, Default: "mean", Enum: reductions,
					Doc: "over the sequences' KL: mean, sum, or none (one per sequence, the batch without its token dim)"},
				{Name: "normalize_by_seq_length", Type: spec.Bool, Default: true,
					Doc: "divide each sequence's summed KL by its number of valid tokens (at least 1)"},
				{Name: "assistant_only", Type: spec.Bool, Default: true,
					Doc: "informational: TorchRL then selects the assistant tokens; here keys.mask is the selection"},
			},
			Keys: []spec.KeyDef{keyLogProb, keyTeacherLogProb, keyMask},
		},
		Lower: lowerDistillation,
	})
}

// lowerDistillation is DistillationLoss.forward (distillation.py:422-494), L the last batch
// dim (the dims before it index the sequences; with none the batch is one sequence), m the
// mask:
//
//	S_b = Σ_t m·k3(d),  d = teacher − log_prob (reverse) or log_prob − teacher (forward)
//	S_b /= max(Σ_t m, 1)                         (normalize_by_seq_length)
//	loss_distill = mean_b S | Σ_b S | S,  kl_to_teacher = mean_b S (detached)
//
// A sequence with no valid token has S_b = 0 and counts in the mean (TorchRL raises).
func lowerDistillation(l *Lowerer, st *spec.Stage) {
	b := l.B
	l.readMask()
	batch := l.Batch()
	tok := batch[len(batch)-1].Name
	lp, t := l.Read("log_prob"), b.Detach(l.Read("teacher_log_prob")) // 0 at padding
	d := b.Sub(t, lp)
	if st.String("kl_direction") == "forward" {
		d = b.Sub(lp, t)
	}
	s := b.Sum(l.maskOf(l.k3(d)), tok)
	norm := st.Bool("normalize_by_seq_length")
	if norm {
		s = b.Div(s, b.Max(b.Sum(b.Broadcast(l.maskOf(b.Const(1)), batch), tok), b.Const(1)))
	}
	s = b.Note(s, "sequence_kl")
	var loss *ir.Node
	switch st.String("reduction") {
	case "mean":
		loss = b.MeanAll(s)
	case "sum":
		loss = b.SumAll(s)
	default:
		loss = s
	}
	l.Output("loss_distill", loss, ir.LossTerm,
		"the k3 KL estimate summed over each sequence's valid tokens (divided by their number with normalize_by_seq_length), reduced over the sequences by reduction")
	l.Output("kl_to_teacher", b.Detach(b.MeanAll(s)), ir.Metric,
		"the mean over the sequences of their KL to the teacher, as loss_distill with reduction mean")
	scale := map[bool]string{true: "/max(n_b, 1)", false: ""}[norm]
	l.GradDoc("log_prob", "loss_distill: s·(1 − e^d)"+scale+" (reverse) or s·(e^d − 1)"+scale+" (forward) at valid tokens, s = 1/B (mean), 1 (sum, none); n_b the sequence's valid tokens")
}
