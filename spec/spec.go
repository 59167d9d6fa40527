// Package spec reads a lossgen spec file: one YAML document that describes one generated
// package (a loss, the advantage estimator that feeds it, transforms, keys and fixed shapes).
//
// Key names follow TorchRL's constructor arguments and set_keys names (clip_epsilon, lmbda,
// sample_log_prob, value_target, reduction ...), so a TorchRL user can write a spec from memory.
// Parsing is strict: unknown keys, wrong types and impossible values are errors, and every
// error reads "FILE:LINE:COL: message" naming the key and the allowed values. Defaults are
// TorchRL v0.11.0's (docs/SEMANTICS.md §7), applied by Parse.
package spec

// DType is the element type of a generated kernel's floating-point tensors.
type DType string

// The supported kernel element types.
const (
	Float32 DType = "float32"
	Float64 DType = "float64"
)

// Dim is one named, fixed extent (N trajectories, T time steps, B minibatch, ...).
type Dim struct {
	Name string
	Size int
	Pos  Pos
}

// Spec is a parsed, defaulted and validated spec file.
type Spec struct {
	File    string // path as given to Parse; used in every diagnostic
	Package string // Go package name of the generated code
	DType   DType
	Dims    []Dim    // in file order
	Batch   []string // batch dims, outermost first; with an estimator the last is time

	Estimator  *Estimator  // nil: advantage and value_target are kernel inputs
	Loss       *Loss       // nil: a standalone estimator kernel
	Transforms []Transform // applied before the estimator and loss, in order

	// Keys maps each logical key (TorchRL's tensor_keys names plus lossgen's network-output
	// names) to the nested data key; nil means "absent from the data". See DefaultKeys.
	Keys map[string][]string

	// Warnings are non-fatal diagnostics (TorchRL behaviours a user may not expect).
	Warnings []*Error

	pos map[string]Pos // "loss.clip_epsilon" -> position of its value, for later diagnostics
}

// DimSize returns the extent of the named dim, or 0 when there is none.
func (s *Spec) DimSize(name string) int {
	for _, d := range s.Dims {
		if d.Name == name {
			return d.Size
		}
	}
	return 0
}

// BatchShape returns the extents of the batch dims, outermost first.
func (s *Spec) BatchShape() []int {
	out := make([]int, len(s.Batch))
	for i, n := range s.Batch {
		out[i] = s.DimSize(n)
	}
	return out
}

// PosOf returns the position of the value at a dotted key path ("loss.reduction"), or the
// position of the file's first line when the key was not written (a default applies).
func (s *Spec) PosOf(path string) Pos {
	if p, ok := s.pos[path]; ok {
		return p
	}
	return Pos{File: s.File, Line: 1, Col: 1}
}

// DataName joins a nested key with '.', the name of its array in .npz files.
func DataName(key []string) string {
	n := ""
	for i, k := range key {
		if i > 0 {
			n += "."
		}
		n += k
	}
	return n
}

// Estimator configures a value estimator (torchrl/objectives/value/advantages.py).
type Estimator struct {
	Type  string  // gae | td0 | td1 | td_lambda | vtrace
	Gamma float64 // discount γ ∈ [0, 1]
	Lmbda float64 // λ ∈ [0, 1] (gae, td_lambda)

	AverageGAE     bool    // gae: standardise the advantage (unbiased std floored at 1e-4)
	AverageRewards bool    // td0, td1, td_lambda: standardise the reward first
	RhoThresh      float64 // vtrace: ρ̄ (default 1.0)
	CThresh        float64 // vtrace: c̄ (default 1.0)
	AverageAdv     bool    // vtrace: standardise the advantage (floor 1e-5)

	Pos Pos
}

// Loss configures a loss module (torchrl/objectives/ppo.py, iql.py).
type Loss struct {
	Type string // ppo | clip_ppo | klpen_ppo | iql | discrete_iql

	// PPO family (PPOLoss, ClipPPOLoss, KLPENPPOLoss).
	ClipEpsilon          float64            // clip_ppo: ε ∈ (0, 1), default 0.2
	EntropyBonus         bool               // default true
	EntropyCoeff         float64            // scalar coefficient, default 0.01
	EntropyCoeffMap      map[string]float64 // per-head coefficients (composite actions); keys = Heads
	Heads                []string           // composite action heads, when entropy_coeff is a map
	CriticCoeff          float64            // 0: no critic term (TorchRL: 0 or None drops it)
	LossCriticType       string             // l1 | l2 | smooth_l1 (default)
	NormalizeAdvantage   bool               // standardise the advantage per call
	NormalizeExcludeDims []int              // normalize_advantage_exclude_dims, as written (TorchRL dim indices)
	ClipValue            float64            // value-clip δ; 0: no value clipping
	LogExplainedVariance bool               // default true
	Reduction            string             // none | mean (default) | sum

	// KLPENPPOLoss.
	Dtarg, Beta, Increment, Decrement float64
	Distribution                      string // normal | tanh_normal | categorical: closed-form KL from stored parameters

	// IQLLoss, DiscreteIQLLoss.
	NumQValueNets int     // default 2
	LossFunction  string  // l1 | l2 | smooth_l1 (default)
	Temperature   float64 // β, an inverse temperature, default 1.0
	Expectile     float64 // τ_e ∈ (0, 1), default 0.5
	ActionSpace   string  // discrete_iql: one_hot | categorical

	Pos Pos
}

// HasCritic reports whether the loss has an active critic term (TorchRL: critic_coeff > 0).
func (l *Loss) HasCritic() bool { return l.CriticCoeff > 0 }

// Transform configures one transform applied before the estimator and loss.
type Transform struct {
	Type        string    // kl_reward | qvalue | distributional_qvalue
	Coef        float64   // kl_reward: reward − coef·(log_prob − ref_log_prob), default 1.0
	ActionSpace string    // qvalue, distributional_qvalue: one_hot | categorical | mult_one_hot
	VarNums     []int     // mult_one_hot: chunk sizes
	Support     []float64 // distributional_qvalue: atom values, length = dim K
	Pos         Pos
}
