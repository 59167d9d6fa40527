package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// The modules a downstream module's generated package may use: lossgen's runtime and the
// x/sys module it requires (the standard library aside).
const (
	runtimeModule = "github.com/lossgen/lossgen/runtime"
	sysModule     = "golang.org/x/sys"
)

// testVersion is the version the footprint tests serve this checkout of lossgen at.
const testVersion = "v0.0.0-test"

// Budgets of what lossgen costs a user's module run through `go run …@version` (README
// "Use it from go generate"): the require lines it adds, and the size of `go mod vendor`.
const (
	maxRequires   = 3
	maxVendorSize = 2 << 20
)

// TestDownstreamFootprint is the README's downstream flow without a tool directive, against
// this checkout served by a module proxy: a module whose //go:generate lines run
// `go run github.com/lossgen/lossgen/cmd/lossgen@<version>` generates a package and its
// goldens, then go mod tidy, go test on the package and go mod vendor. Its go.mod must
// require nothing but lossgen's runtime module and golang.org/x/sys, its vendor directory
// stay under maxVendorSize, and the package and its tests import nothing outside the
// standard library and those two modules. LOSSGEN_FULL=1 only: it builds lossgen and its
// dependencies from a module cache of its own (50 s with a warm build cache on a loaded
// 2-core machine, minutes without).
func TestDownstreamFootprint(t *testing.T) {
	if os.Getenv("LOSSGEN_FULL") == "" {
		t.Skip("LOSSGEN_FULL=1 runs it")
	}
	d := newDownstream(t, "go run github.com/lossgen/lossgen/cmd/lossgen@"+testVersion)
	d.run("go", "generate", "./...")
	d.run("go", "mod", "tidy")
	d.run("go", "test", "-count=1", "./gae")
	requires, vendor := d.footprint()
	t.Logf("go run …@version: %d require lines, vendor %.2f MB", len(requires), float64(vendor)/(1<<20))
	require.LessOrEqual(t, len(requires), maxRequires, "go.mod requires %v", requires)
	for _, r := range requires {
		require.Contains(t, []string{runtimeModule, sysModule}, r, "a require line of the downstream go.mod")
	}
	require.Less(t, vendor, int64(maxVendorSize), "go mod vendor: %d bytes", vendor)

	var deps []string
	for _, p := range strings.Split(d.run("go", "list", "-deps", "-test", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./gae"), "\n") {
		if p, _, _ = strings.Cut(p, " "); p != "" { // a test variant: "path [path.test]"
			deps = append(deps, p)
		}
	}
	for _, p := range deps {
		if !inModule(p, "example.com/downstream") && !inModule(p, runtimeModule) && !inModule(p, sysModule) {
			t.Errorf("the generated package or its tests import %s (outside the standard library, %s and %s)", p, runtimeModule, sysModule)
		}
	}
	// The tests do use the runtime's golden reader and PTX simulator: the check above saw them.
	for _, p := range []string{runtimeModule + "/golden", runtimeModule + "/ptxsim", sysModule + "/cpu"} {
		require.Contains(t, deps, p)
	}
}

// TestDownstreamToolFootprint is the same flow with lossgen as a tool dependency (go get
// -tool; //go:generate go tool lossgen): it works, and costs the user's module every module
// lossgen itself requires (logged, for README). LOSSGEN_FULL=1 only, as
// TestDownstreamFootprint.
func TestDownstreamToolFootprint(t *testing.T) {
	if os.Getenv("LOSSGEN_FULL") == "" {
		t.Skip("LOSSGEN_FULL=1 runs it")
	}
	d := newDownstream(t, "go tool lossgen")
	d.run("go", "get", "-tool", "github.com/lossgen/lossgen/cmd/lossgen@"+testVersion)
	d.run("go", "generate", "./...")
	d.run("go", "mod", "tidy")
	d.run("go", "test", "-count=1", "-run", "TestGolden", "./gae")
	requires, vendor := d.footprint()
	t.Logf("tool directive: %d require lines, vendor %.1f MB", len(requires), float64(vendor)/(1<<20))
	require.Contains(t, requires, "github.com/lossgen/lossgen")
}

func inModule(pkg, mod string) bool { return pkg == mod || strings.HasPrefix(pkg, mod+"/") }

// downstream is a user's module in a temporary directory, with a module proxy serving this
// checkout (lossgen at testVersion, the runtime at the version lossgen requires) and a module
// cache of its own.
type downstream struct {
	t   *testing.T
	dir string
	env []string
}

// newDownstream makes the module: go.mod, the GAE example spec, and a gen.go whose
// //go:generate lines run lossgen as command (then " golden -update …" and " generate …").
func newDownstream(t *testing.T, command string) *downstream {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	work := t.TempDir()
	proxy := filepath.Join(work, "proxy")
	serveModule(t, proxy, "github.com/lossgen/lossgen", testVersion, root)
	serveModule(t, proxy, runtimeModule, requiredRuntime(t, root), filepath.Join(root, "runtime"))

	goenv := map[string]string{}
	for _, k := range []string{"GOMODCACHE", "GOPROXY"} {
		out, err := exec.Command("go", "env", k).Output()
		require.NoError(t, err)
		goenv[k] = strings.TrimSpace(string(out))
	}
	env := slices.DeleteFunc(os.Environ(), func(e string) bool {
		k, _, _ := strings.Cut(e, "=")
		return strings.HasPrefix(k, "LOSSGEN_") || strings.HasPrefix(k, "GO") && k != "GOCACHE" && k != "GOROOT" && k != "GOPATH"
	})
	env = append(env,
		// A fresh module cache (this checkout's modules are new at every run), filled from
		// the test's proxy, then from the local module cache's downloads (a proxy's layout),
		// then from the usual proxy.
		"GOMODCACHE="+filepath.Join(work, "modcache"),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(goenv["GOMODCACHE"], "cache", "download"))+","+goenv["GOPROXY"],
		// The modules come from this checkout and from the local module cache, which the go
		// command verified when it filled it; the checksum database knows neither lossgen
		// version and may be out of reach.
		"GOSUMDB=off",
		// -modcacherw: t.TempDir can remove the module cache; -trimpath: builds of the modules
		// in it do not depend on its path, so the build cache serves the next run.
		"GOFLAGS=-modcacherw -trimpath",
		"GOWORK=off", "GOTOOLCHAIN=local",
	)
	dir := filepath.Join(work, "downstream")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	spec, err := os.ReadFile(filepath.Join(root, "spec", "examples", "gae.yaml"))
	require.NoError(t, err)
	genGo := fmt.Sprintf(`package downstream

//go:generate %[1]s golden -update -dir testdata/golden gae.yaml
//go:generate %[1]s generate -o gae -golden testdata/golden/gae gae.yaml
`, command)
	for name, content := range map[string]string{
		"go.mod":   "module example.com/downstream\n\ngo 1.26\n",
		"gae.yaml": string(spec),
		"gen.go":   genGo,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return &downstream{t: t, dir: dir, env: env}
}

// run runs a command in the module and returns its standard output; a failure fails the test.
func (d *downstream) run(name string, args ...string) string {
	d.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = d.dir, d.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	require.NoError(d.t, err, "%s %s:\n%s%s", name, strings.Join(args, " "), out, stderr.String())
	d.t.Logf("%s %s: %.1f s", name, strings.Join(args, " "), time.Since(start).Seconds())
	return string(out)
}

// footprint is what lossgen costs the module: the modules its go.mod requires, and the bytes
// go mod vendor writes.
func (d *downstream) footprint() (requires []string, vendor int64) {
	d.t.Helper()
	data, err := os.ReadFile(filepath.Join(d.dir, "go.mod"))
	require.NoError(d.t, err)
	f, err := modfile.Parse("go.mod", data, nil)
	require.NoError(d.t, err)
	for _, r := range f.Require {
		requires = append(requires, r.Mod.Path)
	}
	d.run("go", "mod", "vendor")
	err = filepath.WalkDir(filepath.Join(d.dir, "vendor"), func(_ string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		vendor += fi.Size()
		return err
	})
	require.NoError(d.t, err)
	return requires, vendor
}

// requiredRuntime is the runtime version lossgen's go.mod requires, which go.work must
// replace with runtime/ (so builds in the checkout never fetch it).
func requiredRuntime(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	f, err := modfile.Parse("go.mod", data, nil)
	require.NoError(t, err)
	version := ""
	for _, r := range f.Require {
		if r.Mod.Path == runtimeModule {
			version = r.Mod.Version
		}
	}
	require.NotEmpty(t, version, "go.mod requires no %s", runtimeModule)
	require.Empty(t, f.Replace, "go run github.com/lossgen/lossgen/cmd/lossgen@version refuses a go.mod with replace directives")

	data, err = os.ReadFile(filepath.Join(root, "go.work"))
	require.NoError(t, err)
	w, err := modfile.ParseWork("go.work", data, nil)
	require.NoError(t, err)
	var replaced []string
	for _, r := range w.Replace {
		if r.Old.Path == runtimeModule && r.New.Path == "./runtime" {
			replaced = append(replaced, r.Old.Version)
		}
	}
	require.Equal(t, []string{version}, replaced, "go.work must replace the runtime version go.mod requires with ./runtime")
	return version
}

// serveModule puts the module path@version, made from dir (nested modules left out, as a
// release's module zip leaves them), into the file-system module proxy at proxy.
func serveModule(t *testing.T, proxy, path, version, dir string) {
	t.Helper()
	esc, err := module.EscapePath(path)
	require.NoError(t, err)
	vdir := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	require.NoError(t, os.MkdirAll(vdir, 0o755))
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	require.NoError(t, err)
	require.NoError(t, modzip.CreateFromDir(zf, module.Version{Path: path, Version: version}, dir))
	require.NoError(t, zf.Close())
	for name, content := range map[string]string{
		version + ".mod":  string(gomod),
		version + ".info": fmt.Sprintf(`{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`, version),
		"list":            version + "\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(vdir, name), []byte(content), 0o644))
	}
}
