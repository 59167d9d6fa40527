package spec

import (
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// validate applies the defaults that depend on more than one key and checks the spec as a
// whole. Errors are positioned at the value at fault, or at the mapping that lacks a key.
func (d *decoder) validate(s *Spec, root *yaml.Node) {
	rootPos := Pos{File: d.file, Line: root.Line, Col: root.Column}
	at := func(path string) Pos {
		if p, ok := d.pos[path]; ok {
			return p
		}
		return rootPos
	}
	errAt := func(path string, msg string) { d.errs = append(d.errs, &Error{Pos: at(path), Msg: msg}) }
	warnAt := func(path string, msg string) {
		d.warns = append(d.warns, &Error{Pos: at(path), Msg: "warning: " + msg})
	}

	// batch: declared, distinct dims.
	if len(s.Batch) == 0 {
		errAt("batch", "batch: at least one batch dim is needed, e.g. [N, T] or [B]")
	}
	seen := map[string]bool{}
	for i, b := range s.Batch {
		p := "batch[" + itoa(i) + "]"
		if s.DimSize(b) == 0 {
			errAt(p, p+": "+quote(b)+" is not a dim declared under dims "+allowed(dimNames(s)))
		}
		if seen[b] {
			errAt(p, p+": "+quote(b)+" appears twice")
		}
		seen[b] = true
	}

	for _, dm := range s.Dims {
		if !seen[dm.Name] { // every lowering today shapes its tensors from batch alone
			d.warns = append(d.warns, &Error{Pos: dm.Pos, Msg: "warning: dims." + dm.Name + " is not in batch; nothing uses it"})
		}
	}

	if s.Estimator == nil && s.Loss == nil {
		errAt("", "the spec needs a loss, an estimator, or both")
	}
	numel := 1
	for _, n := range s.BatchShape() {
		if n > 0 && numel > MaxElements/n {
			errAt("batch", "batch: "+strings.Join(s.Batch, "×")+" holds more than "+itoa(MaxElements)+" elements, the most a kernel indexes (32-bit GPU thread indices); split the batch")
			numel = 0
			break
		}
		numel *= max(n, 1)
	}

	if e := s.Estimator; e != nil {
		d.estimatorDefaults(s, e, errAt)
		if numel == 1 && (e.AverageGAE || e.AverageRewards || e.AverageAdv) {
			errAt("estimator", "estimator: standardisation over a batch of one element divides by an unbiased std of NaN; drop average_* or enlarge the batch")
		}
	}
	if l := s.Loss; l != nil {
		d.lossChecks(s, l, numel, errAt, warnAt)
	}
	if s.Keys == nil {
		s.Keys = resolveKeys(nil, nil)
	}
	d.keyChecks(s, errAt)
}

func (d *decoder) estimatorDefaults(s *Spec, e *Estimator, errAt func(string, string)) {
	// Losses build their estimator with default_value_kwargs (γ 0.99, λ 0.95); the estimator
	// classes alone have no defaults (torchrl/objectives/utils.py, SEMANTICS.md §1.7).
	needsLmbda := e.Type == "gae" || e.Type == "td_lambda"
	if s.Loss != nil {
		if e.Gamma < 0 {
			e.Gamma = 0.99
		}
		if needsLmbda && e.Lmbda < 0 {
			e.Lmbda = 0.95
		}
	} else {
		if e.Gamma < 0 {
			errAt("estimator", "estimator.gamma: required for a standalone "+e.Type+" estimator (TorchRL's estimator classes have no default)")
		}
		if needsLmbda && e.Lmbda < 0 {
			errAt("estimator", "estimator.lmbda: required for a standalone "+e.Type+" estimator (TorchRL's estimator classes have no default)")
		}
	}
	if s.Loss != nil && (s.Loss.Type == "iql" || s.Loss.Type == "discrete_iql") && (e.Type == "gae" || e.Type == "vtrace") {
		errAt("estimator.type", "estimator.type: "+e.Type+" is not supported by "+s.Loss.Type+" (TorchRL raises NotImplementedError) (allowed: td0, td1, td_lambda)")
	}
}

func (d *decoder) lossChecks(s *Spec, l *Loss, numel int, errAt, warnAt func(string, string)) {
	if l.Type == "iql" || l.Type == "discrete_iql" {
		if s.Estimator == nil {
			// IQL builds its own TD(0) target (torchrl/objectives/iql.py, default estimator TD0, γ 0.99).
			s.Estimator = &Estimator{Type: "td0", Gamma: 0.99, RhoThresh: 1, CThresh: 1, Pos: l.Pos}
		}
		return
	}
	// PPO family.
	if l.Type == "klpen_ppo" && l.Distribution == "" {
		errAt("loss", "loss.distribution: required for klpen_ppo, which forms KL(old ‖ new) from stored distribution parameters (allowed: categorical, normal, tanh_normal)")
	}
	if l.EntropyCoeffMap != nil {
		if len(l.Heads) == 0 {
			errAt("loss.entropy_coeff", "loss.entropy_coeff: a per-head mapping needs loss.heads, the list of action heads")
		}
		inHeads := map[string]bool{}
		for _, h := range l.Heads {
			inHeads[h] = true
			if _, ok := l.EntropyCoeffMap[h]; !ok && len(l.Heads) > 0 {
				errAt("loss.entropy_coeff", "loss.entropy_coeff: no coefficient for head "+quote(h)+" (TorchRL raises KeyError: Missing entropy coeff for head)")
			}
		}
		for _, k := range sortedKeys(l.EntropyCoeffMap) {
			if len(l.Heads) > 0 && !inHeads[k] {
				errAt("loss.entropy_coeff."+k, "loss.entropy_coeff: "+quote(k)+" is not a head "+allowed(l.Heads))
			}
		}
	}
	if l.ClipValue > 0 && !l.HasCritic() {
		warnAt("loss.clip_value", "loss.clip_value has no effect without a critic term (critic_coeff is 0)")
	}
	if l.ClipValue > 0 && l.HasCritic() && s.Estimator != nil {
		warnAt("loss.clip_value", "loss.clip_value has no effect when the estimator runs in the kernel: TorchRL's estimator overwrites the stored value with the current critic's, so V_old = V (SEMANTICS.md §1.4); value_clip_fraction is 0")
	}
	if l.NormalizeAdvantage {
		d.normalizeChecks(s, l, numel, errAt, warnAt)
	} else if len(l.NormalizeExcludeDims) > 0 {
		warnAt("loss.normalize_advantage_exclude_dims", "loss.normalize_advantage_exclude_dims is ignored: normalize_advantage is false")
	}
}

// normalizeChecks validates normalize_advantage_exclude_dims as torchrl/_utils.py _standardize
// does, on TorchRL's advantage layout [*batch, 1] (so -1 is the trailing singleton dim), and
// rejects the NaN case TorchRL would run into (SEMANTICS.md §1.3, §11.11).
func (d *decoder) normalizeChecks(s *Spec, l *Loss, numel int, errAt, warnAt func(string, string)) {
	rank := len(s.Batch) + 1
	ex := map[int]bool{}
	for i, x := range l.NormalizeExcludeDims {
		p := "loss.normalize_advantage_exclude_dims[" + itoa(i) + "]"
		y := x
		if y < 0 {
			y += rank
		}
		if y < 0 || y >= rank {
			errAt(p, p+": dim "+itoa(x)+" is out of range for the advantage's "+itoa(rank)+" dims [*batch, 1] (allowed: "+itoa(-rank)+" .. "+itoa(rank-1)+")")
			continue
		}
		if ex[y] {
			errAt(p, p+": dim "+itoa(x)+" repeats an excluded dim (TorchRL raises ValueError)")
		}
		ex[y] = true
	}
	if numel == 1 {
		warnAt("loss.normalize_advantage", "loss.normalize_advantage does nothing on a one-element batch (TorchRL standardises only when advantage.numel() > 1)")
		return
	}
	if len(ex) == rank {
		warnAt("loss.normalize_advantage_exclude_dims", "every dim is excluded: TorchRL warns and leaves the advantage unchanged")
		return
	}
	included := 1
	shape := s.BatchShape()
	for i, n := range shape {
		if !ex[i] {
			included *= n
		}
	}
	if included == 1 {
		errAt("loss.normalize_advantage", "loss.normalize_advantage: the dims included in the statistics have 1 element, so the unbiased std is NaN (TorchRL would return NaN); exclude fewer dims or disable normalisation")
	}
}

// MaxElements is the largest batch a kernel takes: 2^31 − 1 elements, so every index fits the
// signed 32-bit arithmetic of the PTX kernels.
const MaxElements = 1<<31 - 1

// keyChecks rejects keys that the configuration reads but that are mapped to null, and two
// inputs that would read the same array.
func (d *decoder) keyChecks(s *Spec, errAt func(string, string)) {
	byName := map[string]string{}
	for _, k := range s.UsedKeys() {
		key := s.Keys[k]
		if key == nil {
			who := "the loss"
			if s.Loss != nil {
				who = s.Loss.Type
			} else if s.Estimator != nil {
				who = s.Estimator.Type
			}
			errAt("keys."+k, "keys."+k+": "+who+" reads "+quote(k)+" but the key is mapped to null (absent from the data); map it to an array name")
			continue
		}
		name := DataName(key)
		if other, dup := byName[name]; dup {
			at := "keys." + k
			if !s.keysWritten(k) { // point at the renaming the user wrote
				at = "keys." + other
			}
			errAt(at, "keys."+k+": maps to "+quote(name)+", the array keys."+other+" already reads")
		}
		byName[name] = k
	}
	written := map[string]bool{}
	for _, k := range s.OutputKeys() {
		written[k] = true
		if s.Keys[k] == nil {
			errAt("keys."+k, "keys."+k+": the "+s.Estimator.Type+" estimator writes "+quote(k)+" but the key is mapped to null; map it to an output name")
		} else if other, dup := byName[DataName(s.Keys[k])]; dup {
			errAt("keys."+k, "keys."+k+": the output "+quote(DataName(s.Keys[k]))+" has the name of the input keys."+other)
		}
	}
	used := map[string]bool{}
	for _, k := range s.UsedKeys() {
		used[k] = true
	}
	for _, k := range logicalKeys() {
		if s.keysWritten(k) && !used[k] && !written[k] {
			d.warns = append(d.warns, &Error{Pos: s.pos["keys."+k], Msg: "warning: keys." + k + " is neither read nor written by this spec's " + s.what() + "; it is ignored"})
		}
	}
}

// OutputKeys lists the logical keys the kernel writes as outputs named after the spec's keys:
// advantage and value_target when an estimator runs in the kernel (TorchRL's estimators
// write tensordict[advantage_key] and tensordict[value_target_key]).
func (s *Spec) OutputKeys() []string {
	if s.Estimator == nil {
		return nil
	}
	return []string{"advantage", "value_target"}
}

// what names the configured estimator and loss, for messages.
func (s *Spec) what() string {
	var parts []string
	if s.Estimator != nil {
		parts = append(parts, "estimator "+s.Estimator.Type)
	}
	if s.Loss != nil {
		parts = append(parts, "loss "+s.Loss.Type)
	}
	return strings.Join(parts, " and ")
}

// UsedKeys lists the logical keys the configured transforms, estimator and loss read, in a
// fixed order. Each becomes one kernel input named DataName(s.Keys[key]).
// terminated is not listed when it is mapped to null: TorchRL then uses done (SEMANTICS.md §3.1).
func (s *Spec) UsedKeys() []string {
	var out []string
	seen := map[string]bool{}
	add := func(keys ...string) {
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	for _, t := range s.Transforms {
		switch t.Type {
		case "kl_reward":
			add("reward", "sample_log_prob", "ref_log_prob")
		case "qvalue", "distributional_qvalue":
			add("action_value")
		}
	}
	l := s.Loss
	if l != nil {
		switch l.Type {
		case "ppo", "clip_ppo", "klpen_ppo":
			add("log_prob", "sample_log_prob")
			if l.EntropyBonus {
				add("entropy")
			}
			if l.Type == "klpen_ppo" {
				switch l.Distribution {
				case "categorical":
					add("logits", "old_logits")
				default:
					add("loc", "scale", "old_loc", "old_scale")
				}
			}
			if s.Estimator == nil {
				add("advantage")
				if l.HasCritic() {
					add("value_target")
				}
			}
			if l.HasCritic() {
				add("value")
				if l.ClipValue > 0 && s.Estimator == nil {
					add("old_value")
				}
			}
		case "iql", "discrete_iql":
			add("log_prob", "state_action_value", "target_state_action_value", "value")
			if l.Type == "discrete_iql" {
				add("action")
			}
		}
	}
	if e := s.Estimator; e != nil {
		add("reward")
		termNull := s.keysWritten("terminated") && s.Keys["terminated"] == nil
		if e.Type != "td0" || termNull {
			add("done")
		}
		if !termNull {
			add("terminated")
		}
		add("value", "next_value")
		if e.Type == "vtrace" {
			add("sample_log_prob", "log_prob")
		}
	}
	return out
}

// KeyWritten reports whether the spec maps the logical key k under keys (rather than taking
// TorchRL's default).
func (s *Spec) KeyWritten(k string) bool { return s.keysWritten(k) }

// keysWritten reports whether the spec wrote the logical key under keys.
func (s *Spec) keysWritten(k string) bool {
	_, ok := s.pos["keys."+k]
	return ok
}

func dimNames(s *Spec) []string {
	var out []string
	for _, d := range s.Dims {
		out = append(out, d.Name)
	}
	return out
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func quote(s string) string { return "\"" + s + "\"" }

func itoa(i int) string { return strconv.Itoa(i) }
