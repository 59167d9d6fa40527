// Package runner builds a generated package into a throwaway module and runs it: the way
// `lossgen eval` (and the backend tests) execute a kernel that did not exist when lossgen
// was compiled. The module uses lossgen's runtime module (this checkout's, or the one the
// current module requires) through a replace directive, so the kernel is built exactly as a
// user's module would build it.
package runner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lossgen/lossgen/gen"
	"github.com/lossgen/lossgen/gen/ir"
	"github.com/lossgen/lossgen/runtime/golden"
	"github.com/lossgen/lossgen/templates"
)

// TempRoot is the directory temporary modules are made in ("": the system's, os.TempDir).
// lossgen's eval and bench point it at a directory of their own, which they remove when
// interrupted; the go commands that build and run the modules keep their work directories
// there too (GOTMPDIR).
var TempRoot string

// goEnv is the environment of the go commands run on a module: outside any workspace, the
// module's own go.mod, and work directories under TempRoot when set.
func goEnv() []string {
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if TempRoot != "" {
		env = append(env, "GOTMPDIR="+TempRoot)
	}
	return env
}

// RuntimeModule is the module of lossgen's runtime: all that generated packages, their tests
// included, import of lossgen.
const RuntimeModule = "github.com/lossgen/lossgen/runtime"

// RuntimeRoot finds the runtime module's source: $LOSSGEN_ROOT/runtime, else the runtime
// module in the current module's build list (this checkout's runtime/ when run inside it;
// lossgen's own module, as downloaded, does not hold it: a nested module is a module of its
// own).
func RuntimeRoot() (string, error) {
	if dir := os.Getenv("LOSSGEN_ROOT"); dir != "" {
		rt := filepath.Join(dir, "runtime")
		if _, err := os.Stat(filepath.Join(rt, "go.mod")); err != nil {
			return "", fmt.Errorf("LOSSGEN_ROOT=%s is not a lossgen checkout: it has no runtime/go.mod (set it to the directory of lossgen's go.mod)", dir)
		}
		return rt, nil
	}
	dir, why, err := listDir()
	if err == nil && dir == "" {
		// A module that vendors its dependencies (go mod vendor): go list -m gives no
		// directory (vendor/ holds packages, not modules); the module cache has it.
		dir, why, err = listDir("-mod=mod")
	}
	if err != nil || dir == "" {
		if why == "" && err != nil {
			why = err.Error()
		}
		return "", fmt.Errorf("cannot find lossgen's runtime module to build the kernel against: run inside a Go module that requires %s (or in a lossgen checkout), or set LOSSGEN_ROOT=/path/to/lossgen (go list -m: %s)", RuntimeModule, or(why, "no directory"))
	}
	return dir, nil
}

// listDir is the runtime module's directory by go list -m (with flags), and the first line of
// what go printed on stderr.
func listDir(flags ...string) (dir, why string, err error) {
	cmd := exec.Command("go", append(append([]string{"list"}, flags...), "-m", "-f", "{{.Dir}}", RuntimeModule)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	why, _, _ = strings.Cut(strings.TrimSpace(stderr.String()), "\n")
	return strings.TrimSpace(string(out)), why, err
}

// WriteModule makes dir a Go module named name whose packages may import the runtime module
// at runtimeDir (a replace directive; its go.sum copied) and nothing else of lossgen's: a
// user's module holding generated packages, as the backend tests and lossgen eval build it.
func WriteModule(dir, name, runtimeDir string) error {
	gomod := fmt.Sprintf("module %s\n\ngo 1.26\n\nrequire %s v0.0.0-00010101000000-000000000000\n\nreplace %s => %s\n", name, RuntimeModule, RuntimeModule, runtimeDir)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(runtimeDir, "go.sum"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644)
}

// Module is a temporary module holding one generated package and a runner program.
type Module struct {
	Dir   string
	c     *gen.Compiled
	tests bool
}

// NewModule writes the package for c into a new temporary module (without the package's
// tests). Remove it with Close.
func NewModule(c *gen.Compiled) (*Module, error) { return newModule(c, false) }

// NewTestModule is NewModule keeping the generated tests and benchmarks (lossgen bench).
func NewTestModule(c *gen.Compiled) (*Module, error) { return newModule(c, true) }

func newModule(c *gen.Compiled, tests bool) (*Module, error) {
	root, err := RuntimeRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(TempRoot, "lossgen-run-")
	if err != nil {
		return nil, err
	}
	m := &Module{Dir: tmp, c: c, tests: tests}
	if err := m.write(root); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Close removes the module.
func (m *Module) Close() error { return os.RemoveAll(m.Dir) }

func (m *Module) write(root string) error {
	kdir := filepath.Join(m.Dir, "kernel")
	files, err := gen.Emit(m.c, gen.Options{OutDir: kdir})
	if err != nil {
		return err
	}
	for name := range files {
		if strings.HasSuffix(name, "_test.go") && !m.tests {
			delete(files, name)
		}
	}
	if err := gen.Write(kdir, files); err != nil {
		return err
	}
	if err := WriteModule(m.Dir, "lossgeneval", root); err != nil {
		return err
	}
	var ins []map[string]any
	for _, in := range m.c.Graph.Inputs {
		ins = append(ins, map[string]any{"Name": in.Name, "GoType": goType(m.c.Graph, in), "Len": in.Shape.Numel()})
	}
	tmpl, err := templates.Parse("evalmain.go.tmpl")
	if err != nil {
		return err
	}
	var src bytes.Buffer
	if err := tmpl.Execute(&src, map[string]any{"Inputs": ins, "HasGrads": m.c.Backward != nil}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(m.Dir, "main.go"), src.Bytes(), 0o644)
}

func goType(g *ir.Graph, in *ir.Input) string {
	switch in.Kind {
	case ir.Bool:
		return "bool"
	case ir.Index:
		return "int64"
	}
	return g.DType.String()
}

// Bench runs `go test -bench pattern -benchtime benchtime -count count` in the generated
// package (no tests) and returns its output. It passes no -cpu: the generated benchmarks set
// GOMAXPROCS themselves, one sub-benchmark per thread count (gotest.go.tmpl's benchThreads).
func (m *Module) Bench(pattern, benchtime string, count int) (string, error) {
	return m.goTest("-run", "^$", "-bench", pattern, "-benchtime", benchtime, "-count", strconv.Itoa(count))
}

// Test runs the generated package's tests matching pattern and returns the output.
func (m *Module) Test(pattern string) (string, error) {
	return m.goTest("-count=1", "-v", "-run", pattern)
}

func (m *Module) goTest(args ...string) (string, error) {
	cmd := exec.Command("go", append(append([]string{"test"}, args...), "./kernel")...)
	cmd.Dir = m.Dir
	cmd.Env = goEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go test %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Build compiles the runner with the given build tags ("purego" selects the pure-Go
// kernel) and returns the binary's path.
func (m *Module) Build(tags string) (string, error) {
	bin := filepath.Join(m.Dir, "runner-"+strings.ReplaceAll(or(tags, "default"), ",", "-"))
	cmd := exec.Command("go", "build", "-tags", tags, "-o", bin, ".")
	cmd.Dir = m.Dir
	cmd.Env = goEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the kernel: %v\n%s", err, out)
	}
	return bin, nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Impl returns the name of the implementation a built runner's Forward uses ("avx2", "go").
func (m *Module) Impl(bin string) (string, error) {
	out, err := exec.Command(bin, "-impl").Output()
	if err != nil {
		return "", fmt.Errorf("asking the kernel for its implementation: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Run runs a built runner's Forward on inputs (stored as the kernel expects them: see
// cases.Convert) and returns every output in the kernel's dtype; with a *DataError when the
// kernel reports one (the outputs are still returned).
func (m *Module) Run(bin string, inputs map[string]golden.Array) (map[string]golden.Array, error) {
	return m.run(bin, inputs, m.c.Graph)
}

// RunBackward runs a built runner's ForwardBackward: every output and every gradient
// (grad.<input data name>). The package must have gradients (Compiled.Backward).
func (m *Module) RunBackward(bin string, inputs map[string]golden.Array) (map[string]golden.Array, error) {
	if m.c.Backward == nil {
		return nil, fmt.Errorf("the kernel has no ForwardBackward")
	}
	return m.run(bin, inputs, m.c.Backward.Graph, "-grad")
}

// run runs the runner and reads g's outputs from it, in order.
func (m *Module) run(bin string, inputs map[string]golden.Array, g *ir.Graph, args ...string) (map[string]golden.Array, error) {
	var stdin bytes.Buffer
	for _, in := range g.Inputs {
		a, ok := inputs[in.Name]
		if !ok {
			return nil, fmt.Errorf("no input %q", in.Name)
		}
		if err := binary.Write(&stdin, binary.LittleEndian, a.Data); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin = &stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var dataErr error
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			return nil, fmt.Errorf("running the kernel: %v\n%s", err, stderr.String())
		}
		dataErr = &DataError{Msg: strings.TrimSpace(stderr.String())}
	}
	res := map[string]golden.Array{}
	r := bytes.NewReader(stdout.Bytes())
	for _, o := range g.Outputs {
		n := o.Node.Shape.Numel()
		var data any = make([]float32, n)
		if g.DType == ir.F64 {
			data = make([]float64, n)
		}
		if err := binary.Read(r, binary.LittleEndian, data); err != nil {
			return nil, fmt.Errorf("reading output %s: %w", o.Name, err)
		}
		res[o.Name] = golden.Array{Shape: o.Node.Shape.Sizes(), Data: data}
	}
	return res, dataErr
}

// DataError is what Run and RunBackward return, with every output, when the kernel's Forward
// returned a *runtime.DataError (a fault output is not 0: the inputs break a precondition
// TorchRL checks at run time). Msg is that error's text.
type DataError struct{ Msg string }

func (e *DataError) Error() string { return e.Msg }

// Kernel is NewModule, Build and Run in one call.
func Kernel(c *gen.Compiled, inputs map[string]golden.Array, tags string) (map[string]golden.Array, error) {
	m, err := NewModule(c)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	bin, err := m.Build(tags)
	if err != nil {
		return nil, err
	}
	return m.Run(bin, inputs)
}
