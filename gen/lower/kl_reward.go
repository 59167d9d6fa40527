package lower

import (
	"math"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/spec"
)

// The keys of the KL reward transform.
var (
	keyRefLogProb = spec.KeyDef{Name: "ref_log_prob", Default: []string{"ref_log_prob"},
		Doc:    "log-probability of the token under the reference (frozen) model (what TorchRL's ref_model computes under log_probs.full)",
		Sample: spec.Sample{Dist: "normal", Std: 0.25, Offset: "log_prob", ExtremeLog: true}}
	keyKLPenalty = spec.KeyDef{Name: "kl_penalty", Default: []string{"next", "kl_penalty"},
		Doc: "the per-token KL estimate log_prob − ref_log_prob, 0 at masked tokens (TorchRL out key kl_penalty, under next)"}
	keyRefLogProbs = spec.KeyDef{Name: "ref_log_probs", Default: []string{"next", "ref_log_probs"},
		Doc: "the reference log-probabilities, 0 at masked tokens (TorchRL out key ref_log_probs, under next)"}
)

func init() {
	register(&Stage{
		StageDef: spec.StageDef{
			Kind: spec.Transform, Type: "kl_reward", Class: "KLRewardTransform", Source: "torchrl/envs/llm/transforms/kl.py",
			Params: []spec.ParamDef{
				{Name: "coef", Type: spec.Float, Default: 1.0, Min: math.Inf(-1), Max: math.Inf(1), Applies: addsToReward,
					Doc: "the KL coefficient: reward − coef·(log_prob − ref_log_prob); a negative coef gives the March 2025 reward + |coef|·kl"},
				{Name: "log_prob_key", Type: spec.Enum, Default: "log_prob", Enum: []string{"log_prob", "sample_log_prob"},
					Doc: "which key holds the policy's token log-probs: log_prob, or sample_log_prob (those recorded at generation, PPO's behaviour log-probs: use it when the transform feeds a PPO loss in the same kernel)"},
				{Name: "add_to_reward", Type: spec.Bool, Default: true,
					Doc: "subtract coef·kl from the reward; false: the reward is neither read nor written, and the transform writes kl_penalty and ref_log_probs only (TorchRL's _step)"},
			},
			Ignored: []spec.ParamDef{ignoredDevice,
				{Name: "padding_side", Type: spec.Enum, Enum: []string{"left", "right"},
					Doc: "where TorchRL pads its per-sample lists when it stacks them; the kernel takes the tokens already laid out (padded either side, with keys.mask) and writes each result where its token is"},
				{Name: "use_ray_service", Type: spec.Bool, Doc: "whether TorchRL runs the reference model as a Ray service; the reference model runs outside the kernel, which takes its log-probs as inputs (keys.ref_log_prob)"},
			},
			Rejected: []spec.Rejected{
				{Name: "ref_model", Why: "not taken: the kernel takes the reference model's outputs as inputs, not the model: keys ref_log_prob, the reference log-probs of the tokens; remove ref_model"},
				{Name: "ref_model_factory", Why: "not taken: the kernel takes the reference model's outputs as inputs, not the model: keys ref_log_prob, the reference log-probs of the tokens; remove ref_model_factory"},
				{Name: "tokenizer", Why: "not taken: the kernel takes tokens' log-probs, not text; the tokenizer belongs to the model that computes keys.ref_log_prob; remove tokenizer"},
				{Name: "assistant_only", Why: "not taken: which tokens count is keys.mask here: for TorchRL's assistant_only: true (its default), map keys.mask to the assistant-token mask (TorchRL's masks.all_assistant_mask); for false, leave keys.mask unmapped; remove assistant_only"},
			},
			Keys: []spec.KeyDef{keyReward, keyLogProb, keySampleLogProb, keyRefLogProb, keyMask, keyKLPenalty, keyRefLogProbs},
			Check: func(c *spec.Check) {
				if c.Stage.Written("coef") && !addsToReward(c.Stage) {
					c.Warnf("coef", "has no effect with add_to_reward: false (the reward is left alone)")
				}
			},
		},
		Lower: lowerKLReward,
	})
}

// addsToReward reports whether the transform subtracts the KL penalty from the reward.
func addsToReward(st *spec.Stage) bool { return st.Bool("add_to_reward") }

// lowerKLReward is TorchRL v0.11's KLRewardTransform._step (torchrl/envs/llm/transforms/kl.py,
// SEMANTICS.md §6.1, §11.2), per token:
//
//	lp, ref = where(mask, lp, 0), where(mask, ref, 0)   (masked_fill(~mask, 0), with keys.mask)
//	kl      = lp − ref
//	reward  ← reward − coef·kl                          (coef a float32 tensor, §11.14; add_to_reward)
//
// It writes the new reward (for the estimator after it; with add_to_reward false the reward
// is left alone, as TorchRL's _step does), kl_penalty = kl and ref_log_probs = the masked
// reference log-probs, as TorchRL writes them under next. Nothing is differentiated
// (TorchRL runs it in the environment step, on collected data).
func lowerKLReward(l *Lowerer, st *spec.Stage) {
	b := l.B
	lp := b.Detach(l.Read(st.String("log_prob_key")))
	ref := l.Read("ref_log_prob")
	if l.Mapped("mask") {
		m := l.Read("mask")
		zero := b.Const(0)
		lp, ref = b.Where(m, lp, zero), b.Where(m, ref, zero)
	}
	kl := b.Note(b.Sub(lp, ref), "kl")
	if st.Bool("add_to_reward") {
		coef := l.Hyper("coef", st.Float("coef"), true, "the KL coefficient (a float32 tensor in TorchRL)")
		r := b.Sub(l.Read("reward"), b.Mul(b.Const(coef), kl))
		l.Write("reward", r, ir.Transformed, "the reward minus coef·(log_prob − ref_log_prob) (TorchRL v0.11 KLRewardTransform, §11.2)")
	}
	l.Write("kl_penalty", kl, ir.Transformed, "the per-token KL estimate log_prob − ref_log_prob, 0 at masked tokens (TorchRL key (next, kl_penalty))")
	l.Write("ref_log_probs", ref, ir.Transformed, "the reference log-probabilities, 0 at masked tokens (TorchRL key (next, ref_log_probs))")
}
