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
	"io"
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
	if pkg == "" {
		return nil
	}
	kept, err := keptGoFiles(dir, files, stale)
	if err != nil {
		return err
	}
	var others []string // "FILE (package P)", every one, so that one run names them all
	for _, name := range kept {
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
// package declaring a name that a generated file declares too, where the two files are built
// together (same package clause, and some platform or build tag both match): a package-level
// name (Forward, Inputs, a kernel's pass function), a method or field of a generated type, or
// a package-level name against a generated file's import (math) and the other way round. The
// package would not build ("Forward redeclared"). Every clash is named.
func sharedNames(dir string, files map[string][]byte, stale []string) error {
	type genDecl struct {
		file, pkg string
		kind      declKind
	}
	generated := map[string][]genDecl{} // name (T.M for members) → where a generated file declares it
	for _, name := range sortedNames(files) {
		if filepath.Ext(name) != ".go" {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, files[name], parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range declsOf(f) {
			generated[d.name] = append(generated[d.name], genDecl{name, f.Name.Name, d.kind})
		}
	}
	kept, err := keptGoFiles(dir, files, stale)
	if err != nil {
		return err
	}
	var clashes []string
	for _, name := range kept {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			continue // the user's to mend; the go command reports it
		}
		for _, d := range declsOf(f) {
			for _, g := range generated[d.name] {
				if g.pkg == f.Name.Name && d.kind.clashes(g.kind) && builtTogether(dir, name, g.file, files[g.file]) {
					clashes = append(clashes, fmt.Sprintf("%s: %s is also declared by the generated %s", fset.Position(d.pos), d.name, filepath.Join(dir, g.file)))
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

// declKind is what a file declares under a name: a package-level name, a method or field of a
// type (named T.M), or an import's name in the file's scope.
type declKind int

const (
	topLevel declKind = iota
	member
	imported
)

// clashes reports whether declarations of kinds k and o under one name in two files of a
// package cannot both stand: two package-level names, two members, or a package-level name
// and another file's import (go: "already declared through import of package").
func (k declKind) clashes(o declKind) bool {
	switch k {
	case topLevel:
		return o == topLevel || o == imported
	case member:
		return o == member
	}
	return o == topLevel
}

type decl struct {
	name string
	kind declKind
	pos  token.Pos
}

// declsOf lists what f declares: package-level functions (not init), types, variables and
// constants; methods and struct fields as Type.Name; imports by the name they bind (not _ or .).
func declsOf(f *ast.File) []decl {
	var out []decl
	add := func(name string, kind declKind, pos token.Pos) {
		if name != "_" && name != "" {
			out = append(out, decl{name, kind, pos})
		}
	}
	for _, im := range f.Imports {
		path := strings.Trim(im.Path.Value, `"`)
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		if name != "." && name != "C" {
			add(name, imported, im.Pos())
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				if d.Name.Name != "init" {
					add(d.Name.Name, topLevel, d.Name.Pos())
				}
			} else if t := recvType(d.Recv.List[0].Type); t != "" {
				add(t+"."+d.Name.Name, member, d.Name.Pos())
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					add(sp.Name.Name, topLevel, sp.Name.Pos())
					if st, ok := sp.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							for _, id := range fl.Names {
								add(sp.Name.Name+"."+id.Name, member, id.Pos())
							}
						}
					}
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						add(id.Name, topLevel, id.Pos())
					}
				}
			}
		}
	}
	return out
}

// recvType is the type name of a method's receiver (T of *T, T[P]).
func recvType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvType(e.X)
	case *ast.IndexExpr:
		return recvType(e.X)
	case *ast.IndexListExpr:
		return recvType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// builtTogether reports whether the user's file name in dir and the generated file gen (not
// written yet: src) are both built on some platform the generated package targets (the
// combinations everBuilt tries).
func builtTogether(dir, name, gen string, src []byte) bool {
	for _, ctx := range targetContexts() {
		open := ctx.OpenFile
		ctx.OpenFile = func(path string) (io.ReadCloser, error) {
			if path == filepath.Join(dir, gen) {
				return io.NopCloser(bytes.NewReader(src)), nil
			}
			if open != nil {
				return open(path)
			}
			return os.Open(path)
		}
		okU, errU := ctx.MatchFile(dir, name)
		okG, errG := ctx.MatchFile(dir, gen)
		if errU == nil && errG == nil && okU && okG {
			return true
		}
	}
	return false
}

// keptGoFiles are the Go files of the user's in dir that a write of files keeps (not in files,
// not stale) and that the go command builds on some target platform (everBuilt; not
// //go:build ignore); none when dir does not exist yet.
func keptGoFiles(dir string, files map[string][]byte, stale []string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if filepath.Ext(name) == ".go" && e.Type().IsRegular() && files[name] == nil && !slices.Contains(stale, name) && everBuilt(dir, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// everBuilt reports whether the go command builds dir's file name on some platform the
// generated package targets (linux, darwin, windows; amd64, arm64; with and without the
// purego tag): a file of another package there breaks that build.
func everBuilt(dir, name string) bool {
	for _, ctx := range targetContexts() {
		if ok, err := ctx.MatchFile(dir, name); err == nil && ok {
			return true
		}
	}
	return false
}

// targetContexts are the builds a generated package targets: linux, darwin and windows on
// amd64 and arm64, with and without the purego tag.
func targetContexts() []build.Context {
	var out []build.Context
	for _, goos := range []string{"linux", "darwin", "windows"} {
		for _, goarch := range []string{"amd64", "arm64"} {
			for _, tags := range [][]string{nil, {"purego"}} {
				ctx := build.Default
				ctx.GOOS, ctx.GOARCH, ctx.BuildTags = goos, goarch, tags
				out = append(out, ctx)
			}
		}
	}
	return out
}

// sortedNames is the keys of m in order.
func sortedNames[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
