package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeFile writes data to path. With overwrite it replaces the file whole (a temporary file
// in the same directory, renamed over it, so a reader never sees part of it); without, it
// fails when path exists, without touching it (O_EXCL: not even a file created meanwhile).
// A directory at path is an error either way, and overwrite replaces only a regular file: a
// symlink, FIFO, device or socket at path is an error (renaming over one would replace the
// link, or /dev/null, with a regular file). A replaced file keeps its permissions; a new one
// is 0644 (0666 less the umask without overwrite).
func writeFile(path string, data []byte, overwrite bool) (err error) {
	mode := os.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory; give a file name", path)
	} else if err == nil && overwrite && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s); -force replaces only a regular file", path, fileKind(fi.Mode()))
	} else if err == nil {
		mode = fi.Mode().Perm() // a replaced file keeps its permissions
	}
	if !overwrite {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists; not overwriting it (-force replaces it)", path)
		}
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			os.Remove(path)
			return err
		}
		return f.Close()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// fileKind names the kind of a file that is not a regular file, for writeFile's error.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}
