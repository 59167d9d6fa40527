package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lossgen/lossgen/gen/specdoc"
	"github.com/lossgen/lossgen/spec"
)

// cmdInit prints (or writes to -o FILE) a commented starter spec for a loss, an estimator
// and transforms, every parameter at TorchRL's default.
func cmdInit(args []string, stdout, stderr io.Writer) error {
	fs := flags("init", "[LOSS] [-estimator E] [-transform T,...] [-dims N=16,T=256] [-package NAME] [-o FILE [-force]]", stderr)
	est := fs.String("estimator", "", "the value estimator feeding the loss, or standalone (gae, td0, td1, td_lambda, vtrace)")
	tr := fs.String("transform", "", "transforms to run first, comma-separated, in order (kl_reward, qvalue, ...)")
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
	}
	if *dims != "" {
		d, err := parseDims(*dims)
		if err != nil {
			return badUsage(fs, stderr, "-dims: %v", err)
		}
		o.Dims = d
	}
	if loss == "" && *est == "" && *tr == "" {
		return badUsage(fs, stderr, "name a LOSS, -estimator or -transform")
	}
	text, err := specdoc.Starter(o)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = stdout.Write(text)
		return err
	}
	return writeFile(*out, text, *force)
}

// parseDims reads -dims: NAME=SIZE pairs separated by commas.
func parseDims(s string) ([]spec.Dim, error) {
	var out []spec.Dim
	for _, part := range strings.Split(s, ",") {
		name, size, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(size)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("%q is not NAME=SIZE (e.g. N=16,T=256)", part)
		}
		out = append(out, spec.Dim{Name: name, Size: n})
	}
	return out, nil
}
