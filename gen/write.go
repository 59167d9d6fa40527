package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lossgen/lossgen/gen/dirtx"
)

// Write is WriteContext that cannot be interrupted and reports only failure.
func Write(dir string, files map[string][]byte) error {
	_, err := WriteContext(context.Background(), dir, files)
	return err
}

// WriteContext makes dir hold files, a package Emit produced, in one transaction
// (dirtx.Apply): every file is created, replaced and removed, or, if anything fails or ctx
// ends first, none is and dir is byte for byte as it was; a write cut short by a killed
// process is undone (or finished) by the next one, which says so in Result.Repaired.
// WriteContext refuses, changing nothing, to replace a file that lossgen did not write (no
// marker). It removes the files lossgen wrote for a package (ownedFile: the fixed names,
// and <package>.go and <package>_test.go) that files does not hold, those of an earlier
// generation, of this package or another; every other file is the user's and is kept,
// whatever its name or content. Unchanged files are not touched.
func WriteContext(ctx context.Context, dir string, files map[string][]byte) (dirtx.Result, error) {
	// Resolve a cut-short write first: a half-done one would look like a mix of packages.
	repaired, err := dirtx.Recover(dir)
	if err != nil {
		return dirtx.Result{Repaired: repaired}, err
	}
	var foreign []string // files of the user's that the write would replace: all of them named
	for _, name := range sortedNames(files) {
		target := filepath.Join(dir, name)
		fi, err := os.Lstat(target)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return dirtx.Result{Repaired: repaired}, err
		case !fi.Mode().IsRegular():
			return dirtx.Result{Repaired: repaired}, fmt.Errorf("%s exists and is not a regular file", target)
		}
		old, err := os.ReadFile(target)
		if err != nil {
			return dirtx.Result{Repaired: repaired}, err
		}
		if !bytes.Equal(old, files[name]) && !generatedByLossgen(old) {
			foreign = append(foreign, target)
		}
	}
	switch len(foreign) {
	case 0:
	case 1:
		return dirtx.Result{Repaired: repaired}, fmt.Errorf("%s exists and was not written by lossgen (no %q line): move it away or generate elsewhere", foreign[0], marker)
	default:
		return dirtx.Result{Repaired: repaired}, fmt.Errorf("%s exist and were not written by lossgen (no %q line): move them away or generate elsewhere", strings.Join(foreign, ", "), marker)
	}
	stale, err := staleFiles(dir, files)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return dirtx.Result{Repaired: repaired}, err
	}
	if err := otherPackage(dir, files, stale); err != nil {
		return dirtx.Result{Repaired: repaired}, err
	}
	if err := sharedNames(dir, files, stale); err != nil {
		return dirtx.Result{Repaired: repaired}, err
	}
	res, err := dirtx.Apply(ctx, dir, files, stale)
	res.Repaired = append(repaired, res.Repaired...)
	return res, err
}

// Diff lists how dir differs from files: missing, different and stale generated files, and
// a write that was cut short.
func Diff(dir string, files map[string][]byte) ([]string, error) {
	var out []string
	if dirtx.Pending(dir) {
		out = append(out, "interrupted write: "+filepath.Join(dir, dirtx.TxnDir)+" (the next lossgen generate or golden -update on it undoes the write, or finishes one that had written every file)")
	}
	for _, name := range sortedNames(files) {
		old, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			out = append(out, "missing "+filepath.Join(dir, name))
		case err != nil:
			return nil, err
		case !bytes.Equal(old, files[name]):
			out = append(out, "stale "+filepath.Join(dir, name)+" (regenerate it)")
		}
	}
	stale, err := staleFiles(dir, files)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, s := range stale {
		out = append(out, "not generated any more: "+filepath.Join(dir, s))
	}
	return out, nil
}

// staleFiles lists the files in dir that lossgen wrote for a package (ownedFile) but that
// are not in files.
func staleFiles(dir string, files map[string][]byte) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.Type().IsRegular() || files[e.Name()] != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if ownedFile(e.Name(), b) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// otherPackage refuses a write that would leave dir with Go files of two packages: a file of
// the user's that the write keeps (not in files, not stale), that the go command builds on
// some platform (everBuilt) and whose package clause names another package than the
// generated one (or, in a _test.go file, than it and its external test package; go/build
// ignores package documentation). Such a directory does not build ("found packages p and
// q").
func otherPackage(dir string, files map[string][]byte, stale []string) error {
	pkg := ""
	for _, name := range sortedNames(files) {
		if filepath.Ext(name) == ".go" {
			if f, err := parser.ParseFile(token.NewFileSet(), name, files[name], parser.PackageClauseOnly); err == nil {
				pkg = f.Name.Name
				break
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if pkg == "" || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var others []string // "FILE (package P)", every one, so that one run names them all
	for _, e := range entries {
		name := e.Name()
		if filepath.Ext(name) != ".go" || !e.Type().IsRegular() || files[name] != nil || slices.Contains(stale, name) {
			continue
		}
		if !everBuilt(dir, name) {
			continue // //go:build ignore, or unreadable as Go
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.PackageClauseOnly)
		if err != nil {
			continue // not Go the go command could build either way: the user's to mend
		}
		got := f.Name.Name
		if got != pkg && got != "documentation" && !(strings.HasSuffix(name, "_test.go") && got == pkg+"_test") {
			others = append(others, fmt.Sprintf("%s (package %s)", filepath.Join(dir, name), got))
		}
	}
	switch len(others) {
	case 0:
		return nil
	case 1:
		file, got, _ := strings.Cut(strings.TrimSuffix(others[0], ")"), " (package ")
		return fmt.Errorf("%s is package %s and the generated package is %s: a directory holds one package, so %s would not build; move %s, or generate into another directory", file, got, pkg, dir, filepath.Base(file))
	}
	return fmt.Errorf("%s hold other packages than the generated package %s: a directory holds one package, so %s would not build; move them, or generate into another directory", strings.Join(others, ", "), pkg, dir)
}

// sharedNames refuses a write that would leave a Go file of the user's in the generated
// package declaring a package-level name that a generated file declares too (Forward, Inputs,
// a kernel's pass function): the package would not build ("Forward redeclared"). A file
// compiled with the package's tests (a _test.go file of the package, or of its external test
// package) is checked against the generated files of its package clause, which its test
// build compiles with it; every clash is named.
func sharedNames(dir string, files map[string][]byte, stale []string) error {
	type decl struct{ file, pkg string }
	generated := map[string][]decl{} // name → generated files of the package declaring it
	for _, name := range sortedNames(files) {
		if filepath.Ext(name) != ".go" {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, files[name], parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, id := range topLevelNames(f) {
			generated[id.Name] = append(generated[id.Name], decl{name, f.Name.Name})
		}
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var clashes []string
	for _, e := range entries {
		name := e.Name()
		if filepath.Ext(name) != ".go" || !e.Type().IsRegular() || files[name] != nil || slices.Contains(stale, name) || !everBuilt(dir, name) {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			continue // the user's to mend; the go command reports it
		}
		for _, id := range topLevelNames(f) {
			for _, d := range generated[id.Name] {
				// Files of one package clause are compiled together in some build (its tests').
				if d.pkg == f.Name.Name {
					clashes = append(clashes, fmt.Sprintf("%s: %s is also declared by the generated %s", fset.Position(id.Pos()), id.Name, filepath.Join(dir, d.file)))
					break
				}
			}
		}
	}
	if len(clashes) == 0 {
		return nil
	}
	return fmt.Errorf("%s: the package would not build; rename them in your files, or move the files out of %s", strings.Join(clashes, "; "), dir)
}

// topLevelNames are the package-level names f declares: functions (not methods or init),
// types, variables and constants, without _.
func topLevelNames(f *ast.File) []*ast.Ident {
	var out []*ast.Ident
	add := func(id *ast.Ident) {
		if id != nil && id.Name != "_" {
			out = append(out, id)
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name != "init" {
				add(d.Name)
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					add(sp.Name)
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						add(id)
					}
				}
			}
		}
	}
	return out
}

// everBuilt reports whether the go command builds dir's file name on some platform the
// generated package targets (linux, darwin, windows; amd64, arm64; with and without the
// purego tag): a file of another package there breaks that build.
func everBuilt(dir, name string) bool {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		for _, goarch := range []string{"amd64", "arm64"} {
			for _, tags := range [][]string{nil, {"purego"}} {
				ctx := build.Default
				ctx.GOOS, ctx.GOARCH, ctx.BuildTags = goos, goarch, tags
				if ok, err := ctx.MatchFile(dir, name); err == nil && ok {
					return true
				}
			}
		}
	}
	return false
}

// sortedNames is the keys of m in order.
func sortedNames[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
