package spec

import (
	"bytes"
	"fmt"
	"go/token"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ParseFile reads and parses the spec file at path. See Parse.
func ParseFile(path string, reg Registry) (*Spec, error) {
	src, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src, reg)
}

// Parse parses, defaults and validates one spec whose stages come from reg. file names the
// source in diagnostics. On failure the error is an ErrorList with every problem found, each
// "FILE:LINE:COL: msg".
func Parse(file string, src []byte, reg Registry) (*Spec, error) {
	return ParseResized(file, src, reg, nil)
}

// ParseResized is Parse with some dims given other sizes (lossgen bench's -sizes): each
// replaces the size the spec declares before anything is validated, so a resized spec is
// checked exactly as one that declared those sizes. A name that is no declared dim, or a size
// out of a dim's range, is an error at the dims mapping.
func ParseResized(file string, src []byte, reg Registry, resize map[string]int) (*Spec, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		return nil, ErrorList{syntaxError(file, src, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, ErrorList{{Pos: Pos{File: file, Line: extra.Line, Col: extra.Column},
			Msg: "a spec file holds one YAML document; found a second one"}}
	}
	d := newDecoder(file, reg, resize)
	s := &Spec{File: file, DType: Float32, ParamDType: Float32, pos: d.pos}
	root := doc.Content[0]
	d.mergeKeys(root)
	d.top(s, root)
	if root.Kind == yaml.MappingNode {
		// Also after decoding errors: validate checks what the errors leave meaningful, so
		// that one run reports every independent error.
		d.validate(s, root)
	}
	s.Warnings = d.warns.sortDedup()
	s.Notes = d.notes.sortDedup()
	if len(d.errs) > 0 {
		return nil, d.errs.sortDedup()
	}
	return s, nil
}

// mergeKeys reports every YAML merge key (<<: *anchor): the decoder reads a mapping's own
// keys only, so the merged ones would be silently missing. Aliases are not followed (their
// anchors are walked where they are written).
func (d *decoder) mergeKeys(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				d.errf(k, "a YAML merge key (<<) is not supported; write the keys out")
			}
		}
	}
	if n.Kind != yaml.AliasNode {
		for _, c := range n.Content {
			d.mergeKeys(c)
		}
	}
}

var (
	yamlLine   = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	yamlAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// parserProblems are the yaml parser's (not scanner's) messages: the yaml package reports
// their line 0-based ("line 2" for a '{' on line 3 that is never closed), the scanner's 1-based.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'": true, "did not find expected ',' or '}'": true,
	"did not find expected '-' indicator": true, "did not find expected <document start>": true,
	"did not find expected <stream-start>": true, "did not find expected key": true,
	"did not find expected node content": true, "found duplicate %TAG directive": true,
	"found duplicate %YAML directive": true, "found incompatible YAML document": true,
	"found undefined tag handle": true,
}

// syntaxError turns a yaml syntax error ("yaml: line 3: msg") into a positioned Error;
// yaml reports no column for these, so the column is 1 (an unknown alias: its place in src).
func syntaxError(file string, src []byte, err error) *Error {
	msg := err.Error()
	line, col := 1, 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		fmt.Sscan(m[1], &line)
		msg = m[2]
		if parserProblems[msg] {
			line++
		}
	} else if m := yamlAnchor.FindStringSubmatch(msg); m != nil {
		if i := bytes.Index(src, []byte("*"+m[1])); i >= 0 {
			line = 1 + bytes.Count(src[:i], []byte("\n"))
			col = 1 + i - (bytes.LastIndexByte(src[:i], '\n') + 1)
		}
		msg = "unknown anchor '" + m[1] + "' referenced"
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if err.Error() == "EOF" {
		msg = "empty spec file"
		if len(bytes.TrimSpace(src)) > 0 {
			msg = "no YAML document in the file (is it UTF-8 text?)"
		}
	}
	return &Error{Pos: Pos{File: file, Line: line, Col: col}, Msg: "YAML syntax: " + msg}
}

// top decodes the document's root mapping.
func (d *decoder) top(s *Spec, root *yaml.Node) {
	seen := d.mapping(root, "", []field{
		{name: "package", decode: func(p string, v *yaml.Node) {
			if name, ok := d.str(p, v); ok {
				s.Package = name
				d.packageName(v, name)
			}
		}},
		{name: "dtype", decode: func(p string, v *yaml.Node) {
			if t, ok := d.enum(p, v, string(Float32), string(Float64)); ok {
				s.DType = DType(t)
			}
		}},
		{name: "param_dtype", decode: func(p string, v *yaml.Node) {
			if t, ok := d.enum(p, v, string(Float32), string(Float64)); ok {
				s.ParamDType = DType(t)
			}
		}},
		{name: "dims", decode: func(p string, v *yaml.Node) { d.dims(s, p, v) }},
		{name: "batch", decode: func(p string, v *yaml.Node) {
			ok := d.list(p, v, func(ip string, iv *yaml.Node) {
				if name, ok := d.str(ip, iv); ok {
					s.Batch = append(s.Batch, name)
					d.pos[ip] = d.at(iv)
				}
			})
			d.batchOK = ok && len(s.Batch) == len(v.Content)
		}},
		{name: "estimator", decode: func(p string, v *yaml.Node) { s.Estimator = d.stage(Estimator, p, v) }},
		{name: "loss", decode: func(p string, v *yaml.Node) { s.Loss = d.stage(Loss, p, v) }},
		{name: "transforms", decode: func(p string, v *yaml.Node) {
			d.list(p, v, func(ip string, iv *yaml.Node) {
				if t := d.stage(Transform, ip, iv); t != nil {
					s.Transforms = append(s.Transforms, t)
				}
			})
		}},
		{name: "keys", decode: func(p string, v *yaml.Node) { d.keys(s, p, v) }},
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
	case len(name) > MaxNameLen:
		d.errf(v, "package: a name of %d characters; at most %d (it names files and a Go package)", len(name), MaxNameLen)
	case token.IsKeyword(name):
		d.errf(v, "package: %q is a Go keyword", name)
	case !token.IsIdentifier(name) || name == "_":
		d.errf(v, "package: %q is not a valid Go identifier (letters, digits and '_', not starting with a digit)", name)
	case name == "main":
		d.errf(v, "package: \"main\" cannot be imported; choose a library package name")
	case !packageName.MatchString(name):
		d.errf(v, "package: %q must be lower-case ASCII letters, digits and '_' (Go's convention; it is also the file name <package>.go)", name)
	case slices.Contains(generatedStems, name):
		d.errf(v, "package: %q would name %s.go and %s_test.go, which collide with the generated package's other files; choose another name", name, name, name)
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
	d.dimsOK = true
	if len(n.Content) == 0 {
		d.errf(n, "%s: at least one dim is needed", path)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		before := len(d.errs)
		d.dim(s, seen, path, k, v)
		if len(d.errs) > before && s.DimSize(k.Value) == 0 {
			d.badDims[k.Value] = true // written, so no "not declared" error for it
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.resize)) {
		if !seen[name] {
			d.errf(n, "%s: no dim %q to resize %s", path, name, allowedFor(name, slices.Sorted(maps.Keys(seen))))
		}
	}
}

// dim decodes one entry of dims, name k and size v, adding it to s.Dims when it is usable.
func (d *decoder) dim(s *Spec, seen map[string]bool, path string, k, v *yaml.Node) {
	kp := join(path, k.Value)
	if !dimName.MatchString(k.Value) {
		d.errf(k, "%s: dim name %q must be an ASCII Go identifier starting with an upper-case letter, e.g. N, T, B (it becomes the generated package's exported constant)", path, k.Value)
		return
	}
	if len(k.Value) > MaxNameLen {
		d.errf(k, "%s: a dim name of %d characters; at most %d", path, len(k.Value), MaxNameLen)
		return
	}
	if slices.Contains(ReservedNames(d.reg), k.Value) {
		d.errf(k, "%s: dim name %q is taken by the generated package's own %s; rename the dim", path, k.Value, k.Value)
		return
	}
	if testFuncName.MatchString(k.Value) {
		d.errf(k, "%s: dim name %q is named like a Go test function (Test…, Benchmark…, Fuzz…, Example…), which the generated package's tests declare; rename the dim", path, k.Value)
		return
	}
	if seen[k.Value] {
		d.errf(k, "%s: repeated dim", kp)
		return
	}
	seen[k.Value] = true
	size, ok := d.int(kp, v)
	if !ok {
		return
	}
	if size <= 0 {
		d.errf(v, "%s: a dim must be > 0, got %d", kp, size)
		return
	}
	if r, ok := d.resize[k.Value]; ok {
		if r <= 0 || r > math.MaxInt32 {
			d.errf(v, "%s: resized to %d; a dim is in [1, %d]", kp, r, math.MaxInt32)
			return
		}
		size = r
	}
	s.Dims = append(s.Dims, Dim{Name: k.Value, Size: size, Pos: d.at(v)})
}

// typed finds and decodes the "type" key of a stage's mapping before its other keys, since
// the accepted keys depend on it. The type is a registered type name of kind or, as TorchRL
// users name it, its class (ClipPPOLoss), which reads as the type.
func (d *decoder) typed(kind Kind, path string, n *yaml.Node) (string, bool) {
	types := d.reg.Types(kind)
	if n.Kind != yaml.MappingNode {
		d.errf(n, "%s: want a mapping, got %s", path, describe(n))
		return "", false
	}
	var classes []Alias
	for _, t := range types {
		if c := d.reg.Stage(kind, t).Class; c != "" {
			classes = append(classes, Alias{Name: c, For: t})
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "type" {
			return d.enumAliased(path+".type", n.Content[i+1], types, classes)
		}
	}
	d.errf(n, "%s: missing key \"type\" %s", path, allowed(types))
	return "", false
}

// stage decodes a loss, estimator or transform mapping against its registry entry: every
// parameter of the entry is accepted, with its type and range, under its name or an alias,
// and takes TorchRL's default when absent; a rejected TorchRL argument is an error that says
// why. A stage whose mapping or type is reported is nil (d.failed).
func (d *decoder) stage(kind Kind, path string, n *yaml.Node) *Stage {
	typ, ok := d.typed(kind, path, n)
	if !ok {
		d.failed[kind] = true
		return nil
	}
	def := d.reg.Stage(kind, typ)
	st := &Stage{Def: def, Type: typ, Path: path, Pos: d.at(n), Values: map[string]Value{}}
	if _, ok := d.pos[path]; !ok { // a list item (transforms[i]) has no mapping key to record it
		d.pos[path] = st.Pos
	}
	for _, p := range def.Params {
		st.Values[p.Name] = Value{V: p.Default, Pos: st.Pos}
	}
	fs := []field{{name: "type", decode: func(string, *yaml.Node) {}}}
	for i := range def.Params {
		p := &def.Params[i]
		fs = append(fs, field{name: p.Name, aliases: p.Aliases, decode: func(kp string, v *yaml.Node) {
			if x, ok := d.param(p, kp, v); ok {
				st.Values[p.Name] = Value{V: x, Pos: d.at(v), Written: true, Null: isNull(v)}
			}
		}})
	}
	flat := d.flatLinspace(def, &fs)
	for i := range def.Ignored {
		p := &def.Ignored[i]
		fs = append(fs, field{name: p.Name, hidden: true, decode: func(kp string, v *yaml.Node) {
			if x, ok := d.param(p, kp, v); ok {
				d.ignored = append(d.ignored, ignoredArg{st: st, def: p, path: kp, pos: d.at(v), v: x})
			}
			delete(d.pos, kp) // the Spec is the one written without it
		}})
	}
	for _, r := range def.Rejected {
		fs = append(fs, field{name: r.Name, reject: r.Why})
	}
	fs = append(fs, d.keyArgFields(def)...)
	seen := d.mapping(n, path, fs)
	d.resolveFlatLinspace(st, seen, flat)
	return st
}

// param decodes one parameter's value by its type, checking every number against its range.
func (d *decoder) param(p *ParamDef, path string, v *yaml.Node) (any, bool) {
	if isNull(v) {
		if p.Null == nil {
			d.errf(v, "%s: null is not allowed here", path)
			return nil, false
		}
		return p.Null, true
	}
	num := func(path string, v *yaml.Node) (float64, bool) {
		x, ok := d.float(path, v)
		if ok && !p.inRange(x) {
			d.errf(v, "%s: must be in %s, got %s", path, p.fmtRange(), v.Value)
			return 0, false
		}
		return x, ok
	}
	isBool := v.Kind == yaml.ScalarNode && v.Tag == "!!bool"
	switch p.Type {
	case Float:
		return num(path, v)
	case FloatOrBool:
		if isBool {
			return d.bool(path, v)
		}
		return num(path, v)
	case FloatOrAuto:
		if v.Kind == yaml.ScalarNode && v.Tag == "!!str" && v.Value == "auto" {
			return "auto", true
		}
		return num(path, v)
	case FloatOrPair:
		if v.Kind != yaml.SequenceNode {
			return num(path, v)
		}
		if len(v.Content) != 2 {
			d.errf(v, "%s: want a number or a list of two numbers [low, high], got a list of %d", path, len(v.Content))
			return nil, false
		}
		lo, ok1 := num(path+"[0]", v.Content[0])
		hi, ok2 := num(path+"[1]", v.Content[1])
		return []float64{lo, hi}, ok1 && ok2
	case FloatOrMap:
		if v.Kind != yaml.MappingNode {
			if v.Kind != yaml.ScalarNode || (v.Tag != "!!float" && v.Tag != "!!int") {
				d.errf(v, "%s: want a number or a mapping {head: number}, got %s", path, describe(v))
				return nil, false
			}
			return num(path, v)
		}
		m := map[string]float64{}
		ok := true
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, c := v.Content[i], v.Content[i+1]
			kp := join(path, k.Value)
			if _, dup := m[k.Value]; dup {
				d.errf(k, "%s: repeated key", kp)
				ok = false
				continue
			}
			x, okx := num(kp, c)
			d.pos[kp] = d.at(k)
			m[k.Value], ok = x, ok && okx
		}
		return m, ok
	case FloatList:
		if p.LinspaceDim != "" && v.Kind == yaml.MappingNode {
			return d.linspace(path, v)
		}
		if p.LinspaceDim != "" && v.Kind != yaml.SequenceNode {
			d.errf(v, "%s: want a list of numbers or {vmin: V, vmax: V, n_atoms: K} (torch.linspace(vmin, vmax, n_atoms)), got %s", path, describe(v))
			return nil, false
		}
		var out []float64
		ok := d.list(path, v, func(ip string, iv *yaml.Node) {
			if x, okx := num(ip, iv); okx {
				out = append(out, x)
			}
		})
		return out, ok
	case Int:
		if p.DimSize && v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
			x, ok := d.str(path, v)
			return dimSize(x), ok // resolved to the dim's size in validate, once dims are known
		}
		x, ok := d.int(path, v)
		if ok && !p.inRange(float64(x)) {
			d.errf(v, "%s: must be in %s, got %d", path, p.fmtRange(), x)
			return nil, false
		}
		return x, ok
	case IntList:
		var out []int
		ok := d.list(path, v, func(ip string, iv *yaml.Node) {
			if x, okx := d.int(ip, iv); okx {
				out = append(out, x)
				d.pos[ip] = d.at(iv)
			}
		})
		return out, ok
	case Bool:
		return d.bool(path, v)
	case Enum:
		for _, r := range p.RejectedValues {
			if v.Kind == yaml.ScalarNode && v.Value == r.Name {
				d.errf(v, "%s: %q is not taken: %s %s", path, r.Name, r.Why, allowed(p.Enum))
				return nil, false
			}
		}
		return d.enumAliased(path, v, p.Enum, p.ValueAliases)
	case Names:
		// Each name (an action head) becomes part of a data key and a Go field (<head>_entropy),
		// so it is checked as a key part, and two that differ only in case, '_' or '-' would
		// make one field.
		var out []string
		seen := map[string]string{}
		ok := d.list(path, v, func(ip string, iv *yaml.Node) {
			x, okx := d.keyPart(ip, iv)
			if !okx {
				return
			}
			folded := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(x))
			switch o, dup := seen[folded]; {
			case dup && o == x:
				d.errf(iv, "%s: %q is already in %s", ip, x, path)
				return
			case dup:
				d.errf(iv, "%s: %q and %q differ only in case, '_' or '-': as Go fields they would clash; rename one", ip, o, x)
				return
			}
			seen[folded] = x
			out = append(out, x)
			d.pos[ip] = d.at(iv)
		})
		return out, ok && len(out) == len(v.Content)
	case DimName:
		if p.DimIndex && v.Kind == yaml.ScalarNode && v.Tag == "!!int" {
			i, ok := d.int(path, v)
			return batchIndex(i), ok // resolved to a dim name in validate, once the batch is known
		}
		if p.DimIndex && (v.Kind != yaml.ScalarNode || v.Tag != "!!str") {
			d.errf(v, "%s: want a dim name or TorchRL's integer dim (0 the first batch dim, -1 the last), got %s", path, describe(v))
			return nil, false
		}
		x, ok := d.str(path, v)
		return x, ok // checked against dims in validate
	case Text:
		return d.str(path, v)
	}
	panic("spec: parameter type of " + p.Name)
}

// keys decodes the keys: mapping into d.keysWritten; validate resolves it, with the
// stages' <key>_key arguments, into Spec.Keys.
func (d *decoder) keys(s *Spec, path string, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		d.errf(n, "%s: want a mapping of logical key to data key, got %s", path, describe(n))
		return
	}
	names := d.reg.Keys()
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := join(path, k.Value)
		if _, ok := d.reg.Key(k.Value); !ok {
			d.errf(k, "%s: unknown key %q %s", path, k.Value, allowedFor(k.Value, names))
			continue
		}
		if seen[k.Value] {
			d.errf(k, "%s: repeated key", kp)
			continue
		}
		seen[k.Value] = true
		d.pos[kp] = d.at(v)
		if key, ok := d.dataKey(kp, v); ok {
			d.keysWritten[k.Value] = key
		}
	}
	s.pos["keys"] = d.at(n)
}

// dataKey decodes the data key a logical key maps to: a name, a nested key as a list of
// names, or null (nil: absent from the data).
func (d *decoder) dataKey(kp string, v *yaml.Node) ([]string, bool) {
	switch {
	case isNull(v):
		return nil, true
	case v.Kind == yaml.SequenceNode:
		var key []string
		ok := d.list(kp, v, func(ip string, iv *yaml.Node) {
			if part, ok := d.keyPart(ip, iv); ok {
				key = append(key, part)
			}
		})
		if len(v.Content) == 0 { // a bad part is reported as itself
			d.errf(v, "%s: an empty nested key; write null for a key that is not in the data", kp)
			return nil, false
		}
		if len(key) > MaxKeyDepth {
			d.errf(v, "%s: a key nested %d deep; at most %d", kp, len(key), MaxKeyDepth)
			return nil, false
		}
		return key, ok && len(key) == len(v.Content)
	default:
		if part, ok := d.keyPart(kp, v); ok {
			return []string{part}, true
		}
		return nil, false
	}
}

// keyPart decodes one element of a nested key; '.' is reserved as the .npz joiner.
func (d *decoder) keyPart(path string, v *yaml.Node) (string, bool) {
	s, ok := d.str(path, v)
	if !ok {
		return "", false
	}
	if len(s) > MaxNameLen {
		d.errf(v, "%s: a key part of %d characters; at most %d", path, len(s), MaxNameLen)
		return "", false
	}
	if !keyPart.MatchString(s) {
		d.errf(v, "%s: key part %q must be ASCII letters, digits, '_' or '-', starting with a letter or '_' (it names a Go field; '.' joins nested keys in .npz names)", path, s)
		return "", false
	}
	return s, true
}
