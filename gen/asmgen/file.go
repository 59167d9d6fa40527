package asmgen

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/buildtags"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
)

// assemble runs body on a fresh avo context and returns the assembly and the Go stub
// declarations, each starting with header (avo's own first line is replaced).
func assemble(pkg, header string, f64 bool, body func(a *asm)) (asmSrc, stubs []byte, err error) {
	c := build.NewContext()
	c.Constraints(buildtags.Term("!purego").ToConstraints())
	a := newAsm(c, f64)
	body(a)
	f, err := c.Result()
	if err != nil {
		var list build.ErrorList
		if errors.As(err, &list) {
			var msgs []string
			for _, e := range list {
				msgs = append(msgs, e.Error())
			}
			return nil, nil, fmt.Errorf("asmgen: %s", strings.Join(msgs, "; "))
		}
		return nil, nil, fmt.Errorf("asmgen: %w", err)
	}
	if err := pass.Compile.Execute(f); err != nil {
		return nil, nil, fmt.Errorf("asmgen: %w", err)
	}
	cfg := printer.Config{Name: "lossgen", Pkg: pkg}
	asmSrc, err = printer.NewGoAsm(cfg).Print(f)
	if err != nil {
		return nil, nil, err
	}
	stubs, err = printer.NewStubs(cfg).Print(f)
	if err != nil {
		return nil, nil, err
	}
	return retitle(asmSrc, header), retitle(stubs, header), nil
}

// retitle replaces the first line (avo's "Code generated" comment) with header.
func retitle(src []byte, header string) []byte {
	if i := bytes.IndexByte(src, '\n'); i >= 0 {
		src = src[i:]
	}
	return append([]byte("// "+header), src...)
}
