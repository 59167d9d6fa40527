package gen

import "runtime/debug"

// modulePath is lossgen's module path, looked up in the build info.
const modulePath = "github.com/lossgen/lossgen"

// SemanticsURL is the address of the docs/SEMANTICS.md that generated doc comments cite as
// "SEMANTICS.md §…", so that a downstream module, which has no copy, can read them: lossgen's
// repository at the version of lossgen this generator was built from as a dependency (a
// tool dependency or go run in a module requiring it), or at main when lossgen is the main
// module (a checkout: its VCS-stamped version changes with every commit, and the example
// packages' bytes must not).
func SemanticsURL() string {
	info, _ := debug.ReadBuildInfo()
	return semanticsURL(info)
}

func semanticsURL(info *debug.BuildInfo) string {
	ref := "main"
	if info != nil && info.Main.Path != modulePath {
		for _, d := range info.Deps {
			if d.Path == modulePath && d.Replace == nil && d.Version != "" && d.Version != "(devel)" {
				ref = d.Version
			}
		}
	}
	return "https://github.com/lossgen/lossgen/blob/" + ref + "/docs/SEMANTICS.md"
}
