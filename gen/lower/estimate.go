package lower

import (
	"github.com/lossgen/lossgen/gen/ir"
)

// The TD estimators' two modes: an advantage estimator (PPO, IQL: TorchRL's forward, which
// reads V(s) and writes advantage and value_target) and a target estimator (SAC, TD3, DDPG:
// TorchRL's value_estimate, which writes value_target alone from the next value the loss set
// in its Bootstrap).

// TargetOnly makes the estimator that runs next compute the value target alone, bootstrapping
// from next (detached: TorchRL computes it under no_grad): it reads no V(s) and writes no
// advantage (TorchRL's ValueEstimatorBase.value_estimate after the loss set ("next",
// value_key)).
func (l *Lowerer) TargetOnly(next *ir.Node) {
	l.Set("next_value", l.B.Note(l.B.Detach(next), "next_state_value"))
	l.targetOnly = true
}

// estimatorValue is the critic's V(s) an estimator subtracts for the advantage, or nil for a
// target estimator.
func (l *Lowerer) estimatorValue() *ir.Node {
	if l.targetOnly {
		return nil
	}
	return l.Read("value")
}

// writeEstimate writes an estimator's return ret as value_target, and for an advantage
// estimator (v not nil) the advantage ret − v, keeping V(s) as old_value for the loss.
func (l *Lowerer) writeEstimate(ret, v *ir.Node, targetDoc string) {
	if v != nil {
		l.Set("old_value", l.B.Detach(v))
		l.Write("advantage", l.B.Sub(ret, v), ir.Estimate, "advantage G − V (TorchRL key advantage)")
	}
	l.Write("value_target", ret, ir.Estimate, targetDoc)
}
