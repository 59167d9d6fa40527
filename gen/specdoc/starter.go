package specdoc

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/spec"
)

// StarterOptions chooses the stages and sizes of a starter spec.
type StarterOptions struct {
	Loss       string   // a loss type, or ""
	Estimator  string   // an estimator type, or ""
	Transforms []string // transform types, in the order they run
	// Dims are sizes by name: the batch dims, outermost first, and sizes for the dims the
	// stages add (A, K, Q), which keep their place in the layout. Nil: N=16, T=256 with an
	// estimator, else B=256.
	Dims    []spec.Dim
	Package string // the package name; "" joins the stage types
	Schema  string // the modeline's schema location; "" is SchemaID
}

// Starter is a commented starter spec for lossgen's own registry (lower.Registry): every
// parameter of the chosen stages at TorchRL's default (or, where a stage needs a value that
// has no default, the registry's example), each with its doc, the keys the kernel reads at
// their default data keys, and the schema modeline. It is parsed and lowered before it is
// returned, so a spec error (a combination TorchRL rejects, a bad -dims) is returned as the
// parser states it, positioned in "lossgen init".
func Starter(o StarterOptions) ([]byte, error) {
	reg := lower.Registry()
	st, err := starterStages(reg, o)
	if err != nil {
		return nil, err
	}
	draft := starterBody(o, st)
	var g *ir.Graph
	for {
		s, err := spec.Parse(starterFile, draft, reg)
		if err != nil {
			return nil, err
		}
		if g, _, err = lower.Lower(s); err != nil {
			return nil, err
		}
		// A parameter that does not apply in this configuration (low and high without a
		// tanh_normal policy) is warned about when written: it is left as a comment.
		var changed bool
		if draft, changed = commentOut(draft, s.Warnings); !changed {
			break
		}
	}
	read := map[string]string{} // logical key → shape and dtype of the input
	var order []string          // the keys read, in the graph's input order
	for _, in := range g.Inputs {
		if in.Key != "" {
			read[in.Key] = "[" + strings.Join(in.Shape.Names(), ", ") + "] " + in.Kind.String()
			order = append(order, in.Key)
		}
	}
	out := append(draft, starterKeys(reg, st, read, order)...)
	// The whole starter must parse and lower as written, without a warning: it is a template.
	s, err := spec.Parse(starterFile, out, reg)
	if err == nil {
		_, _, err = lower.Lower(s)
	}
	if err == nil && len(s.Warnings) > 0 {
		err = spec.ErrorList(s.Warnings)
	}
	if err != nil {
		return nil, fmt.Errorf("specdoc: the starter spec does not check (a registry example is wrong): %w\n%s", err, out)
	}
	return out, nil
}

// paramLine is a parameter's line of a starter: indent, name, value.
var paramLine = regexp.MustCompile(`^(\s*)([a-z_0-9]+): (.*)$`)

// commentOut turns the parameter lines that warnings point at into comments that say why,
// and reports whether it changed any.
func commentOut(src []byte, warns []*spec.Error) ([]byte, bool) {
	lines := strings.Split(string(src), "\n")
	changed := false
	for _, w := range warns {
		i := w.Pos.Line - 1
		m := paramLine.FindStringSubmatch(lines[max(i, 0)])
		if i < 0 || m == nil || m[1] == "" { // only a stage's parameters, which are indented
			continue
		}
		// "warning: loss.low: is ignored: it bounds …" → "is ignored: it bounds …"
		why := strings.TrimPrefix(w.Msg, "warning: ")
		if _, rest, ok := strings.Cut(why, m[2]+": "); ok {
			why = rest
		}
		lines[i] = m[1] + "# " + m[2] + ": " + m[3] + "  # " + why
		changed = true
	}
	return []byte(strings.Join(lines, "\n")), changed
}

// UnknownStage is Starter's error for a stage type the registry does not have.
type UnknownStage struct {
	Kind    spec.Kind
	Type    string
	Allowed []string // the kind's registered types, sorted
}

func (e *UnknownStage) Error() string {
	return fmt.Sprintf("no %s %q (allowed: %s)", e.Kind, e.Type, strings.Join(e.Allowed, ", "))
}

// starterFile names the starter in diagnostics.
const starterFile = "lossgen init"

// starterStages resolves the chosen stage types, in the order they run.
func starterStages(reg spec.Registry, o StarterOptions) ([]*spec.StageDef, error) {
	var out []*spec.StageDef
	add := func(k spec.Kind, t string) error {
		d := reg.Stage(k, t)
		if d == nil {
			return &UnknownStage{Kind: k, Type: t, Allowed: reg.Types(k)}
		}
		out = append(out, d)
		return nil
	}
	for _, t := range o.Transforms {
		if err := add(spec.Transform, t); err != nil {
			return nil, err
		}
	}
	if o.Estimator != "" {
		if err := add(spec.Estimator, o.Estimator); err != nil {
			return nil, err
		}
	}
	if o.Loss != "" {
		if err := add(spec.Loss, o.Loss); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no stage: name a loss, an estimator or a transform")
	}
	return out, nil
}

// starterBody is the starter without its keys.
func starterBody(o StarterOptions, stages []*spec.StageDef) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	schema := o.Schema
	if schema == "" {
		schema = SchemaID
	}
	var classes []string
	for _, d := range stages {
		classes = append(classes, d.Class)
	}
	p("# yaml-language-server: $schema=%s\n", schema)
	p("# A lossgen spec: %s. Written by lossgen init: every parameter is at TorchRL v0.11.0's\n", strings.Join(classes, " → "))
	p("# default unless its comment says otherwise; docs/spec-reference.md describes every field.\n")
	p("# Check it: lossgen check FILE\n")
	pkg := o.Package
	if pkg == "" {
		pkg = starterPackage(o)
	}
	comment(&b, "", fieldDoc("package"))
	p("package: %s\n", yamlString(pkg))
	comment(&b, "", fieldDoc("dtype")+" (float32 | float64)")
	p("dtype: float32\n")
	before, batch, after := starterDims(o, stages)
	comment(&b, "", LayoutDoc)
	p("dims:\n")
	for _, group := range [][]spec.Dim{before, batch, after} {
		for _, d := range group {
			p("  %s: %d\n", d.Name, d.Size)
		}
	}
	var bn []string
	for _, d := range batch {
		bn = append(bn, d.Name)
	}
	p("batch: [%s]\n", strings.Join(bn, ", "))
	sizes := map[string]int{}
	for _, group := range [][]spec.Dim{before, batch, after} {
		for _, d := range group {
			sizes[d.Name] = d.Size
		}
	}
	var transforms []*spec.StageDef
	for _, d := range stages {
		switch d.Kind {
		case spec.Transform:
			transforms = append(transforms, d)
		case spec.Estimator:
			p("estimator:\n")
			stageBody(&b, "  ", d, sizes, bn)
		case spec.Loss:
			p("loss:\n")
			stageBody(&b, "  ", d, sizes, bn)
		}
	}
	if len(transforms) > 0 {
		// Transforms run first; in YAML they may come anywhere.
		p("transforms:\n")
		for _, d := range transforms {
			fmt.Fprintf(&b, "  - type: %s  # %s's %s (%s)\n", d.Type, origin(d), d.Class, d.Source)
			stageParams(&b, "    ", d, sizes, bn)
		}
	}
	return b.Bytes()
}

// starterPackage joins the stage types: clip_ppo_gae.
func starterPackage(o StarterOptions) string {
	parts := []string{}
	if o.Loss != "" {
		parts = append(parts, o.Loss)
	}
	if o.Estimator != "" {
		parts = append(parts, o.Estimator)
	}
	return strings.Join(append(parts, o.Transforms...), "_")
}

// starterDims splits the dims into those before the batch, the batch, and those after: the
// stages' example dims, sized from o.Dims where it names them, and the rest of o.Dims as the
// batch.
func starterDims(o StarterOptions, stages []*spec.StageDef) (before, batch, after []spec.Dim) {
	given := o.Dims
	if given == nil {
		given = []spec.Dim{{Name: "B", Size: 256}}
		for _, d := range stages {
			if d.Kind == spec.Estimator {
				given = []spec.Dim{{Name: "N", Size: 16}, {Name: "T", Size: 256}}
			}
		}
	}
	size := map[string]int{}
	for _, d := range given {
		size[d.Name] = d.Size
	}
	seen := map[string]bool{}
	place := func(to *[]spec.Dim, ds []spec.Dim) {
		for _, d := range ds {
			if seen[d.Name] {
				continue
			}
			seen[d.Name] = true
			if n, ok := size[d.Name]; ok {
				d.Size = n
			}
			*to = append(*to, spec.Dim{Name: d.Name, Size: d.Size})
		}
	}
	for _, d := range stages {
		if d.Example != nil {
			place(&before, d.Example.Before)
			place(&after, d.Example.After)
		}
	}
	for _, d := range given {
		if !seen[d.Name] {
			seen[d.Name] = true
			batch = append(batch, d)
		}
	}
	return before, batch, after
}

func stageBody(b *bytes.Buffer, indent string, d *spec.StageDef, sizes map[string]int, batch []string) {
	fmt.Fprintf(b, "%stype: %s  # %s's %s (%s)\n", indent, d.Type, origin(d), d.Class, d.Source)
	stageParams(b, indent, d, sizes, batch)
}

// stageParams writes every parameter: its doc as a comment, then its value, or, for an
// optional parameter without a default, a commented-out line. sizes are the starter's dims,
// batch its batch dims' names.
func stageParams(b *bytes.Buffer, indent string, d *spec.StageDef, sizes map[string]int, batch []string) {
	for i := range d.Params {
		q := &d.Params[i]
		doc := q.Doc
		if v := valuesText(q); v != "" {
			doc += " (" + strings.ReplaceAll(v, "`", "") + ")"
		}
		v, ok := exampleParam(d, q.Name)
		switch {
		case d.Example != nil && d.Example.Sizes[q.Name] != "":
			v = sizes[d.Example.Sizes[q.Name]]
		case ok:
			v = fitExample(d, q, v, sizes, batch)
			if q.Default != nil && fmt.Sprint(v) != fmt.Sprint(q.Default) {
				doc += fmt.Sprintf(" [the example's value; TorchRL's default is %s]", yamlValue(q.Default))
			}
		case q.Default != nil:
			v = q.Default
		case q.Null != nil:
			v = nil
		default:
			comment(b, indent, q.Name+" ("+typeText(q.Type)+", optional): "+doc)
			continue
		}
		comment(b, indent, doc)
		fmt.Fprintf(b, "%s%s: %s\n", indent, q.Name, yamlValue(v))
	}
}

// starterKeys is the keys mapping: the keys the kernel reads from the data at their default
// data keys, each with its shape and doc, and the stages' other keys commented out.
func starterKeys(reg spec.Registry, stages []*spec.StageDef, read map[string]string, order []string) []byte {
	var b bytes.Buffer
	var names []string
	for _, d := range stages {
		for _, k := range d.Keys {
			if !slices.Contains(names, k.Name) {
				names = append(names, k.Name)
			}
		}
	}
	for _, name := range order { // read through a stage's shared pieces (DQN's TD target)
		if _, ok := reg.Key(name); ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	var rest []string
	for _, name := range names {
		k, _ := reg.Key(name)
		shape, ok := read[name]
		if ok && k.NextOf != "" {
			// A derived key (next_value) that the kernel reads stays unwritten, so that it
			// follows the key it derives from, but is listed with what it reads.
			of, _ := reg.Key(k.NextOf)
			comment(&b, "  ", shape+": "+k.Doc+"; read at (next, "+k.NextOf+"'s data key) unless mapped here:")
			comment(&b, "  ", name+": "+dataKeyText(append([]string{"next"}, of.Default...)))
			continue
		}
		if !ok || k.Default == nil || k.NextOf != "" {
			rest = append(rest, name)
			continue
		}
		comment(&b, "  ", shape+": "+k.Doc)
		fmt.Fprintf(&b, "  %s: %s\n", name, dataKeyText(k.Default))
	}
	for _, name := range rest {
		k, _ := reg.Key(name)
		v := name + " (" + KeyRole(k) + ")"
		switch {
		case k.NextOf != "":
			v = "[next, …] (follows " + k.NextOf + ")"
		case k.Default != nil:
			v = dataKeyText(k.Default)
		}
		comment(&b, "  ", name+": "+v+" — "+KeyShape(k)+" "+KeyDType(k)+": "+k.Doc)
	}
	var head bytes.Buffer
	comment(&head, "", fieldDoc("keys")+" Below: the keys this kernel reads, at TorchRL's default data keys; commented out, the others its stages may read or write.")
	if len(rest) == len(names) {
		head.WriteString("keys: {}\n") // only comments below: an empty mapping, not null
	} else {
		head.WriteString("keys:\n")
	}
	return append(head.Bytes(), b.Bytes()...)
}

// dataKeyText is a data key in flow style: a name, or a nested key as a list.
func dataKeyText(key []string) string {
	parts := make([]string, len(key))
	for i, k := range key {
		parts[i] = yamlString(k)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// yamlValue is a parameter value in YAML flow style.
func yamlValue(v any) string {
	switch x := v.(type) {
	case flowYAML:
		return string(x)
	case string:
		return yamlString(x)
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = yamlString(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return spec.FlowValue(v)
}

// yamlString is s as a YAML scalar that reads back as the string s: plain where it does,
// quoted where YAML would read another type (null, true, 1.5) or the text needs it.
func yamlString(s string) string {
	var back map[string]any
	if err := yaml.Unmarshal([]byte("v: "+s), &back); err == nil && back["v"] == any(s) {
		return s
	}
	return fmt.Sprintf("%q", s)
}

// fitExample fits a stage example's value of parameter q to the starter's dims: a dim the
// example names that the starter does not declare (mc_advantage's group_dim N, with -dims
// B=2,L=3) becomes the outermost batch dim; a support list whose length is not the atom
// dim's size is written as {vmin, vmax, n_atoms} over the example's range.
func fitExample(d *spec.StageDef, q *spec.ParamDef, v any, sizes map[string]int, batch []string) any {
	if name, isDim := v.(string); isDim && q.Type == spec.DimName && len(batch) > 0 {
		if _, declared := sizes[name]; !declared {
			return batch[0]
		}
	}
	if list, isList := v.([]float64); isList && q.LinspaceDim != "" && len(list) > 0 {
		atom, _ := exampleParam(d, q.LinspaceDim)
		if n, ok := sizes[fmt.Sprint(atom)]; ok && n != len(list) {
			return flowYAML(fmt.Sprintf("{vmin: %s, vmax: %s, n_atoms: %d}", spec.FlowValue(list[0]), spec.FlowValue(list[len(list)-1]), n))
		}
	}
	return v
}

// flowYAML is a value already in YAML flow style, which yamlValue writes as it is.
type flowYAML string

// exampleParam is the value a stage's example gives a parameter.
func exampleParam(d *spec.StageDef, name string) (any, bool) {
	if d.Example == nil {
		return nil, false
	}
	v, ok := d.Example.Params[name]
	return v, ok
}

// comment writes text as YAML comment lines at indent, wrapped at 100 columns.
func comment(b *bytes.Buffer, indent, text string) {
	line := indent + "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 100 && len(line) > len(indent)+1 {
			b.WriteString(line + "\n")
			line = indent + "#"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}

// fieldDoc is a top-level field's doc.
func fieldDoc(name string) string {
	for _, f := range Fields {
		if f.Name == name {
			return sentence(f.Doc)
		}
	}
	panic("specdoc: no field " + name)
}
