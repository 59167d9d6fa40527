package gen_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lossgen/lossgen/gen"
)

// fuzzFile names the fuzzed spec in errors: every error line must start with it.
const fuzzFile = "fuzz.yaml"

// Bounds that keep a fuzz execution cheap: longer inputs are skipped, specs whose largest
// input has more elements only compiled. Emit simulates the PTX to size the generated test,
// which takes seconds on a C51 [128, 51, 4] (the fuzz worker dies without a word when one
// input runs 10 s: "fuzzing process hung or terminated unexpectedly: exit status 2"); small
// seeds of every stage (testdata/fuzzseeds) keep Emit covered.
const (
	maxFuzzInput = 4 << 10
	maxFuzzEmit  = 4096
)

// positioned matches one line of a spec error: FILE:LINE:COL: message.
var positioned = regexp.MustCompile(`^` + regexp.QuoteMeta(fuzzFile) + `:[1-9][0-9]*:[1-9][0-9]*: \S`)

// FuzzSpec runs arbitrary spec files through the whole pipeline in memory: parse, validate,
// lower, the IR passes, plan, and for a valid spec Emit (every backend's files). No input may
// panic, or make the pipeline report an internal error (a panic it recovered); every error
// names the spec's file, line and column; a valid spec always emits, and Emit writes nothing.
// Seeds: every spec under spec/, and in testdata/fuzzseeds small valid variants covering
// every stage that lowers and its options, and specs with the stages that do not lower yet.
func FuzzSpec(f *testing.F) {
	for _, pattern := range []string{"../spec/examples/*.yaml", "../spec/testdata/bad/*.yaml", "testdata/fuzzseeds/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			f.Fatalf("no seeds at %s: %v", pattern, err)
		}
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	f.Fuzz(checkPipeline)
}

// checkPipeline is FuzzSpec's property, for one input.
func checkPipeline(t *testing.T, src []byte) {
	if len(src) > maxFuzzInput {
		return
	}
	c, err := gen.CompileSource(fuzzFile, src)
	if err != nil {
		checkSpecError(t, src, err)
		return
	}
	n := 1
	for _, d := range c.Spec.BatchShape() {
		n *= d
	}
	for _, in := range c.Graph.Inputs {
		n = max(n, in.Shape.Numel())
	}
	if n > maxFuzzEmit {
		return
	}
	key, ok := yamlValue(src)
	if _, seen := emitted.Load(key); ok && seen {
		return
	}
	dir := t.TempDir()
	files, err := gen.Emit(c, gen.Options{OutDir: dir})
	if err != nil {
		t.Fatalf("a valid spec does not emit: %v\nspec:\n%s", err, src)
	}
	if len(files) == 0 {
		t.Fatalf("a valid spec emits no files\nspec:\n%s", src)
	}
	if written, _ := os.ReadDir(dir); len(written) > 0 {
		t.Fatalf("Emit wrote %d entries into its OutDir\nspec:\n%s", len(written), src)
	}
	if ok {
		emitted.Store(key, true)
	}
}

// emitted holds the specs, as yamlValue keys, that this process has emitted without fault.
// Emit takes tens of milliseconds against microseconds for the rest of the pipeline, and
// most mutations of a valid spec change only what the YAML value does not hold (spacing,
// comments, quoting, flow or block style), so the spec compiles to the same thing again.
var emitted sync.Map

// yamlValue is src's YAML value with every scalar's Go type: two specs with the same one
// parse to the same spec, positions aside.
func yamlValue(src []byte) (string, bool) {
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		return "", false
	}
	var b strings.Builder
	dumpValue(&b, reflect.ValueOf(v))
	return b.String(), true
}

func dumpValue(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		dumpValue(b, v.Elem())
	case reflect.Map:
		var items []string
		for it := v.MapRange(); it.Next(); {
			var kv strings.Builder
			dumpValue(&kv, it.Key())
			kv.WriteString(": ")
			dumpValue(&kv, it.Value())
			items = append(items, kv.String())
		}
		slices.Sort(items)
		b.WriteString("{" + strings.Join(items, ", ") + "}")
	case reflect.Slice:
		b.WriteString("[")
		for i := range v.Len() {
			dumpValue(b, v.Index(i))
			b.WriteString(", ")
		}
		b.WriteString("]")
	default:
		fmt.Fprintf(b, "%T(%#v)", v.Interface(), v.Interface())
	}
}

// checkSpecError asserts that err is an ordinary spec error: no internal error, and every
// line positioned (FILE:LINE:COL: ...), but the note on errors left out of a long list.
func checkSpecError(t *testing.T, src []byte, err error) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "internal error") {
		t.Fatalf("internal error: %v\nspec:\n%s", err, src)
	}
	for _, line := range strings.Split(msg, "\n") {
		if strings.HasPrefix(line, "(") && strings.HasSuffix(line, " more errors)") {
			continue
		}
		if !positioned.MatchString(line) {
			t.Fatalf("error line without FILE:LINE:COL: %q\nspec:\n%s", line, src)
		}
	}
}
