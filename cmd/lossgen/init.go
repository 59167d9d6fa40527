package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/specdoc"
	"github.com/lossgen/lossgen/spec"
)

// cmdInit prints (or writes to -o FILE) a commented starter spec for a loss, an estimator
// and transforms, every parameter at TorchRL's default.
func cmdInit(args []string, stdout, stderr io.Writer) error {
	fs := flags("init", "[LOSS] [-estimator E] [-transform T,...] [-dims N=16,T=256] [-package NAME] [-o FILE [-force]]", stderr)
	reg := lower.Registry()
	est := fs.String("estimator", "", "the value estimator feeding the loss, or standalone ("+strings.Join(reg.Types(spec.Estimator), ", ")+")")
	tr := fs.String("transform", "", "transforms to run first, comma-separated, in order ("+strings.Join(reg.Types(spec.Transform), ", ")+")")
	dims := fs.String("dims", "", "the batch dims with their sizes, outermost first (default N=16,T=256 with an estimator, else B=256); a dim a stage adds (A, K, Q) takes its size from here and keeps its place")
	pkg := fs.String("package", "", "the package name (default: the stage types joined by '_')")
	schema := fs.String("schema", specdoc.SchemaID, "the JSON Schema the yaml-language-server modeline names (a URL, or a path relative to the spec)")
	out := fs.String("o", "", "write the spec to FILE instead of stdout (an existing FILE is an error without -force)")
	force := fs.Bool("force", false, "with -o, replace an existing FILE")
	// LOSS may come before the flags (lossgen init clip_ppo -estimator gae) or after them.
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	var loss string
	if fs.NArg() > 0 {
		loss = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return parseErr(err)
		}
		if fs.NArg() > 0 {
			return badUsage(fs, stderr, "want at most one LOSS, got %q and %q", loss, fs.Arg(0))
		}
	}
	if *force && *out == "" {
		return badUsage(fs, stderr, "-force needs -o FILE")
	}
	o := specdoc.StarterOptions{Loss: loss, Estimator: *est, Package: *pkg, Schema: *schema}
	if *tr != "" {
		o.Transforms = strings.Split(*tr, ",")
		for i, t := range o.Transforms {
			if t == "" {
				return badUsage(fs, stderr, "-transform %q: an empty name in the list", *tr)
			}
			if slices.Contains(o.Transforms[:i], t) {
				return badUsage(fs, stderr, "-transform: %s given twice", t)
			}
		}
	}
	if *dims != "" {
		d, err := parseDimSizes(*dims)
		if err != nil {
			return badUsage(fs, stderr, "-dims: %v", err)
		}
		o.Dims = d
	}
	if loss == "" && *est == "" && *tr == "" {
		return badUsage(fs, stderr, "name a LOSS, -estimator or -transform")
	}
	text, err := specdoc.Starter(o)
	if us := (*specdoc.UnknownStage)(nil); errors.As(err, &us) { // a mistyped name: bad usage
		return badUsage(fs, stderr, "%s: %v", map[spec.Kind]string{spec.Loss: "LOSS", spec.Estimator: "-estimator", spec.Transform: "-transform"}[us.Kind], err)
	}
	if flag, msg, ok := optionError(err); ok {
		return badUsage(fs, stderr, "%s: %s", flag, msg)
	}
	if err != nil {
		return err
	}
	if s, err := spec.Parse("starter", text, reg); *est != "" && err == nil && len(s.Batch) >= 3 {
		// init -estimator gae -dims N=4,T=32,A=5 meant A for actions, often: say where the
		// estimator runs (the spec's distribution and action_dim are what make A an event dim).
		fmt.Fprintf(stderr, "lossgen init: note: batch [%s]: the estimator runs along the last dim, %s; for an action dim, set the loss's distribution and action_dim in the spec and take the dim out of batch\n", strings.Join(s.Batch, ", "), s.Batch[len(s.Batch)-1])
	}
	if *out == "" {
		_, err = stdout.Write(text)
		return err
	}
	return writeFile(*out, text, *force)
}

// optionError finds, among the starter spec's errors, one at the dims or the package (a
// dim name or size, a package name the spec rejects) and states it as the flag that gave
// it: the user never sees the starter's lines. ok is false for any other error.
func optionError(err error) (flag, msg string, ok bool) {
	var list spec.ErrorList
	if !errors.As(err, &list) {
		return "", "", false
	}
	for _, e := range list {
		if rest, found := strings.CutPrefix(e.Msg, "dims."); found {
			return "-dims", rest, true
		}
		if rest, found := strings.CutPrefix(e.Msg, "dims: "); found {
			return "-dims", rest, true
		}
		if rest, found := strings.CutPrefix(e.Msg, "batch: "); found {
			return "-dims", rest, true // the batch is the -dims given, in order
		}
		if rest, found := strings.CutPrefix(e.Msg, "package: "); found {
			return "-package", rest, true
		}
		if rest, found := strings.CutPrefix(e.Msg, "estimator.type: "); found {
			return "-estimator", rest, true // a loss that takes no such estimator
		}
	}
	return "", "", false
}
