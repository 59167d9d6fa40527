package gen

import (
	"fmt"
	"strconv"

	"github.com/lossgen/lossgen/gen/gogen"
	"github.com/lossgen/lossgen/spec"
)

var estimatorClass = map[string]string{
	"gae": "GAE", "td0": "TD0Estimator", "td1": "TD1Estimator", "td_lambda": "TDLambdaEstimator", "vtrace": "VTrace",
}

var lossClass = map[string]string{
	"ppo": "PPOLoss", "clip_ppo": "ClipPPOLoss", "klpen_ppo": "KLPENPPOLoss", "iql": "IQLLoss", "discrete_iql": "DiscreteIQLLoss",
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// summary describes the configuration in TorchRL's words, for the package doc.
func summary(s *spec.Spec) []string {
	var out []string
	if e := s.Estimator; e != nil {
		line := fmt.Sprintf("Estimator: TorchRL %s (torchrl/objectives/value/advantages.py) with gamma=%s", estimatorClass[e.Type], num(e.Gamma))
		if e.Type == "gae" || e.Type == "td_lambda" {
			line += ", lmbda=" + num(e.Lmbda)
		}
		if e.Type == "gae" {
			line += fmt.Sprintf(", average_gae=%v", e.AverageGAE)
		}
		out = append(out, line+"; the exact reverse recursion (TorchRL's loop version), time along the last batch dim.")
	}
	if l := s.Loss; l != nil {
		line := fmt.Sprintf("Loss: TorchRL v0.11.0 %s (torchrl/objectives/ppo.py)", lossClass[l.Type])
		if l.Type == "clip_ppo" {
			line += " with clip_epsilon=" + num(l.ClipEpsilon)
		}
		line += fmt.Sprintf(", entropy_bonus=%v", l.EntropyBonus)
		if l.EntropyBonus {
			line += ", entropy_coeff=" + num(l.EntropyCoeff)
		}
		if l.HasCritic() {
			line += fmt.Sprintf(", critic_coeff=%s, loss_critic_type=%s, log_explained_variance=%v", num(l.CriticCoeff), l.LossCriticType, l.LogExplainedVariance)
			if l.ClipValue > 0 {
				line += ", clip_value=" + num(l.ClipValue)
			}
		} else {
			line += ", no critic term"
		}
		line += fmt.Sprintf(", normalize_advantage=%v", l.NormalizeAdvantage)
		if l.NormalizeAdvantage && len(l.NormalizeExcludeDims) > 0 {
			line += fmt.Sprintf(", normalize_advantage_exclude_dims=%v", l.NormalizeExcludeDims)
		}
		out = append(out, line+", reduction="+l.Reduction+".")
		if s.Estimator == nil {
			out = append(out, "The advantage and value_target are inputs (computed beforehand, e.g. over the whole rollout).")
		}
	}
	for _, w := range s.Warnings {
		out = append(out, "Note: "+w.Msg+".")
	}
	return out
}

// params lists the hyperparameters as documented Go constants.
func params(s *spec.Spec) []gogen.Param {
	var ps []gogen.Param
	f := func(name string, v float64, doc string) {
		ps = append(ps, gogen.Param{Name: name, Value: num(v), Doc: doc})
	}
	str := func(name, v, doc string) {
		ps = append(ps, gogen.Param{Name: name, Value: strconv.Quote(v), Doc: doc})
	}
	if e := s.Estimator; e != nil {
		f("Gamma", e.Gamma, "Gamma is the discount γ.")
		if e.Type == "gae" || e.Type == "td_lambda" {
			f("Lmbda", e.Lmbda, "Lmbda is the GAE/TD(λ) λ (TorchRL's spelling).")
		}
	}
	if l := s.Loss; l != nil {
		if l.Type == "clip_ppo" {
			f("ClipEpsilon", l.ClipEpsilon, "ClipEpsilon is ε: log-weights are clamped to [log1p(−ε), log1p(ε)].")
		}
		if l.EntropyBonus {
			f("EntropyCoeff", l.EntropyCoeff, "EntropyCoeff weighs the entropy bonus: loss_entropy = −EntropyCoeff·H.")
		}
		if l.HasCritic() {
			f("CriticCoeff", l.CriticCoeff, "CriticCoeff scales the critic loss.")
			str("LossCriticType", l.LossCriticType, "LossCriticType is the critic's distance (l1, l2 or smooth_l1).")
			if l.ClipValue > 0 {
				f("ClipValue", l.ClipValue, "ClipValue is the value-clipping δ.")
			}
		}
		str("Reduction", l.Reduction, "Reduction applies to the loss_* outputs (none, mean or sum).")
	}
	return ps
}
