// Package runtime is what lossgen's generated packages import: length checks that turn a
// shape mismatch into an error (never a read past the end), the streaming accumulators the
// generated loops use for reductions, and the version handshake between generated code and
// this package. It depends on the standard library only, so a vendored generated package
// pulls in nothing heavy.
package runtime

import (
	"fmt"
	"strings"
)

// GenVersion is the version of the code generator's output that this runtime serves. It is
// bumped by hand when generated code starts to need something new from this package.
const GenVersion = 1

// MinVersion is the oldest generated code this runtime still serves.
const MinVersion = 1

// EnforceVersion is used by generated code in constant expressions that fail to compile
// when the runtime is too old or too new for it:
//
//	const _ = runtime.EnforceVersion(runtime.GenVersion - 1) // generated at version 1
//	const _ = runtime.EnforceVersion(1 - runtime.MinVersion)
type EnforceVersion uint

// Len is one length check: the slice called Name has Got elements and must have Want.
type Len struct {
	Name      string
	Got, Want int
}

// ShapeError reports every slice of a kernel call whose length does not match the kernel's
// fixed shape. Forward returns it before touching any output.
type ShapeError struct {
	Kernel string
	Bad    []Len
}

func (e *ShapeError) Error() string {
	parts := make([]string, len(e.Bad))
	for i, b := range e.Bad {
		parts[i] = fmt.Sprintf("%s has %d elements, want %d", b.Name, b.Got, b.Want)
	}
	return e.Kernel + ": shape mismatch: " + strings.Join(parts, "; ")
}

// CheckLens returns a *ShapeError listing every check whose lengths differ, or nil.
func CheckLens(kernel string, checks ...Len) error {
	var bad []Len
	for _, c := range checks {
		if c.Got != c.Want {
			bad = append(bad, c)
		}
	}
	if bad == nil {
		return nil
	}
	return &ShapeError{Kernel: kernel, Bad: bad}
}

// IndexError reports a gather index outside its axis.
type IndexError struct {
	Kernel, Input string
	At, Value     int
	Size          int
}

func (e *IndexError) Error() string {
	return fmt.Sprintf("%s: %s[%d] = %d is out of range [0, %d)", e.Kernel, e.Input, e.At, e.Value, e.Size)
}

// DataError reports inputs that break a precondition of the kernel's math which TorchRL
// checks when it runs (DistributionalQValueModule raises ValueError for log-softmax values
// above 0): a fault output the kernel computed is not 0. Forward returns it after the
// kernel has run, with every output written from the inputs as they are; the outputs are
// then not TorchRL's (TorchRL computes none), so treat them as invalid.
type DataError struct {
	Kernel string
	Output string  // the fault output (out.<Field>), which counts the offending elements
	Count  float64 // its value: the number of offending elements
	Msg    string  // what the precondition is
}

func (e *DataError) Error() string {
	return fmt.Sprintf("%s: %s = %v: %s", e.Kernel, e.Output, e.Count, e.Msg)
}
