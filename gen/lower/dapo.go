package lower

func init() {
	// TorchRL's DAPO class cannot be constructed (its __init__ is a pasted copy of
	// _kl_to_ref that never calls GRPOLoss.__init__, grpo.py:953-1001): dapo is GRPOLoss with
	// the defaults DAPO documents, clip-higher [0.2, 0.28] and the token-level mean (GRPOLoss's
	// default aggregation) (SEMANTICS.md §12.2).
	register(&Stage{StageDef: grpoDef("dapo", "DAPO", []float64{0.2, 0.28}, nil), Lower: lowerGRPO})
}
