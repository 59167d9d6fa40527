package spec

import (
	"fmt"
	"io"
	"os"
)

// MaxSpecBytes is the largest spec file lossgen reads: a spec is a few hundred bytes, and
// reading /dev/zero or a 200 MB file whole would take memory and time for nothing.
const MaxSpecBytes = 1 << 20

// ReadFile reads the spec file at path: a regular file of at most MaxSpecBytes, else an
// error naming path (a directory, a device such as /dev/zero, a FIFO, or too large).
func ReadFile(path string) ([]byte, error) {
	// Stat first: opening a FIFO blocks until something writes to it.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s, not a regular file; a spec is a YAML file", path, fileKind(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s, not a regular file; a spec is a YAML file", path, fileKind(fi.Mode()))
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, err
	}
	if len(src) > MaxSpecBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes; a spec is a short YAML file", path, MaxSpecBytes)
	}
	return src, nil
}

// fileKind names what a non-regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}
