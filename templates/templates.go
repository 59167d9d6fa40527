// Package templates holds the text/template files lossgen fills in: the test file of every
// generated package, and the runner program `lossgen eval` builds around a generated
// package. (Kernels are emitted with jennifer and avo; these files are mostly fixed text.)
package templates

import (
	"embed"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

// Parse returns the named template, which fails on a missing key.
func Parse(name string) (*template.Template, error) {
	return template.New(name).Option("missingkey=error").ParseFS(files, name)
}
