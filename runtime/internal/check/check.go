// Package check holds the assertions the runtime module's tests use, with the signatures of
// github.com/stretchr/testify/require's: the runtime module requires nothing but
// golang.org/x/sys, tests included (a test-only requirement would still be listed in its
// go.mod and so in every downstream module graph). Each stops the test on failure.
package check

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// fail stops t with what failed and the caller's message (msgAndArgs: a format and its
// arguments, or one value).
func fail(t testing.TB, what string, msgAndArgs []any) {
	t.Helper()
	if len(msgAndArgs) > 0 {
		msg := fmt.Sprint(msgAndArgs[0])
		if f, ok := msgAndArgs[0].(string); ok && len(msgAndArgs) > 1 {
			msg = fmt.Sprintf(f, msgAndArgs[1:]...)
		}
		what += "\n\tmessage: " + msg
	}
	t.Fatal(what)
}

// NoError asserts err is nil.
func NoError(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	if err != nil {
		fail(t, fmt.Sprintf("unexpected error: %v", err), msgAndArgs)
	}
}

// Error asserts err is not nil.
func Error(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	if err == nil {
		fail(t, "an error was expected, got nil", msgAndArgs)
	}
}

// ErrorContains asserts err is not nil and its message contains sub.
func ErrorContains(t testing.TB, err error, sub string, msgAndArgs ...any) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), sub) {
		fail(t, fmt.Sprintf("error %v does not contain %q", err, sub), msgAndArgs)
	}
}

// Equal asserts want and got are deeply equal (reflect.DeepEqual: NaN is not equal to NaN).
func Equal(t testing.TB, want, got any, msgAndArgs ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		fail(t, fmt.Sprintf("not equal:\n\twant: %#v\n\tgot:  %#v", want, got), msgAndArgs)
	}
}

// InDelta asserts |want − got| ≤ delta.
func InDelta(t testing.TB, want, got, delta float64, msgAndArgs ...any) {
	t.Helper()
	if !(want-got <= delta && got-want <= delta) {
		fail(t, fmt.Sprintf("%v and %v differ by more than %v", want, got, delta), msgAndArgs)
	}
}

// True asserts ok.
func True(t testing.TB, ok bool, msgAndArgs ...any) {
	t.Helper()
	if !ok {
		fail(t, "should be true", msgAndArgs)
	}
}

// Less asserts a < b.
func Less[T cmp.Ordered](t testing.TB, a, b T, msgAndArgs ...any) {
	t.Helper()
	if !(a < b) {
		fail(t, fmt.Sprintf("%v is not less than %v", a, b), msgAndArgs)
	}
}

// LessOrEqual asserts a ≤ b.
func LessOrEqual[T cmp.Ordered](t testing.TB, a, b T, msgAndArgs ...any) {
	t.Helper()
	if !(a <= b) {
		fail(t, fmt.Sprintf("%v is not less than or equal to %v", a, b), msgAndArgs)
	}
}

// Zero asserts v is its type's zero value (nil counts).
func Zero(t testing.TB, v any, msgAndArgs ...any) {
	t.Helper()
	if v != nil && !reflect.ValueOf(v).IsZero() {
		fail(t, fmt.Sprintf("should be zero: %#v", v), msgAndArgs)
	}
}

// NotZero asserts v is not its type's zero value.
func NotZero(t testing.TB, v any, msgAndArgs ...any) {
	t.Helper()
	if v == nil || reflect.ValueOf(v).IsZero() {
		fail(t, fmt.Sprintf("should not be zero: %#v", v), msgAndArgs)
	}
}

// Nil asserts v is nil (an untyped nil, or a nil pointer, slice, map, channel, func or
// interface).
func Nil(t testing.TB, v any, msgAndArgs ...any) {
	t.Helper()
	if !isNil(v) {
		fail(t, fmt.Sprintf("should be nil: %#v", v), msgAndArgs)
	}
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface:
		return r.IsNil()
	}
	return false
}

// Len asserts v (a string, slice, array, map or channel) has n elements.
func Len(t testing.TB, v any, n int, msgAndArgs ...any) {
	t.Helper()
	if l := reflect.ValueOf(v).Len(); l != n {
		fail(t, fmt.Sprintf("has %d elements, want %d", l, n), msgAndArgs)
	}
}

// Empty asserts v is nil or has no elements (a string, slice, array, map or channel).
func Empty(t testing.TB, v any, msgAndArgs ...any) {
	t.Helper()
	if !isNil(v) && reflect.ValueOf(v).Len() != 0 {
		fail(t, fmt.Sprintf("should be empty: %#v", v), msgAndArgs)
	}
}

// NotEmpty asserts v has elements.
func NotEmpty(t testing.TB, v any, msgAndArgs ...any) {
	t.Helper()
	if isNil(v) || reflect.ValueOf(v).Len() == 0 {
		fail(t, fmt.Sprintf("should not be empty: %#v", v), msgAndArgs)
	}
}

// Contains asserts s contains sub: a substring of a string, or an element of a slice.
func Contains(t testing.TB, s, sub any, msgAndArgs ...any) {
	t.Helper()
	ok := false
	switch x := s.(type) {
	case string:
		str, isStr := sub.(string)
		ok = isStr && strings.Contains(x, str)
	default:
		v := reflect.ValueOf(s)
		if v.Kind() == reflect.Slice || v.Kind() == reflect.Array {
			for i := range v.Len() {
				if reflect.DeepEqual(v.Index(i).Interface(), sub) {
					ok = true
					break
				}
			}
		}
	}
	if !ok {
		fail(t, fmt.Sprintf("%#v does not contain %#v", s, sub), msgAndArgs)
	}
}
