// Package templates holds the text/template files lossgen fills in: the PTX module and kernel
// frames (ptx/), the test files of every generated package, and the runner program
// `lossgen eval` builds around a generated package.
package templates

import (
	"embed"
	"text/template"
)

//go:embed *.tmpl ptx/*.tmpl
var files embed.FS

// Parse returns the named template, which fails on a missing key.
func Parse(name string) (*template.Template, error) {
	return template.New(name).Option("missingkey=error").ParseFS(files, name)
}

// PTX returns the PTX module template (ptx/module.ptx.tmpl), with ptx/kernel.ptx.tmpl
// defined for it.
func PTX() (*template.Template, error) {
	return template.New("module.ptx.tmpl").Option("missingkey=error").ParseFS(files, "ptx/*.tmpl")
}
