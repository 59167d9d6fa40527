package main

import (
	"io"

	"github.com/lossgen/lossgen/gen/lower"
	"github.com/lossgen/lossgen/gen/specdoc"
)

// cmdReference writes docs/spec-reference.md's text: the spec format from the stage registry.
func cmdReference(args []string, stdout, stderr io.Writer) error {
	return docCommand("reference", "the Markdown reference of the spec format", args, stdout, stderr,
		func() []byte { return specdoc.Reference(lower.Registry()) })
}

// cmdSchema writes docs/spec.schema.json's text: the spec's JSON Schema for editors.
func cmdSchema(args []string, stdout, stderr io.Writer) error {
	return docCommand("schema", "the JSON Schema (draft 2020-12) of the spec", args, stdout, stderr,
		func() []byte { return specdoc.Schema(lower.Registry()) })
}

// docCommand is a command that prints a document generated from the registry, or writes it
// to -o FILE: a new file, or with -force a regular file replaced whole, as init writes.
func docCommand(name, what string, args []string, stdout, stderr io.Writer, render func() []byte) error {
	fs := flags(name, "[-o FILE [-force]]", stderr)
	out := fs.String("o", "", "write "+what+" to FILE instead of stdout (an existing FILE is an error without -force)")
	force := fs.Bool("force", false, "with -o, replace an existing FILE")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return badUsage(fs, stderr, "no arguments expected, got %q", fs.Arg(0))
	}
	if *force && *out == "" {
		return badUsage(fs, stderr, "-force needs -o FILE")
	}
	if *out == "" {
		_, err := stdout.Write(render())
		return err
	}
	return writeFile(*out, render(), *force)
}
