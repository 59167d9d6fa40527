package runtime

import (
	"fmt"
	"sort"
	"unsafe"
)

// Span is the memory of one slice argument of a kernel call.
type Span struct {
	Name   string
	Start  uintptr
	Bytes  uintptr
	Output bool // the call writes it
}

// SpanOf returns the span of slice s (an empty slice spans nothing).
func SpanOf[T any](name string, s []T, output bool) Span {
	var z T
	if len(s) == 0 {
		return Span{Name: name, Output: output}
	}
	return Span{Name: name, Start: uintptr(unsafe.Pointer(unsafe.SliceData(s))), Bytes: uintptr(len(s)) * unsafe.Sizeof(z), Output: output}
}

// OverlapError reports an output that shares memory with another argument: the kernels read
// inputs in several passes and at neighbouring indices, and write outputs as they go, so an
// overlap would give silently wrong results.
type OverlapError struct {
	Kernel string
	A, B   string
}

func (e *OverlapError) Error() string {
	return fmt.Sprintf("%s: %s and %s share memory; an output must not overlap another output or an input (inputs may overlap each other)", e.Kernel, e.A, e.B)
}

// CheckDisjoint returns an *OverlapError for the first pair of spans that overlap where at
// least one is an output, or nil.
func CheckDisjoint(kernel string, spans []Span) error {
	s := make([]Span, 0, len(spans))
	for _, x := range spans {
		if x.Bytes > 0 {
			s = append(s, x)
		}
	}
	sort.SliceStable(s, func(i, j int) bool { return s[i].Start < s[j].Start })
	for i := range s {
		for j := i + 1; j < len(s) && s[j].Start < s[i].Start+s[i].Bytes; j++ {
			if s[i].Output || s[j].Output {
				return &OverlapError{Kernel: kernel, A: s[i].Name, B: s[j].Name}
			}
		}
	}
	return nil
}
