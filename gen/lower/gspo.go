package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// GSPO (Group Sequence Policy Optimization, arXiv 2507.18071) as Liger-Kernel computes it:
// LigerFusedLinearGRPOFunction.ppo_loss_fn with importance_sampling_level="sequence"
// (src/liger_kernel/chunked_loss/grpo_loss.py, SEMANTICS.md §12.4).

const gspoSource = "liger_kernel/chunked_loss/grpo_loss.py"

func init() {
	inf := math.Inf(1)
	register(&Stage{
		StageDef: spec.StageDef{
			Kind: spec.Loss, Type: "gspo", Class: "LigerFusedLinearGRPOLoss", Source: gspoSource,
			Params: []spec.ParamDef{
				{Name: "epsilon_low", Type: spec.Float, Default: 0.2, Min: 0, Max: 1, MaxOpen: true,
					Doc: "the sequence ratio's lower clip bound is 1 − epsilon_low (ratio space, as Liger)"},
				{Name: "epsilon_high", Type: spec.Float, Default: 0.2, Min: 0, Max: inf,
					Doc: "the sequence ratio's upper clip bound is 1 + epsilon_high"},
				{Name: "beta", Type: spec.Float, Default: 0.04, Min: 0, Max: inf,
					Doc: "adds loss_kl_to_ref = beta·AGG(k3 KL(π‖π_ref)) per token (keys.ref_log_prob); 0: none"},
				{Name: "loss_type", Type: spec.Enum, Default: "dapo", Enum: []string{"dapo", "grpo"},
					Doc: "AGG, how the per-token terms are reduced: dapo (Liger's default) sums over the batch's valid tokens and divides by their number; grpo takes each sequence's mean over its valid tokens, then the mean over the B sequences (a sequence with none counts as 0)"},
				{Name: "importance_sampling_level", Type: spec.Enum, Default: "sequence", Enum: []string{"sequence"},
					Doc: "sequence: GSPO's ratio s = exp(mean over the sequence's valid tokens of log π − log π_old); the token level is grpo and dapo"},
				{Name: "delta", Type: spec.Float, Min: 1, Max: inf, MinOpen: true,
					Doc: "INTELLECT-2's two-sided clipping: the unclipped term uses min(s, delta), > 1 + epsilon_high; absent or null: none"},
				{Name: "temperature", Type: spec.Float, Default: 1.0, Min: 0, Max: inf, MinOpen: true,
					Doc: "informational: Liger divides the logits by it; here the log-probs are inputs, computed at your temperature"},
				{Name: "variant", Type: spec.Enum, Default: "sequence", Enum: []string{"sequence", "token"},
					Doc: "sequence: one advantage per sequence, keys.advantage [*batch without the token dim] (Liger's layout); token: GSPO-token (the paper's eq. 13), s_t = sg(s)·π(y_t)/sg(π(y_t)) with a per-token advantage [*batch]; with an advantage constant over a sequence both give the same values and gradients"},
			},
			Keys: []spec.KeyDef{keyLogProb, keySampleLogProb, keyAdvantage, keyMask, keyRefLogProb},
			Check: func(c *spec.Check) {
				if d, ok := c.Stage.Get("delta").(float64); ok && d < 1+c.Stage.Float("epsilon_high") {
					c.Errorf("delta", "must be at least 1 + epsilon_high = %v (it caps the unclipped ratio above the clip range), got %v", 1+c.Stage.Float("epsilon_high"), d)
				}
				if e := c.Spec.Estimator; e != nil && e.Type != "mc_advantage" && c.Stage.String("variant") == "sequence" {
					c.ErrorAt("estimator.type", "estimator.type: "+e.Type+" is not supported by gspo with variant sequence, which takes one advantage per sequence and "+e.Type+" writes one per token (allowed: mc_advantage; or variant: token)")
				}
			},
		},
		Lower: lowerGSPO,
	})
}

// lowerGSPO is ppo_loss_fn (grpo_loss.py:138-266) at the sequence level, with masks that
// select (SEMANTICS.md §11.16): L the last batch dim (the batch dims before it index the
// sequences; with none the batch is one sequence), m the mask, n_b = Σ_t m, N = Σ m,
//
//	log s_b = Σ_t m·(log_prob − sample_log_prob) / max(n_b, 1)
//	loss_objective = AGG(−min(s·A, clamp(s, 1−ε_low, 1+ε_high)·A))   (s capped at delta in the first)
//	loss_kl_to_ref = β·AGG(k3(ref_log_prob − log_prob)),  kl_to_ref = Σ m·k3 / max(N, 1)
//	clip_fraction  = Σ m·((s < 1−ε_low ∧ A < 0) ∨ (s > 1+ε_high ∧ A > 0)) / max(N, 1)
//
// The sequence variant's s_b reaches log_prob through the mean; GSPO-token's s_bt =
// sg(s_b)·exp(lp − sg(lp)) reaches it per token.
func lowerGSPO(l *Lowerer, st *spec.Stage) {
	b := l.B
	l.readMask()
	batch := l.Batch()
	tok := batch[len(batch)-1].Name
	seqShape := batch[:len(batch)-1]
	cur, old := l.Read("log_prob"), l.Read("sample_log_prob") // 0 at padding
	count := b.Note(b.Sum(b.Broadcast(l.maskOf(b.Const(1)), batch), tok), "sequence_length")
	den := b.Max(count, b.Const(1))
	logS := b.Note(b.Div(b.Sum(l.maskOf(b.Sub(cur, old)), tok), den), "log_sequence_ratio")

	var s, adv *ir.Node
	if st.String("variant") == "token" {
		adv = l.Read("advantage")
		s = b.Exp(b.Add(b.Detach(logS), b.Sub(cur, b.Detach(cur))))
	} else {
		adv = l.ReadShaped("advantage", seqShape)
		if l.mask != nil {
			adv = b.Where(b.Gt(count, b.Const(0)), adv, b.Const(0)) // a sequence of padding only
		}
		s = b.Exp(logS)
	}
	s = b.Note(s, "sequence_ratio")
	lo := l.Hyper("1-epsilon_low", 1-st.Float("epsilon_low"), false, "the lower clip bound of the sequence ratio")
	hi := l.Hyper("1+epsilon_high", 1+st.Float("epsilon_high"), false, "the upper clip bound of the sequence ratio")
	s1 := s
	if d, ok := st.Get("delta").(float64); ok {
		s1 = b.MinFirst(s, b.Const(l.Hyper("delta", d, false, "caps the unclipped ratio")))
	}
	// delta ≥ hi, so min(min(s, δ)·A, clamp(s)·A) is ratioClipGain's of min(s, δ).
	gain := l.ratioClipGain(s1, adv, lo, hi)

	perRow := st.String("loss_type") == "grpo"
	agg := func(x *ir.Node) *ir.Node {
		x = b.Broadcast(x, batch)
		if !perRow {
			return l.mean(x)
		}
		return b.MeanAll(b.Note(b.Div(b.Sum(l.maskOf(x), tok), den), "sequence_mean"))
	}
	l.Output("loss_objective", agg(b.Neg(gain)), ir.LossTerm,
		"−min(s·A, clip(s, 1−ε_low, 1+ε_high)·A) per token, s the sequence's importance ratio, reduced by loss_type")
	scale := map[bool]string{false: "1/N", true: "1/(B·n_b)"}[perRow]
	l.GradDoc("log_prob", "loss_objective: −A·s·"+scale+" at the valid tokens of a sequence whose unclipped term is the min (A ≥ 0 and s ≤ 1+ε_high, or A < 0 and s ≥ 1−ε_low), else 0; N the valid tokens, n_b the sequence's ("+gspoSource+")")
	clipped := b.Where(b.Lt(adv, b.Const(0)), b.Lt(s, b.Const(lo)), b.Where(b.Gt(adv, b.Const(0)), b.Gt(s, b.Const(hi)), b.Const(0)))
	l.Output("clip_fraction", l.mean(b.Broadcast(clipped, batch)), ir.Metric,
		"fraction of valid tokens whose sequence ratio is clipped on the side that binds: s < 1−ε_low with A < 0, or s > 1+ε_high with A > 0 (Liger's is_clipped)")
	if beta := st.Float("beta"); beta != 0 {
		beta = l.Hyper("beta", beta, false, "weighs loss_kl_to_ref")
		k := l.k3(b.Sub(l.Read("ref_log_prob"), cur)) // 0 at padding, where both read 0
		l.Output("loss_kl_to_ref", b.Mul(b.Const(beta), agg(k)), ir.LossTerm,
			"beta · the k3 estimate e^d − 1 − d of KL(π ‖ π_ref) per token, d = ref_log_prob − log_prob, reduced by loss_type")
		l.Output("kl_to_ref", b.Detach(l.mean(k)), ir.Metric,
			"mean over the valid tokens of the k3 estimate of KL(π ‖ π_ref), whatever loss_type")
		l.GradDoc("log_prob", "loss_kl_to_ref: beta·(1 − e^d)·"+scale+" at valid tokens")
	}
}
