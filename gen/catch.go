package gen

import (
	"fmt"
	"runtime/debug"
)

// InternalError is a panic inside lossgen's pipeline, returned as an error at the spec being
// processed: a bug of lossgen's, never the input's fault, and never shown as a Go stack
// trace. Its text is "FILE:1:1: internal error: VALUE (please report)".
type InternalError struct {
	File  string // the spec path ("" when unknown)
	Value any    // what panicked
	Stack []byte // where it panicked, for a bug report (not part of Error)
}

func (e *InternalError) Error() string {
	msg := fmt.Sprintf("internal error: %v (please report)", e.Value)
	if e.File == "" {
		return msg
	}
	return e.File + ":1:1: " + msg
}

// Unwrap returns the panic value when it is an error (a runtime.Error, say).
func (e *InternalError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// catch, deferred first thing at each entry of the pipeline (`defer catch(path, &err)`),
// turns a panic into an *InternalError for file in the function's named error result.
// recover works only in the deferred function itself, hence one line per entry.
func catch(file string, err *error) {
	if p := recover(); p != nil {
		*err = &InternalError{File: file, Value: p, Stack: debug.Stack()}
	}
}

// specFile is c's spec path, or "" for a hand-made Compiled without one.
func specFile(c *Compiled) string {
	if c == nil || c.Spec == nil {
		return ""
	}
	return c.Spec.File
}
