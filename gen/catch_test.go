package gen

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/spec"
)

// A panic inside the pipeline comes back from Emit as an error at the spec, not a crash:
// a hand-made Compiled with no plan makes the backends dereference nil.
func TestEmitPanicIsInternalError(t *testing.T) {
	c := &Compiled{Spec: &spec.Spec{File: "hand.yaml", Package: "p"}}
	var files map[string][]byte
	var err error
	require.NotPanics(t, func() { files, err = Emit(c, Options{}) })
	require.Nil(t, files)
	var ie *InternalError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, "hand.yaml", ie.File)
	require.Regexp(t, `^hand\.yaml:1:1: internal error: runtime error: invalid memory address or nil pointer dereference \(please report\)$`, err.Error())
	require.NotContains(t, err.Error(), "goroutine", "no stack trace in the message")
	require.Contains(t, string(ie.Stack), "gen.Emit", "the stack is kept for a bug report")

	// With no spec at all there is no file to name.
	_, err = Emit(&Compiled{}, Options{})
	require.EqualError(t, err, "internal error: runtime error: invalid memory address or nil pointer dereference (please report)")
}

// catch turns any panic value into the error, keeping an error value unwrappable.
func TestCatch(t *testing.T) {
	boom := errors.New("boom")
	f := func(v any) (err error) {
		defer catch("s.yaml", &err)
		panic(v)
	}
	err := f(boom)
	require.EqualError(t, err, "s.yaml:1:1: internal error: boom (please report)")
	require.ErrorIs(t, err, boom)
	require.EqualError(t, f(42), "s.yaml:1:1: internal error: 42 (please report)")
	ok := func() (err error) {
		defer catch("s.yaml", &err)
		return boom
	}
	require.Equal(t, boom, ok(), "without a panic the error is the function's own")
}

// Every entry of the pipeline recovers panics: its first statement is `defer catch(...)`.
func TestEntriesCatchPanics(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "gen.go", nil, 0)
	require.NoError(t, err)
	entries := map[string]bool{"CompileDims": false, "Generate": false, "Emit": false}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil {
			continue
		}
		if _, want := entries[fd.Name.Name]; !want {
			continue
		}
		require.NotEmpty(t, fd.Body.List, fd.Name.Name)
		ds, ok := fd.Body.List[0].(*ast.DeferStmt)
		require.True(t, ok, "%s does not start with a defer", fd.Name.Name)
		id, ok := ds.Call.Fun.(*ast.Ident)
		require.True(t, ok && id.Name == "catch", "%s defers something other than catch", fd.Name.Name)
		entries[fd.Name.Name] = true
	}
	require.Equal(t, map[string]bool{"CompileDims": true, "Generate": true, "Emit": true}, entries)
}
