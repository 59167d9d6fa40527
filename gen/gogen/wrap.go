package gogen

import (
	"bytes"
	"go/scanner"
	"go/token"
	"regexp"
	"strings"
	"unicode/utf8"
)

// CommentWidth is the column generated comments wrap at (a tab counts 4).
const CommentWidth = 100

// WrapComments wraps the line comments of Go source src that stand on lines of their own and
// run past CommentWidth: a paragraph's words flow onto further comment lines, and a list
// item's ("- x", "1. x") continue under its text. Directives (//go:, //line), code blocks
// in comments (a tab after //) and trailing comments stay as they are. src that does not
// scan is returned unchanged.
func WrapComments(src []byte) []byte {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	bad := false
	s.Init(file, src, func(token.Position, string) { bad = true }, scanner.ScanComments)
	whole := map[int]bool{} // 1-based lines that hold only a line comment
	lines := bytes.Split(src, []byte("\n"))
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.COMMENT || !strings.HasPrefix(lit, "//") {
			continue
		}
		p := file.Position(pos)
		if len(bytes.TrimSpace(lines[p.Line-1][:p.Column-1])) == 0 {
			whole[p.Line] = true
		}
	}
	if bad {
		return src
	}
	var out bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			out.WriteByte('\n')
		}
		if whole[i+1] {
			out.WriteString(wrapLine(string(l)))
		} else {
			out.Write(l)
		}
	}
	return out.Bytes()
}

// WrapLineComments is WrapComments for a file of another language whose comments are //
// lines of their own (PTX).
func WrapLineComments(src []byte) []byte {
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "//") {
			lines[i] = wrapLine(l)
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// generatedMarker is Go's generated-file marker line.
var generatedMarker = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// listItem matches the start of a list item in a comment's text, and what follows.
var listItem = regexp.MustCompile(`^(\s*(?:[-*•]|\d+[.)])\s+)`)

// wrapLine wraps one comment line (indentation, //, text) at CommentWidth.
func wrapLine(l string) string {
	if width(l) <= CommentWidth {
		return l
	}
	indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
	text := strings.TrimPrefix(l[len(indent):], "//")
	if strings.HasPrefix(text, "go:") || strings.HasPrefix(text, "line ") || strings.HasPrefix(text, "\t") || strings.HasPrefix(text, " +build") {
		return l
	}
	// The generated-code marker must stay one line: tools (gopls, staticcheck, golangci-lint,
	// go vet's analyzers) recognise a generated file by a line matching
	// ^// Code generated .* DO NOT EDIT\.$ (https://go.dev/s/generatedcode).
	if generatedMarker.MatchString(l) {
		return l
	}
	text = strings.TrimPrefix(text, " ")
	first, cont := indent+"// ", indent+"// "
	if m := listItem.FindString(text); m != "" {
		first += m
		cont += strings.Repeat(" ", utf8.RuneCountInString(m))
		text = text[len(m):]
	}
	var b strings.Builder
	line := first
	empty := true
	for _, w := range strings.Fields(text) {
		if !empty && width(line)+1+utf8.RuneCountInString(w) > CommentWidth {
			b.WriteString(line)
			b.WriteByte('\n')
			line, empty = cont, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line)
	return b.String()
}

// width is the display width of a line, a tab counting 4 columns.
func width(l string) int {
	return utf8.RuneCountInString(l) + 3*strings.Count(l, "\t")
}
