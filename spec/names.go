package spec

import (
	"regexp"

	"github.com/lossgen/lossgen/gen/ir"
)

// The forms of names, as regular expressions (the JSON Schema of specs uses them too).
const (
	// DimNamePattern: a dim becomes an exported Go constant of the generated package.
	DimNamePattern = `^[A-Z][A-Za-z0-9_]*$`
	// KeyPartPattern: one element of a data key; the joined key names a Go field and an .npz
	// array.
	KeyPartPattern = `^[A-Za-z_][A-Za-z0-9_-]*$`
	// PackageNamePattern: the package name is also the stem of its main file, <package>.go.
	PackageNamePattern = `^[a-z_][a-z0-9_]*$`
)

var (
	dimName = regexp.MustCompile(DimNamePattern)
	keyPart = regexp.MustCompile(KeyPartPattern)
	// testFuncName: what go test takes for a test, benchmark, fuzz test or example; the
	// generated tests declare such functions (TestGolden, BenchmarkForward, ...), so no dim
	// constant may take one of those names.
	testFuncName = regexp.MustCompile(`^(Test|Benchmark|Fuzz|Example)([^a-z].*)?$`)
	packageName  = regexp.MustCompile(PackageNamePattern)
)

// generatedStems are the stems of a generated package's files other than <package>.go and
// <package>_test.go (gen.Emit): a package of one of these names would overwrite one of them
// (example_test.go, chunks_test.go) or collide with it. gen's TestGeneratedStemsReserved
// checks the list against the files of the shipped packages.
var generatedStems = []string{"kernels_generic", "kernels_amd64", "dispatch_amd64", "vmath_amd64", "ptx", "ptxsim", "kernels", "launch", "launch_backward", "example", "chunks", "chunks_amd64"}

// buildSuffixes are the GOOS and GOARCH values (go tool dist list) that, after a '_', make the
// go tool treat a file name as build-constrained.
var buildSuffixes = []string{
	"aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "js", "linux", "nacl", "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows", "zos",
	"386", "amd64", "arm", "arm64", "loong64", "mips", "mipsle", "mips64", "mips64le", "ppc64", "ppc64le", "riscv64", "s390x", "wasm",
}

// APINames are the exported identifiers of every generated package's API.
var APINames = []string{
	"Inputs", "Outputs", "Grads", "State", "NewState", "Forward", "ForwardBackward", "NewInputs", "NewOutputs", "NewGrads",
	"Implementation", "InputNames", "OutputNames", "GradNames", "PTX", "Launch", "LaunchBackward",
}

// ReservedNames are the exported identifiers a generated package may declare besides its
// dims: its API, and a constant for every parameter of every stage of reg (ConstName), so no
// dim may take them. gen's tests check that every exported identifier of the example
// packages is a dim or one of these.
func ReservedNames(reg Registry) []string {
	out := append([]string(nil), APINames...)
	seen := map[string]bool{}
	for _, k := range []Kind{Transform, Estimator, Loss} {
		for _, t := range reg.Types(k) {
			for _, p := range reg.Stage(k, t).Params {
				if c := ConstName(p.Name); !seen[c] {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// ConstName is the generated package's constant for a parameter, in the mixed caps of its
// field names (ir.CamelCase): clip_epsilon → ClipEpsilon, kl_to_ref_coeff → KLToRefCoeff.
func ConstName(param string) string { return ir.CamelCase(param, true) }
