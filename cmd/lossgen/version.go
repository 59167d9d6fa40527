package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/lossgen/lossgen/runtime"
)

// modulePath is lossgen's module, looked up in the build info.
const modulePath = "github.com/lossgen/lossgen"

// versionText is what `lossgen version` prints: the generator version stamped into
// generated files, lossgen's module version (from the module list when lossgen is built as a
// dependency, "(devel)" when none is recorded) and the VCS revision it was built from
// (recorded only when lossgen is the main module; "unknown" otherwise).
func versionText(info *debug.BuildInfo, ok bool) string {
	version, revision := "(devel)", "unknown"
	if ok && info != nil {
		m := &info.Main
		for _, d := range info.Deps {
			if m.Path != modulePath && d.Path == modulePath {
				m = d
			}
		}
		if m.Path == modulePath && m.Version != "" {
			version = m.Version
		}
		if m.Path == modulePath && m.Replace != nil {
			version += " => " + strings.TrimSpace(m.Replace.Path+" "+m.Replace.Version)
		}
		if m == &info.Main && m.Path == modulePath {
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			if r := settings["vcs.revision"]; r != "" {
				revision = r
				if settings["vcs.modified"] == "true" {
					revision += " (modified)"
				}
			}
		}
	}
	return fmt.Sprintf("lossgen gen v%d\nmodule %s %s\nrevision %s\n", runtime.GenVersion, modulePath, version, revision)
}
