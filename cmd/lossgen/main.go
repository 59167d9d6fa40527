// Command lossgen generates fused Go kernels for TorchRL losses from a YAML spec.
//
//	lossgen generate -o DIR [-golden DIR] SPEC    write the Go package for SPEC into DIR
//	lossgen check [-o DIR] SPEC...                validate specs (and, with -o, that DIR is fresh)
//	lossgen golden [-update] SPEC...              compare (or rewrite) golden/<package>/ cases
//	lossgen explain [-passes] SPEC                print the IR and the fusion plan (-passes: the IR passes too)
//	lossgen eval -spec SPEC -in DATA.npz [-out OUT.npz] [-backend ref|go|avx2|ptx|all]
//	                                              run the kernel on recorded data
//	lossgen bench [-sizes N=16,T=256;N=4096,T=4096] SPEC
//	lossgen version                               print the generator, module and VCS versions
//	lossgen init [LOSS] [-estimator E] [-transform T,...] [-dims N=16,T=256] [-o FILE]
//	                                              print a commented starter spec
//	lossgen reference [-o FILE [-force]]          print the spec reference (docs/spec-reference.md)
//	lossgen schema [-o FILE [-force]]             print the spec's JSON Schema (docs/spec.schema.json)
//
// Use it from go generate:
//
//	//go:generate go run github.com/lossgen/lossgen/cmd/lossgen golden -update -dir testdata/golden ppo.yaml
//	//go:generate go run github.com/lossgen/lossgen/cmd/lossgen generate -o ppokernel -golden testdata/golden/ppokernel ppo.yaml
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/cases"
	"github.com/lossgen/lossgen/gen/dirtx"
	"github.com/lossgen/lossgen/gen/plan"
	goldenw "github.com/lossgen/lossgen/golden"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/spec"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage: lossgen <command> [flags] [args]

commands:
  generate -o DIR [-golden DIR] [-v] SPEC
                                       write the Go package for SPEC into DIR (-v: list what changed)
  check [-o DIR [-golden DIR]] SPEC... validate specs; with -o, also check that DIR is up to date
  golden [-update] [-dir D] [-data D] SPEC...
                                       compare golden/<package>/ cases with the reference
                                       interpreter (-update rewrites them)
  explain [-passes] SPEC               print inputs, outputs, the IR and the fusion plan; -passes
                                       also the IR pass list with the graph after each pass
  eval -spec SPEC [-dims N=16,T=256] -in DATA.npz [-out OUT.npz] [-backend ref|go|avx2|ptx|all] [-grad] [-keep]
                                       run the kernel on .npz data, compared with the interpreter
  bench [-sizes N=16,T=256;...] SPEC  benchmark the Go and AVX2 kernels at several sizes against
                                       a memory-copy probe
  version                              print the generator version, the module version and the VCS revision
  init [LOSS] [-estimator E] [-transform T,...] [-dims N=16,T=256] [-package NAME] [-o FILE [-force]]
                                       print a commented starter spec, every parameter at TorchRL's default
  reference [-o FILE [-force]]         print the spec reference (docs/spec-reference.md)
  schema [-o FILE [-force]]            print the spec's JSON Schema for editors (docs/spec.schema.json)

Run 'lossgen <command> -h' for a command's flags.
`

// run is the whole program: it returns the exit status (0 ok, 1 failure, 2 bad usage).
// A panic is a bug of lossgen's: the pipeline reports its own as errors at the spec, and run
// catches any other, so no input ever shows a Go stack trace.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "lossgen: internal error: %v (please report)\n", p)
			code = 1
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	out := &outWriter{w: stdout}
	stdout = out
	if (cmd == "help" || cmd == "-h" || cmd == "-help" || cmd == "--help") && len(rest) == 1 && rest[0] != "help" {
		// lossgen help generate: generate's flags, on stdout as lossgen help's own text
		// (-h writes them to stderr, as Go's flag package does).
		cmd, rest, stderr = rest[0], []string{"-h"}, stdout
	}
	var err error
	switch cmd {
	case "generate", "gen":
		err = cmdGenerate(rest, stdout, stderr)
	case "check":
		err = cmdCheck(rest, stdout, stderr)
	case "golden":
		err = cmdGolden(rest, stdout, stderr)
	case "explain":
		err = cmdExplain(rest, stdout, stderr)
	case "eval":
		err = cmdEval(rest, stdout, stderr)
	case "bench":
		err = cmdBench(rest, stdout, stderr)
	case "init":
		err = cmdInit(rest, stdout, stderr)
	case "reference":
		err = cmdReference(rest, stdout, stderr)
	case "schema":
		err = cmdSchema(rest, stdout, stderr)
	case "version", "--version", "-version":
		switch {
		case len(rest) == 1 && (rest[0] == "-h" || rest[0] == "-help" || rest[0] == "--help"):
			fmt.Fprintf(stdout, "usage: lossgen version\n")
		case len(rest) > 0:
			fmt.Fprintf(stderr, "usage: lossgen version\n")
			return 2
		default:
			fmt.Fprint(stdout, versionText(debug.ReadBuildInfo()))
		}
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "lossgen: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if out.err != nil && (err == nil || errors.Is(err, errHelp)) {
		err = fmt.Errorf("writing the output: %w", out.err) // explain > /dev/full lost it all
	}
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	report(stderr, err)
	return 1
}

// outWriter is a command's standard output that remembers its first write error, so that
// output lost to a full disk fails the command instead of exiting 0.
type outWriter struct {
	w   io.Writer
	err error
}

func (o *outWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.err = err
	}
	return n, err
}

// badUsage says what is wrong with a command line, prints the command's usage, and returns
// errUsage (exit status 2).
func badUsage(fs *flag.FlagSet, stderr io.Writer, format string, args ...any) error {
	fmt.Fprintf(stderr, "lossgen %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return errUsage
}

// errUsage marks an error already explained by a usage message.
var errUsage = errors.New("usage")

// errHelp is a help request that printed the usage: exit 0, as `lossgen -h` does.
var errHelp = errors.New("help")

// parse parses args with fs, then refuses a flag of fs written after the arguments
// (`check spec.yaml -o x`): Go's flag package stops at the first argument, so it would be
// read as a file.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	for _, a := range fs.Args() {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && fs.Lookup(name) != nil {
			return badUsage(fs, stderr, "flag %s after the arguments: flags go first", a)
		}
	}
	return nil
}

// parseErr maps a flag-parsing error (already printed with the usage) to errHelp for -h and
// to errUsage otherwise.
func parseErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	return errUsage
}

// report prints an error: spec diagnostics and internal errors as they are (FILE:LINE:COL:
// msg, one per line), anything else prefixed with "lossgen: ".
func report(w io.Writer, err error) {
	var list spec.ErrorList
	var one *spec.Error
	var internal *gen.InternalError
	switch {
	case errors.As(err, &list):
		fmt.Fprintln(w, list.Error())
	case errors.As(err, &one):
		fmt.Fprintln(w, one.Error())
	case errors.As(err, &internal):
		fmt.Fprintln(w, internal.Error())
	default:
		fmt.Fprintln(w, "lossgen: "+err.Error())
	}
}

// flags makes a command's flag set that prints its usage on stderr.
func flags(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: lossgen %s %s\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// warn prints a parsed spec's notes (the canonical spelling of each deprecated TorchRL
// spelling it used) and warnings, by position.
func warn(w io.Writer, s *spec.Spec) {
	for _, x := range s.Diagnostics() {
		fmt.Fprintln(w, x.Error())
	}
}

// generate is gen.Generate; tests replace it to force an internal error.
var generate = gen.Generate

func cmdGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flags("generate", "-o DIR [-golden DIR] [-v] SPEC", stderr)
	out := fs.String("o", "", "output directory of the generated package (required)")
	goldenDir := fs.String("golden", "", "directory of the package's golden cases, loaded by the generated test")
	verbose := fs.Bool("v", false, "list the files written (created or changed) and those removed")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *out == "" {
		return badUsage(fs, stderr, "-o DIR is required")
	}
	if fs.NArg() != 1 {
		return badUsage(fs, stderr, "want one SPEC, got %d", fs.NArg())
	}
	if fi, err := os.Stat(*out); err == nil && !fi.IsDir() {
		return badUsage(fs, stderr, "-o %s is a file; give the package's directory", *out)
	} else if fi, lerr := os.Lstat(*out); err != nil && lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		return badUsage(fs, stderr, "-o %s is a symbolic link to nothing; give the package's directory", *out)
	}
	if fi, err := os.Stat(*goldenDir); *goldenDir != "" && err == nil && !fi.IsDir() {
		return badUsage(fs, stderr, "-golden %s is a file; give the directory of the package's golden cases", *goldenDir)
	}
	c, files, err := generate(fs.Arg(0), gen.Options{OutDir: *out, GoldenDir: *goldenDir, Progress: progress(stderr, fs.Arg(0))})
	if err != nil {
		return err
	}
	warn(stderr, c.Spec)
	if *goldenDir != "" {
		warnGolden(stderr, *goldenDir, c.Spec.Package)
	}
	ctx, done := interruptible()
	res, err := write(ctx, *out, files)
	err = afterWrite(*out, err, done())
	repaired(stderr, res)
	if err != nil {
		return err
	}
	if *verbose {
		for _, name := range res.Written {
			fmt.Fprintln(stdout, filepath.Join(*out, name))
		}
		for _, name := range res.Removed {
			fmt.Fprintln(stdout, "removed "+filepath.Join(*out, name))
		}
		if n := len(files) - len(res.Written); n > 0 {
			fmt.Fprintf(stdout, "%d file(s) unchanged\n", n)
		}
	}
	return nil
}

// warnGolden warns when -golden dir is not where golden -update -dir D writes package pkg's
// cases, D/<package>: named otherwise, it likely holds another package's cases, which the
// generated test would fail on. A directory not there yet is a warning too, not an error:
// the README's go:generate lines may run in either order.
func warnGolden(w io.Writer, dir, pkg string) {
	parent, named := filepath.Dir(filepath.Clean(dir)), filepath.Base(filepath.Clean(dir)) == pkg
	want := filepath.Join(parent, pkg)
	_, err := os.Stat(dir)
	switch {
	case err == nil && !named:
		fmt.Fprintf(w, "lossgen: warning: -golden %s is not named after the spec's package %s: lossgen golden -update -dir %s writes %s; are these %s's cases?\n",
			dir, pkg, parent, want, pkg)
	case err != nil && !named:
		fmt.Fprintf(w, "lossgen: warning: -golden %s does not exist: lossgen golden -update -dir %s writes %s (the spec's package is %s); pass -golden %s\n",
			dir, parent, want, pkg, want)
	case err != nil:
		fmt.Fprintf(w, "lossgen: warning: -golden %s does not exist (yet): the package's test needs it; lossgen golden -update writes it\n", dir)
	}
}

// write is gen.WriteContext; tests replace it to interrupt a write.
var write = gen.WriteContext

// interruptible returns a context that SIGINT and SIGTERM cancel instead of ending the
// process, for a directory write (undone on cancellation, or completed if past its commit),
// and done, which ends the handling and returns the signal that arrived before it, if any.
// A signal can arrive after the write's last check of the context: done still reports it,
// so that the command does not exit 0 after an interrupt.
func interruptible() (ctx context.Context, done func() os.Signal) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(context.Background())
	var got os.Signal
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case got = <-ch:
			cancel(fmt.Errorf("%v signal received", got))
		case <-quit:
		}
	}()
	return ctx, func() os.Signal {
		signal.Stop(ch) // no delivery to ch after this
		close(quit)
		<-exited // got is settled
		cancel(nil)
		if got != nil {
			return got
		}
		select {
		case sig := <-ch: // delivered while the goroutine was quitting
			return sig
		default:
			return nil
		}
	}
}

// afterWrite is the error of a write that ended as err while sig (nil: none) arrived: a
// write that finished before it could stop still fails the command, saying so.
func afterWrite(dir string, err error, sig os.Signal) error {
	if err != nil || sig == nil {
		return err
	}
	return fmt.Errorf("interrupted (%v signal received) after the write had finished: %s holds the new files", sig, dir)
}

// repaired reports on stderr what a write did to resolve one that was cut short.
func repaired(stderr io.Writer, res dirtx.Result) {
	for _, line := range res.Repaired {
		fmt.Fprintln(stderr, "lossgen: "+line)
	}
}

func cmdCheck(args []string, stdout, stderr io.Writer) error {
	fs := flags("check", "[-o DIR [-golden DIR]] SPEC...", stderr)
	out := fs.String("o", "", "also check that this directory holds the package generated from the (single) spec")
	goldenDir := fs.String("golden", "", "the -golden directory the package was generated with (also checked to be in the current golden format)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return badUsage(fs, stderr, "want at least one SPEC")
	}
	if *out != "" && fs.NArg() != 1 {
		return badUsage(fs, stderr, "-o checks the package of one SPEC, got %d", fs.NArg())
	}
	failed := 0
	for _, path := range fs.Args() {
		c, files, err := generate(path, gen.Options{OutDir: or(*out, "."), GoldenDir: *goldenDir, Progress: progress(stderr, path)})
		if err != nil {
			report(stderr, err)
			failed++
			continue
		}
		warn(stderr, c.Spec)
		if *goldenDir != "" {
			if st, err := os.Stat(*goldenDir); err != nil || !st.IsDir() {
				// generate only warns (its go:generate line may run before golden's); check
				// vets a package whose test would fail for want of its cases.
				parent := filepath.Dir(filepath.Clean(*goldenDir))
				fmt.Fprintf(stderr, "%s: -golden %s is not a directory of golden cases: the package's test needs them; lossgen golden -update -dir %s %s writes them to %s\n",
					path, *goldenDir, parent, path, filepath.Join(parent, c.Spec.Package))
				failed++
				continue
			}
			if foreign := cases.Foreign(*goldenDir, c.Graph); foreign != "" {
				fmt.Fprintf(stderr, "%s: %s; lossgen golden -update -dir %s %s writes this spec's cases\n", path, foreign, filepath.Dir(*goldenDir), path)
				failed++
				continue
			}
			stale, err := goldenw.StaleFormat(*goldenDir)
			if err != nil {
				return err
			}
			for _, line := range stale {
				fmt.Fprintln(stderr, line)
			}
			if len(stale) > 0 {
				failed++
				continue
			}
		}
		if *out != "" {
			diffs, err := gen.Diff(*out, files)
			if err != nil {
				return err
			}
			for _, d := range diffs {
				fmt.Fprintln(stderr, d)
			}
			if len(diffs) > 0 {
				if _, err := os.Stat(filepath.Join(*out, "ptxsim_test.go")); *goldenDir == "" && err == nil {
					// Only a package generated with -golden has the PTX test: without the
					// flag, check compares with a package that has none (and regenerating
					// without it would drop the golden test).
					fmt.Fprintf(stderr, "%s: %s was generated with -golden: give check the same -golden DIR\n", path, *out)
				} else if len(diffs) == 1 && dirtx.Pending(*out) {
					// The files are what lossgen generates; a killed generate left its journal.
					fmt.Fprintf(stderr, "%s: %s has every file as lossgen generates it, and the journal of an interrupted write; run generate again to clear it: %s\n", path, *out, generateCommand(*out, *goldenDir, path))
				} else {
					fmt.Fprintf(stderr, "%s: %s is not what lossgen generates now; regenerate it: %s\n", path, *out, generateCommand(*out, *goldenDir, path))
				}
				failed++
				continue
			}
		}
		passes := fmt.Sprintf("%d passes", len(c.Plan.Passes))
		if len(c.Plan.Passes) == 1 {
			passes = "1 pass"
		}
		fmt.Fprintf(stdout, "%s: ok: package %s, %d inputs, %d outputs, %s\n",
			path, c.Spec.Package, len(c.Graph.Inputs), len(c.Graph.Outputs), passes)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d specs failed", failed, fs.NArg())
	}
	return nil
}

// generateCommand is the lossgen command line that writes package dir from spec.
func generateCommand(dir, goldenDir, spec string) string {
	cmd := "lossgen generate -o " + dir
	if goldenDir != "" {
		cmd += " -golden " + goldenDir
	}
	return cmd + " " + spec
}

// progress returns the gen.Options.Progress of a command working on spec: one line on
// stderr per step that may take over a second, so that a slow step is never silent.
func progress(stderr io.Writer, spec string) func(string) {
	return func(step string) { fmt.Fprintf(stderr, "lossgen: %s: %s...\n", spec, step) }
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// maxGoldenElements bounds the batch of golden cases (2^26 elements: a few GiB for a case).
const maxGoldenElements = 1 << 26

func cmdGolden(args []string, stdout, stderr io.Writer) error {
	fs := flags("golden", "[-update] [-dir DIR] [-data DIR] SPEC...", stderr)
	update := fs.Bool("update", false, "rewrite the golden cases instead of comparing them")
	root := fs.String("dir", "golden", "root of the golden case directories (cases go to DIR/<package>)")
	data := fs.String("data", "golden/data", "directory of real data (.npz) to make real_* cases from")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return badUsage(fs, stderr, "want at least one SPEC")
	}
	if *root == "" {
		return badUsage(fs, stderr, "-dir is empty: give the root of the golden case directories")
	}
	dataSet := false
	fs.Visit(func(f *flag.Flag) { dataSet = dataSet || f.Name == "data" })
	if st, err := os.Stat(*data); dataSet && (err != nil || !st.IsDir()) {
		return fmt.Errorf("-data %s: not a directory of .npz data", *data)
	}
	// Why a data file made no case is a note: it follows the spec's result line, or the
	// headlines of a failed comparison, never comes ahead of them.
	var heads, details, notes, missing []string
	for _, path := range fs.Args() {
		c, err := gen.Compile(path)
		if err != nil {
			return err
		}
		dir := filepath.Join(*root, c.Spec.Package)
		if filepath.Clean(dir) == filepath.Clean(*data) {
			return fmt.Errorf("%s: the golden cases of package %s would go to %s, the real-data directory (-data); rename the package or choose another -dir", path, c.Spec.Package, dir)
		}
		if n := c.Graph.Batch.Numel(); n > maxGoldenElements {
			return fmt.Errorf("%s: a batch of %d elements is too large for golden cases (at most %d: each case holds every input and output in float64, here about %d GiB); golden cases are regression data, so check a copy of the spec with smaller dims", path, n, maxGoldenElements, n*8*(len(c.Graph.Inputs)+len(c.Graph.Outputs))>>30)
		}
		cs, skips, err := cases.BuildData(c.Graph, c.Spec.Package, *data)
		if err != nil {
			return err
		}
		var skipped []string
		for _, sk := range skips {
			skipped = append(skipped, fmt.Sprintf("%s: no case from %s: %s", path, sk.File, sk.Why))
		}
		slow := c.Graph.Batch.Numel() >= slowGolden
		for i := range cs {
			if slow {
				progress(stderr, path)(fmt.Sprintf("computing golden case %s (%d of %d) with the interpreter", cs[i].Name, i+1, len(cs)))
			}
			if err := cases.Want(c.Reference(), &cs[i]); err != nil {
				return err
			}
			cs[i].Compact() // what is stored: a large batch's full outputs are not kept for every case
		}
		names := caseNames(cs)
		foreign := cases.Foreign(dir, c.Graph)
		if *update {
			if foreign != "" && !dirtx.Pending(dir) {
				fmt.Fprintf(stderr, "lossgen: warning: %s; they are replaced (if another spec of this module has package: %s, give one of them its own package name: each golden -update replaces the other's cases)\n", foreign, c.Spec.Package)
			}
			ctx, done := interruptible()
			res, err := cases.UpdateContext(ctx, dir, cs)
			err = afterWrite(dir, err, done())
			repaired(stderr, res)
			if err != nil {
				return err
			}
			switch {
			case len(res.Written) == 0 && len(res.Removed) == 0:
				fmt.Fprintf(stdout, "%s: %d cases in %s unchanged: %s\n", path, len(cs), dir, strings.Join(names, ", "))
			default:
				fmt.Fprintf(stdout, "%s: wrote %d cases to %s (%d file(s) written, %d removed): %s\n", path, len(cs), dir, len(res.Written), len(res.Removed), strings.Join(names, ", "))
			}
			printLines(stderr, skipped)
			continue
		}
		if foreign != "" {
			heads = append(heads, path+": "+foreign)
			continue
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			why := "does not exist"
			if err == nil || !os.IsNotExist(err) {
				why = "is not a directory"
			}
			missing = append(missing, fmt.Sprintf("%s: no golden cases: %s %s (cases go to DIR/<package>, and -dir is %s): give -dir the directory that holds %s/, or write them with %s", path, dir, why, *root, c.Spec.Package, goldenUpdateCommand(args)))
			continue
		}
		diffs, err := cases.Check(dir, cs)
		if err != nil {
			return err
		}
		if len(diffs) == 0 {
			fmt.Fprintf(stdout, "%s: %d cases in %s match the interpreter: %s\n", path, len(cs), dir, strings.Join(names, ", "))
			printLines(stderr, skipped)
		} else {
			notes = append(notes, skipped...)
		}
		heads = append(heads, cases.Headlines(dir, diffs)...)
		for _, d := range diffs {
			details = append(details, d.Text)
		}
	}
	printLines(stderr, missing)
	if len(heads) > 0 {
		// One line per output first, and the command; every difference after them.
		for _, h := range heads {
			fmt.Fprintln(stderr, h)
		}
		fmt.Fprintf(stderr, "if the change is intended, rewrite the cases: %s\n", goldenUpdateCommand(args))
		printLines(stderr, notes)
		fmt.Fprintln(stderr, "details:")
		for _, d := range details {
			fmt.Fprintln(stderr, "  "+d)
		}
		return fmt.Errorf("golden cases differ from the interpreter")
	}
	if len(missing) > 0 {
		return fmt.Errorf("no golden cases for %d of the specs", len(missing))
	}
	return nil
}

// printLines writes each line to w.
func printLines(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// slowGolden is the batch size from which computing a spec's golden cases takes over a
// second or two (at [256, 4096], 7 s; at [4096, 4096], 3 minutes), so that lossgen golden
// says, case by case, what it is doing.
var slowGolden = 1 << 18 // a var: tests lower it

func caseNames(cs []golden.Case) []string {
	names := make([]string, len(cs))
	for i, x := range cs {
		names[i] = x.Name
	}
	return names
}

// goldenUpdateCommand is the lossgen golden command line args, with -update.
func goldenUpdateCommand(args []string) string {
	return "lossgen golden -update " + shellJoin(args)
}

// shellJoin joins args into a command line, quoting those a shell would split.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

func cmdExplain(args []string, stdout, stderr io.Writer) error {
	fs := flags("explain", "[-passes] SPEC", stderr)
	showPasses := fs.Bool("passes", false, "print the IR passes and the graph after each, before the result")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return badUsage(fs, stderr, "want one SPEC, got %d", fs.NArg())
	}
	c, err := gen.Compile(fs.Arg(0))
	if err != nil {
		return err
	}
	warn(stderr, c.Spec)
	if *showPasses {
		if err := explainPasses(stdout, c); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	g := c.Graph
	fmt.Fprintf(stdout, "package %s (%s), batch %s\n\ninputs:\n", c.Spec.Package, g.DType, g.Batch)
	for _, in := range g.Inputs {
		fmt.Fprintf(stdout, "  %-18s %-8s %s: %s\n", in.Name, in.Kind, in.Shape, in.Doc)
	}
	fmt.Fprintln(stdout, "outputs:")
	for _, o := range g.Outputs {
		fmt.Fprintf(stdout, "  %-20s %-12s v%d  (%s)\n", o.Name, o.Node.Shape, o.Node.ID, o.Source)
	}
	fmt.Fprintf(stdout, "\nIR (%d nodes):\n", len(g.Nodes))
	for _, n := range g.Nodes {
		fmt.Fprintf(stdout, "  %s\n", n)
	}
	n := g.Batch.Numel()
	fmt.Fprintf(stdout, "\nfusion plan (%d passes, %s; elementwise chains are recomputed in each pass that needs them):\n%s",
		len(c.Plan.Passes), streamed(c.Plan, n), c.Plan)
	if c.Backward != nil {
		fmt.Fprintf(stdout, "\nForwardBackward's fusion plan (%d passes, %s):\n%s", len(c.Backward.Passes), streamed(c.Backward, n), c.Backward)
	}
	return nil
}

// streamed says how many bytes a run of p moves, in all and per batch element.
func streamed(p *plan.Plan, elements int) string {
	b := p.Bytes()
	return fmt.Sprintf("%s streamed, %.3g B per batch element", bytesString(b), float64(b)/float64(max(1, elements)))
}
