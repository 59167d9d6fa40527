package spec

import (
	"bytes"
	"fmt"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The type names a spec accepts.
var (
	EstimatorTypes = []string{"gae", "td0", "td1", "td_lambda", "vtrace"}
	LossTypes      = []string{"ppo", "clip_ppo", "klpen_ppo", "iql", "discrete_iql"}
	TransformTypes = []string{"kl_reward", "qvalue", "distributional_qvalue"}
	Reductions     = []string{"none", "mean", "sum"}
	DistanceLosses = []string{"l1", "l2", "smooth_l1"}
)

// ParseFile reads and parses the spec file at path. See Parse.
func ParseFile(path string) (*Spec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}

// Parse parses, defaults and validates one spec. file names the source in diagnostics.
// On failure the error is an ErrorList with every problem found, each "FILE:LINE:COL: msg".
func Parse(file string, src []byte) (*Spec, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		return nil, ErrorList{syntaxError(file, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, ErrorList{{Pos: Pos{File: file, Line: extra.Line, Col: extra.Column},
			Msg: "a spec file holds one YAML document; found a second one"}}
	}
	d := &decoder{file: file, pos: map[string]Pos{}}
	s := &Spec{File: file, DType: Float32, pos: d.pos}
	root := doc.Content[0]
	d.top(s, root)
	if len(d.errs) == 0 {
		d.validate(s, root)
	}
	s.Warnings = d.warns.sortDedup()
	if len(d.errs) > 0 {
		return nil, d.errs.sortDedup()
	}
	return s, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a yaml syntax error ("yaml: line 3: msg") into a positioned Error;
// yaml reports no column for these, so the column is 1.
func syntaxError(file string, err error) *Error {
	msg := err.Error()
	line := 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		fmt.Sscan(m[1], &line)
		msg = m[2]
	}
	if err.Error() == "EOF" {
		msg = "empty spec file"
	}
	return &Error{Pos: Pos{File: file, Line: line, Col: 1}, Msg: "YAML syntax: " + msg}
}

// top decodes the document's root mapping.
func (d *decoder) top(s *Spec, root *yaml.Node) {
	seen := d.mapping(root, "", []field{
		{"package", func(p string, v *yaml.Node) {
			if name, ok := d.str(p, v); ok {
				s.Package = name
				d.packageName(v, name)
			}
		}},
		{"dtype", func(p string, v *yaml.Node) {
			if t, ok := d.enum(p, v, string(Float32), string(Float64)); ok {
				s.DType = DType(t)
			}
		}},
		{"dims", func(p string, v *yaml.Node) { d.dims(s, p, v) }},
		{"batch", func(p string, v *yaml.Node) {
			d.list(p, v, func(ip string, iv *yaml.Node) {
				if name, ok := d.str(ip, iv); ok {
					s.Batch = append(s.Batch, name)
					d.pos[ip] = d.at(iv)
				}
			})
		}},
		{"estimator", func(p string, v *yaml.Node) { s.Estimator = d.estimator(p, v) }},
		{"loss", func(p string, v *yaml.Node) { s.Loss = d.loss(p, v) }},
		{"transforms", func(p string, v *yaml.Node) {
			d.list(p, v, func(ip string, iv *yaml.Node) {
				if t := d.transform(ip, iv); t != nil {
					s.Transforms = append(s.Transforms, *t)
				}
			})
		}},
		{"keys", func(p string, v *yaml.Node) { d.keys(s, p, v) }},
	})
	if root.Kind != yaml.MappingNode {
		return
	}
	for _, req := range []string{"package", "dims", "batch"} {
		if seen[req] == nil {
			d.errf(root, "missing required key %q", req)
		}
	}
}

// packageName checks that the generated package's name is usable.
func (d *decoder) packageName(v *yaml.Node, name string) {
	switch {
	case token.IsKeyword(name):
		d.errf(v, "package: %q is a Go keyword", name)
	case !token.IsIdentifier(name) || name == "_":
		d.errf(v, "package: %q is not a valid Go identifier (letters, digits and '_', not starting with a digit)", name)
	case name == "main":
		d.errf(v, "package: \"main\" cannot be imported; choose a library package name")
	case !packageName.MatchString(name):
		d.errf(v, "package: %q must be lower-case ASCII letters, digits and '_' (Go's convention; it is also the file name <package>.go)", name)
	case slices.Contains(generatedStems, name):
		d.errf(v, "package: %q would name %s.go, which is one of the generated package's other files; choose another name", name, name)
	default:
		if _, suffix, ok := cutLast(name, "_"); ok && (suffix == "test" || slices.Contains(buildSuffixes, suffix)) {
			d.errf(v, "package: %q ends in _%s, which would make %s.go a build-constrained or test file; choose another name", name, suffix, name)
		}
	}
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

func (d *decoder) dims(s *Spec, path string, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		d.errf(n, "%s: want a mapping of dim name to size, got %s", path, describe(n))
		return
	}
	if len(n.Content) == 0 {
		d.errf(n, "%s: at least one dim is needed", path)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := join(path, k.Value)
		if !dimName.MatchString(k.Value) {
			d.errf(k, "%s: dim name %q must be an ASCII Go identifier starting with an upper-case letter, e.g. N, T, B (it becomes the generated package's exported constant)", path, k.Value)
			continue
		}
		if slices.Contains(ReservedNames, k.Value) {
			d.errf(k, "%s: dim name %q is taken by the generated package's own %s; rename the dim", path, k.Value, k.Value)
			continue
		}
		if seen[k.Value] {
			d.errf(k, "%s: repeated dim", kp)
			continue
		}
		seen[k.Value] = true
		size, ok := d.int(kp, v)
		if !ok {
			continue
		}
		if size <= 0 {
			d.errf(v, "%s: a dim must be > 0, got %d", kp, size)
			continue
		}
		s.Dims = append(s.Dims, Dim{Name: k.Value, Size: size, Pos: d.at(v)})
	}
}

// typed finds and decodes the "type" key of a mapping before its other keys, since the
// accepted keys depend on it.
func (d *decoder) typed(path string, n *yaml.Node, types []string) (string, bool) {
	if n.Kind != yaml.MappingNode {
		d.errf(n, "%s: want a mapping, got %s", path, describe(n))
		return "", false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "type" {
			return d.enum(path+".type", n.Content[i+1], types...)
		}
	}
	d.errf(n, "%s: missing key \"type\" %s", path, allowed(types))
	return "", false
}

func (d *decoder) estimator(path string, n *yaml.Node) *Estimator {
	typ, ok := d.typed(path, n, EstimatorTypes)
	if !ok {
		return nil
	}
	e := &Estimator{Type: typ, Gamma: -1, Lmbda: -1, RhoThresh: 1, CThresh: 1, Pos: d.at(n)}
	fs := []field{
		{"type", func(string, *yaml.Node) {}},
		{"gamma", func(p string, v *yaml.Node) { e.Gamma, _ = d.floatIn(p, v, 0, 1, false, false) }},
	}
	switch typ {
	case "gae":
		fs = append(fs,
			field{"lmbda", func(p string, v *yaml.Node) { e.Lmbda, _ = d.floatIn(p, v, 0, 1, false, false) }},
			field{"average_gae", func(p string, v *yaml.Node) { e.AverageGAE, _ = d.bool(p, v) }})
	case "td_lambda":
		fs = append(fs,
			field{"lmbda", func(p string, v *yaml.Node) { e.Lmbda, _ = d.floatIn(p, v, 0, 1, false, false) }},
			field{"average_rewards", func(p string, v *yaml.Node) { e.AverageRewards, _ = d.bool(p, v) }})
	case "td0", "td1":
		fs = append(fs, field{"average_rewards", func(p string, v *yaml.Node) { e.AverageRewards, _ = d.bool(p, v) }})
	case "vtrace":
		fs = append(fs,
			field{"rho_thresh", func(p string, v *yaml.Node) { e.RhoThresh, _ = d.floatIn(p, v, 0, 0, true, true) }},
			field{"c_thresh", func(p string, v *yaml.Node) { e.CThresh, _ = d.floatIn(p, v, 0, 0, true, true) }},
			field{"average_adv", func(p string, v *yaml.Node) { e.AverageAdv, _ = d.bool(p, v) }})
	}
	d.mapping(n, path, fs)
	return e
}

// ppoFields are the keys of PPOLoss (all three PPO classes accept them).
func (d *decoder) ppoFields(l *Loss, loss *yaml.Node) []field {
	return []field{
		{"entropy_bonus", func(p string, v *yaml.Node) { l.EntropyBonus, _ = d.bool(p, v) }},
		{"entropy_coeff", func(p string, v *yaml.Node) { d.entropyCoeff(l, p, v) }},
		{"heads", func(p string, v *yaml.Node) {
			d.list(p, v, func(ip string, iv *yaml.Node) {
				if h, ok := d.str(ip, iv); ok {
					l.Heads = append(l.Heads, h)
				}
			})
		}},
		{"critic_coeff", func(p string, v *yaml.Node) {
			if isNull(v) {
				l.CriticCoeff = 0
				return
			}
			if c, ok := d.float(p, v); ok {
				if c < 0 {
					d.errf(v, "%s: must be >= 0 (0 or null drops the critic term), got %s; TorchRL silently drops the critic for a negative value", p, v.Value)
				}
				l.CriticCoeff = c
			}
		}},
		{"loss_critic_type", func(p string, v *yaml.Node) { l.LossCriticType, _ = d.enum(p, v, DistanceLosses...) }},
		{"normalize_advantage", func(p string, v *yaml.Node) { l.NormalizeAdvantage, _ = d.bool(p, v) }},
		{"normalize_advantage_exclude_dims", func(p string, v *yaml.Node) {
			d.list(p, v, func(ip string, iv *yaml.Node) {
				if x, ok := d.int(ip, iv); ok {
					l.NormalizeExcludeDims = append(l.NormalizeExcludeDims, x)
					d.pos[ip] = d.at(iv)
				}
			})
		}},
		{"clip_value", func(p string, v *yaml.Node) {
			switch {
			case isNull(v):
				l.ClipValue = 0
			case v.Kind == yaml.ScalarNode && v.Tag == "!!bool":
				b, _ := d.bool(p, v)
				if b && l.Type != "clip_ppo" {
					d.errf(v, "%s: true is accepted by clip_ppo only (it means clip_epsilon); %s takes a number", p, l.Type)
				}
				if b {
					l.ClipValue = -1 // resolved to clip_epsilon once that is known
				}
			default:
				if c, ok := d.float(p, v); ok {
					if c < 0 {
						d.errf(v, "%s: must be >= 0 (0 or null: no value clipping), got %s", p, v.Value)
					}
					l.ClipValue = c
				}
			}
		}},
		{"log_explained_variance", func(p string, v *yaml.Node) { l.LogExplainedVariance, _ = d.bool(p, v) }},
		{"reduction", func(p string, v *yaml.Node) { l.Reduction, _ = d.enum(p, v, Reductions...) }},
	}
}

func (d *decoder) entropyCoeff(l *Loss, path string, v *yaml.Node) {
	if v.Kind == yaml.MappingNode {
		l.EntropyCoeffMap = map[string]float64{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, c := v.Content[i], v.Content[i+1]
			if x, ok := d.float(join(path, k.Value), c); ok {
				l.EntropyCoeffMap[k.Value] = x
				d.pos[join(path, k.Value)] = d.at(k)
			}
		}
		return
	}
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!float" && v.Tag != "!!int") {
		d.errf(v, "%s: want a number or a mapping {head: number}, got %s", path, describe(v))
		return
	}
	l.EntropyCoeff, _ = d.float(path, v)
}

func (d *decoder) loss(path string, n *yaml.Node) *Loss {
	typ, ok := d.typed(path, n, LossTypes)
	if !ok {
		return nil
	}
	l := &Loss{
		Type: typ, ClipEpsilon: 0.2, EntropyBonus: true, EntropyCoeff: 0.01, CriticCoeff: 1,
		LossCriticType: "smooth_l1", LogExplainedVariance: true, Reduction: "mean",
		Dtarg: 0.01, Beta: 1, Increment: 2, Decrement: 0.5,
		NumQValueNets: 2, LossFunction: "smooth_l1", Temperature: 1, Expectile: 0.5,
		Pos: d.at(n),
	}
	fs := []field{{"type", func(string, *yaml.Node) {}}}
	switch typ {
	case "ppo":
		fs = append(fs, d.ppoFields(l, n)...)
	case "clip_ppo":
		fs = append(fs, d.ppoFields(l, n)...)
		fs = append(fs, field{"clip_epsilon", func(p string, v *yaml.Node) {
			l.ClipEpsilon, _ = d.floatIn(p, v, 0, 1, true, true)
		}})
	case "klpen_ppo":
		fs = append(fs, d.ppoFields(l, n)...)
		fs = append(fs,
			field{"dtarg", func(p string, v *yaml.Node) { l.Dtarg, _ = d.floatIn(p, v, 0, 0, true, true) }},
			field{"beta", func(p string, v *yaml.Node) { l.Beta, _ = d.floatIn(p, v, 0, 0, false, true) }},
			field{"increment", func(p string, v *yaml.Node) { l.Increment, _ = d.floatIn(p, v, 1, 0, false, true) }},
			field{"decrement", func(p string, v *yaml.Node) { l.Decrement, _ = d.floatIn(p, v, 0, 1, true, false) }},
			field{"distribution", func(p string, v *yaml.Node) {
				l.Distribution, _ = d.enum(p, v, "normal", "tanh_normal", "categorical")
			}})
	case "iql", "discrete_iql":
		fs = append(fs,
			field{"num_qvalue_nets", func(p string, v *yaml.Node) {
				if q, ok := d.int(p, v); ok {
					if q < 1 {
						d.errf(v, "%s: must be >= 1, got %d", p, q)
					}
					l.NumQValueNets = q
				}
			}},
			field{"loss_function", func(p string, v *yaml.Node) { l.LossFunction, _ = d.enum(p, v, DistanceLosses...) }},
			field{"temperature", func(p string, v *yaml.Node) { l.Temperature, _ = d.floatIn(p, v, 0, 0, true, true) }},
			field{"expectile", func(p string, v *yaml.Node) { l.Expectile, _ = d.floatIn(p, v, 0, 1, true, true) }},
			field{"reduction", func(p string, v *yaml.Node) { l.Reduction, _ = d.enum(p, v, Reductions...) }})
		if typ == "discrete_iql" {
			fs = append(fs, field{"action_space", func(p string, v *yaml.Node) {
				l.ActionSpace, _ = d.enum(p, v, "one_hot", "categorical")
			}})
		}
	}
	d.mapping(n, path, fs)
	if l.ClipValue == -1 {
		l.ClipValue = l.ClipEpsilon
	}
	if typ == "discrete_iql" && l.ActionSpace == "" {
		l.ActionSpace = "one_hot" // TorchRL's fallback (with a warning) when action_space is not given
		d.warnf(n, "%s.action_space not given: one_hot is used, as TorchRL's DiscreteIQLLoss does", path)
	}
	return l
}

func (d *decoder) transform(path string, n *yaml.Node) *Transform {
	typ, ok := d.typed(path, n, TransformTypes)
	if !ok {
		return nil
	}
	t := &Transform{Type: typ, Coef: 1, ActionSpace: "one_hot", Pos: d.at(n)}
	fs := []field{{"type", func(string, *yaml.Node) {}}}
	varNums := field{"var_nums", func(p string, v *yaml.Node) {
		d.list(p, v, func(ip string, iv *yaml.Node) {
			if x, ok := d.int(ip, iv); ok {
				if x < 1 {
					d.errf(iv, "%s: must be >= 1, got %d", ip, x)
				}
				t.VarNums = append(t.VarNums, x)
			}
		})
	}}
	switch typ {
	case "kl_reward":
		fs = append(fs, field{"coef", func(p string, v *yaml.Node) { t.Coef, _ = d.float(p, v) }})
	case "qvalue":
		fs = append(fs, field{"action_space", func(p string, v *yaml.Node) {
			t.ActionSpace, _ = d.enum(p, v, "one_hot", "categorical", "mult_one_hot")
		}}, varNums)
	case "distributional_qvalue":
		fs = append(fs, field{"action_space", func(p string, v *yaml.Node) {
			t.ActionSpace, _ = d.enum(p, v, "one_hot", "categorical", "mult_one_hot")
		}}, varNums, field{"support", func(p string, v *yaml.Node) {
			d.list(p, v, func(ip string, iv *yaml.Node) {
				if x, ok := d.float(ip, iv); ok {
					t.Support = append(t.Support, x)
				}
			})
		}})
	}
	d.mapping(n, path, fs)
	return t
}

func (d *decoder) keys(s *Spec, path string, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		d.errf(n, "%s: want a mapping of logical key to data key, got %s", path, describe(n))
		return
	}
	written := map[string][]string{}
	present := map[string]bool{}
	names := logicalKeys()
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := join(path, k.Value)
		if _, ok := DefaultKeys[k.Value]; !ok {
			d.errf(k, "%s: unknown key %q %s", path, k.Value, allowed(names))
			continue
		}
		if present[k.Value] {
			d.errf(k, "%s: repeated key", kp)
			continue
		}
		present[k.Value] = true
		d.pos[kp] = d.at(v)
		switch {
		case isNull(v):
			written[k.Value] = nil
		case v.Kind == yaml.SequenceNode:
			var key []string
			d.list(kp, v, func(ip string, iv *yaml.Node) {
				if part, ok := d.keyPart(ip, iv); ok {
					key = append(key, part)
				}
			})
			if len(key) == 0 {
				d.errf(v, "%s: an empty nested key; write null for a key that is not in the data", kp)
			}
			written[k.Value] = key
		default:
			if part, ok := d.keyPart(kp, v); ok {
				written[k.Value] = []string{part}
			}
		}
	}
	s.Keys = resolveKeys(written, present)
	s.pos["keys"] = d.at(n)
}

// keyPart decodes one element of a nested key; '.' is reserved as the .npz joiner.
func (d *decoder) keyPart(path string, v *yaml.Node) (string, bool) {
	s, ok := d.str(path, v)
	if !ok {
		return "", false
	}
	if !keyPart.MatchString(s) {
		d.errf(v, "%s: key part %q must be ASCII letters, digits, '_' or '-', starting with a letter or '_' (it names a Go field; '.' joins nested keys in .npz names)", path, s)
		return "", false
	}
	return s, true
}
