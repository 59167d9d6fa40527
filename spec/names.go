package spec

import "regexp"

var (
	// dimName: a dim becomes an exported Go constant of the generated package.
	dimName = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*$`)
	// keyPart: one element of a data key; the joined key names a Go field and an .npz array.
	keyPart = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	// packageName: the package name is also the stem of its main file, <package>.go.
	packageName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// generatedStems are the stems of a generated package's files other than <package>.go and
// <package>_test.go (gen.Emit): a package of one of these names would overwrite one.
var generatedStems = []string{"kernels_generic", "kernels_amd64", "dispatch_amd64", "vmath_amd64", "ptx", "ptxsim", "kernels", "launch"}

// buildSuffixes are the GOOS and GOARCH values (go tool dist list) that, after a '_', make the
// go tool treat a file name as build-constrained.
var buildSuffixes = []string{
	"aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "js", "linux", "nacl", "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows", "zos",
	"386", "amd64", "arm", "arm64", "loong64", "mips", "mipsle", "mips64", "mips64le", "ppc64", "ppc64le", "riscv64", "s390x", "wasm",
}

// ReservedNames are the exported identifiers a generated package declares besides its dims
// (its API, and the hyperparameter constants of gen/meta.go), so no dim may take them.
// gen's tests check that every exported identifier of the example packages is a dim or one
// of these.
var ReservedNames = []string{
	"Inputs", "Outputs", "Forward", "NewOutputs", "Implementation", "InputNames", "OutputNames", "PTX", "Launch",
	"Gamma", "Lmbda", "ClipEpsilon", "EntropyCoeff", "CriticCoeff", "LossCriticType", "ClipValue", "Reduction",
}
