package spec

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// decoder walks a yaml.Node tree by hand: yaml's own strict decoding reports "line N" only
// and a custom UnmarshalYAML loses KnownFields strictness (DEPS.md pitfalls 8 and 9), so
// every mapping here checks its keys itself and every error carries line and column.
type decoder struct {
	file  string
	errs  ErrorList
	warns ErrorList
	notes ErrorList
	pos   map[string]Pos
	reg   Registry
	// resize replaces declared dim sizes (ParseResized).
	resize map[string]int

	// What failed to decode, so that validate checks what still means something (every
	// independent error is reported in one run) and stops only the checks that depend on
	// what failed (validate.go).
	broken  map[string]bool // spec paths whose value was reported ("loss.gamma", "batch")
	badDims map[string]bool // dims written under dims but reported (bad name or size)
	dimsOK  bool            // dims is a mapping
	batchOK bool            // batch is a list of names
	failed  map[Kind]bool   // a stage of this kind is absent because its mapping or type was reported

	// The keys: mapping as written (nil value: null) and the stages' <key>_key arguments,
	// resolved together into Spec.Keys once every stage is decoded (keyargs.go).
	keysWritten map[string][]string
	keyArgs     map[string][]keyArg
	// ignored are the StageDef.Ignored arguments written, each a note or, where its Refuse
	// says it matters for the stage as configured, an error (validate).
	ignored []ignoredArg
}

func newDecoder(file string, reg Registry, resize map[string]int) *decoder {
	return &decoder{file: file, pos: map[string]Pos{}, reg: reg, resize: resize,
		broken: map[string]bool{}, badDims: map[string]bool{}, failed: map[Kind]bool{},
		keysWritten: map[string][]string{}, keyArgs: map[string][]keyArg{}}
}

func (d *decoder) at(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Col: n.Column} }

func (d *decoder) errf(n *yaml.Node, format string, args ...any) {
	d.errs = append(d.errs, &Error{Pos: d.at(n), Msg: fmt.Sprintf(format, args...)})
}

// field is one accepted key of a mapping and the function that decodes its value, or, with
// reject set, a key that is known but refused (the error says why).
type field struct {
	name    string
	decode  func(path string, v *yaml.Node)
	aliases []Alias // other names of the key (ParamDef.Aliases)
	reject  string  // the error for a refused key (StageDef.Rejected)
	// hidden keeps an accepted key out of an unknown key's list of allowed ones, which lists
	// what changes the kernel: a stage's <key>_key arguments (one per key it reads or
	// writes) and its Ignored arguments.
	hidden bool
}

// mapping decodes a mapping node against its accepted fields. Unknown and repeated keys are
// errors that name the allowed keys; a key written under an alias decodes as its field,
// with a note when the alias is deprecated. It returns the key nodes seen, by field name.
// A value whose decoding reported an error marks its path broken.
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		if path == "" {
			path = "the spec"
		}
		d.errf(n, "%s: want a mapping, got %s", path, describe(n))
		return nil
	}
	var names []string
	byName := map[string]*field{}
	alias := map[string]*Alias{}
	for i := range fields {
		f := &fields[i]
		if f.reject == "" && !f.hidden {
			names = append(names, f.name)
		}
		byName[f.name] = f
		for j := range f.aliases {
			byName[f.aliases[j].Name] = f
			alias[f.aliases[j].Name] = &f.aliases[j]
		}
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errf(k, "%s: a key must be a plain name, got %s", path, describe(k))
			continue
		}
		if k.Tag == "!!merge" {
			continue // reported once, by mergeKeys
		}
		name := k.Value
		if f, ok := byName[k.Value]; ok {
			name = f.name
		}
		kp := join(path, name)
		if prev, dup := seen[name]; dup {
			if prev.Value == k.Value {
				d.errf(k, "%s: repeated key (first at line %d)", kp, prev.Line)
			} else {
				d.errf(k, "%s: %q and %q (line %d) are two spellings of %s; write it once, as %s", join(path, k.Value), k.Value, prev.Value, prev.Line, name, name)
			}
			continue
		}
		seen[name] = k
		f, ok := byName[k.Value]
		switch {
		case !ok && d.keyArgument(join(path, k.Value), k, v):
			continue
		case !ok:
			d.errf(k, "%s: unknown key %q %s", where(path), k.Value, allowedFor(k.Value, names))
			continue
		case f.reject != "":
			d.errf(k, "%s: %s", kp, f.reject)
			continue
		}
		if a := alias[k.Value]; a != nil && a.Deprecated != "" {
			d.notes = append(d.notes, &Error{Pos: d.at(k), Msg: fmt.Sprintf("note: %s: %s; read as %s, the spelling to write", join(path, k.Value), a.Deprecated, name)})
		}
		d.pos[kp] = d.at(v)
		before := len(d.errs)
		f.decode(kp, v)
		if len(d.errs) > before {
			d.broken[kp] = true
		}
	}
	return seen
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// where names the mapping an unknown key was found in.
func where(path string) string {
	if path == "" {
		return "spec"
	}
	return path
}

// describe names a node's YAML type for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "the alias *" + n.Value + ", which lossgen does not follow: write the value out"
	}
	switch n.Tag {
	case "!!null":
		return "null"
	case "!!bool":
		return "boolean " + n.Value
	case "!!int", "!!float":
		return "number " + clip(n.Value)
	case "!!str", "":
	default: // !!binary, !!timestamp, a custom tag: not a plain string
		return "a value tagged " + n.Tag + " (" + strconv.Quote(clip(n.Value)) + ")"
	}
	if _, err := strconv.ParseFloat(n.Value, 64); errors.Is(err, strconv.ErrRange) {
		return "number " + clip(n.Value) + ", beyond float64's range" // YAML reads it as a string
	}
	return "string " + strconv.Quote(clip(n.Value))
}

// clip shortens a value quoted in a message to its first 60 bytes.
func clip(v string) string {
	if len(v) <= 60 {
		return v
	}
	cut := 60
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", v[:cut], len(v))
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func (d *decoder) str(path string, n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		d.errf(n, "%s: want a string, got %s", path, describe(n))
		return "", false
	}
	return n.Value, true
}

// enum decodes a string that must be one of vals.
func (d *decoder) enum(path string, n *yaml.Node, vals ...string) (string, bool) {
	return d.enumAliased(path, n, vals, nil)
}

// enumAliased decodes a string that must be one of vals or of their aliases, which read as
// the value they stand for (with a note when the alias is deprecated).
func (d *decoder) enumAliased(path string, n *yaml.Node, vals []string, aliases []Alias) (string, bool) {
	s, ok := d.str(path, n)
	if !ok {
		return "", false
	}
	if slices.Contains(vals, s) {
		return s, true
	}
	for _, a := range aliases {
		if a.Name == s {
			if a.Deprecated != "" {
				d.notes = append(d.notes, &Error{Pos: d.at(n), Msg: fmt.Sprintf("note: %s: %q: %s; read as %q, the spelling to write", path, s, a.Deprecated, a.For)})
			}
			return a.For, true
		}
	}
	var names []string
	for _, a := range aliases {
		names = append(names, a.Name)
	}
	if m := foldMatch(s, vals, aliases); m != "" { // GSPOLoss: gspo, not the nearer GRPOLoss
		d.errf(n, "%s: unknown value %q (did you mean %s? %s", path, s, quote(m), strings.TrimPrefix(allowed(vals), "("))
		return "", false
	}
	if closest(s, vals) == "" && closest(s, names) != "" { // a typo of an alias: suggest it
		d.errf(n, "%s: unknown value %q (did you mean %s? %s", path, s, quote(closest(s, names)), strings.TrimPrefix(allowed(vals), "("))
		return "", false
	}
	d.errf(n, "%s: unknown value %q %s", path, s, allowedFor(s, vals))
	return "", false
}

func (d *decoder) float(path string, n *yaml.Node) (float64, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
		// YAML reads a number too large for float64 (1e400) as a string: say what it is.
		if _, err := strconv.ParseFloat(n.Value, 64); n.Kind == yaml.ScalarNode && errors.Is(err, strconv.ErrRange) {
			d.errf(n, "%s: %s is beyond the float64 range", path, n.Value)
			return 0, false
		}
		d.errf(n, "%s: want a number, got %s", path, describe(n))
		return 0, false
	}
	var v float64
	if err := n.Decode(&v); err != nil {
		d.errf(n, "%s: want a number, got %q", path, n.Value)
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		d.errf(n, "%s: want a finite number, got %s", path, n.Value)
		return 0, false
	}
	return v, true
}

func fmtNum(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func (d *decoder) int(path string, n *yaml.Node) (int, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" && allDigits(strings.TrimPrefix(n.Value, "-")) {
		d.errf(n, "%s: integer %s out of range (a spec's integers lie within ±%d)", path, n.Value, math.MaxInt32)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.errf(n, "%s: want an integer, got %s", path, describe(n))
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil || v > math.MaxInt32 || v < math.MinInt32 {
		d.errf(n, "%s: integer %s out of range (a spec's integers lie within ±%d)", path, n.Value, math.MaxInt32)
		return 0, false
	}
	return int(v), true
}

// allDigits reports whether s is a nonempty run of decimal digits (an integer literal YAML
// tags as a float because it exceeds int64).
func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func (d *decoder) bool(path string, n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		d.errf(n, "%s: want true or false, got %s", path, describe(n))
		return false, false
	}
	var v bool
	_ = n.Decode(&v)
	return v, true
}

// list decodes a sequence, calling item for each element.
func (d *decoder) list(path string, n *yaml.Node, item func(path string, v *yaml.Node)) bool {
	if n.Kind != yaml.SequenceNode {
		d.errf(n, "%s: want a list, got %s", path, describe(n))
		return false
	}
	for i, v := range n.Content {
		item(fmt.Sprintf("%s[%d]", path, i), v)
	}
	return true
}
