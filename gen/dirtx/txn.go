package dirtx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// txn is a transaction in progress on dir: its TxnDir and open journal.
type txn struct {
	dir, tdir string
	journal   *os.File // nil when recovering a transaction whose journal is not writable
	recorded  bool     // the plan is in the journal: steps may have been done
}

func (t *txn) target(name string) string  { return filepath.Join(t.dir, name) }
func (t *txn) newPath(name string) string { return filepath.Join(t.tdir, "new", name) }
func (t *txn) oldPath(name string) string { return filepath.Join(t.tdir, "old", name) }

// begin creates dir's TxnDir with an empty journal, which records the created directories
// that are dir and its parents. It fails if one exists: Apply resolves an earlier one first,
// so that is another lossgen writing dir at the same time.
func begin(dir string, created int) (*txn, error) {
	t := &txn{dir: dir, tdir: filepath.Join(dir, TxnDir)}
	if err := os.Mkdir(t.tdir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s exists: another lossgen is writing %s (or left it; run again)", t.tdir, dir)
		}
		return nil, err
	}
	syncDirBestEffort(dir)
	f, err := os.OpenFile(filepath.Join(t.tdir, journalFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		os.Remove(t.tdir)
		return nil, err
	}
	t.journal = f
	head := []string{journalHeader}
	if created > 0 {
		head = append(head, fmt.Sprintf("%s %d", createdLine, created))
	}
	for _, err := range []error{t.note(head...), os.Mkdir(t.newPath(""), 0o755), os.Mkdir(t.oldPath(""), 0o755)} {
		if err != nil {
			return nil, t.abort(nil, err)
		}
	}
	if err := syncDir(t.tdir); err != nil {
		return nil, t.abort(nil, err)
	}
	return t, nil
}

// note appends lines to the journal and syncs it: it is on disk before anything it allows.
func (t *txn) note(lines ...string) error {
	if err := write(t.journal, []byte(strings.Join(lines, "\n")+"\n")); err != nil {
		return err
	}
	return t.journal.Sync()
}

// writeNew writes and syncs the new content of name in TxnDir.
func (t *txn) writeNew(name string, b []byte) error {
	f, err := os.OpenFile(t.newPath(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = write(f, b)
	if err == nil {
		err = f.Chmod(0o644) // whatever the umask: as the file it replaces was written
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// record puts the plan in the journal: from then on, a run that finds the journal can undo
// whichever steps were done.
func (t *txn) record(steps []step) error {
	if err := syncDir(t.newPath("")); err != nil {
		return err
	}
	lines := make([]string, 0, len(steps)+1)
	for _, s := range steps {
		lines = append(lines, stepLine(s))
	}
	if err := t.note(append(lines, beginLine)...); err != nil {
		return err
	}
	t.recorded = true
	return nil
}

// do makes one step: the file it replaces or removes goes to old/, the new one into place.
func (t *txn) do(s step) error {
	if s.kind != createStep {
		if err := rename(t.target(s.name), t.oldPath(s.name)); err != nil {
			return err
		}
	}
	if s.kind != removeStep {
		return rename(t.newPath(s.name), t.target(s.name))
	}
	return nil
}

// commit makes the done steps final: once the journal says so, no run undoes them. The
// backups are then removed, best effort: a run that finds them left removes them.
func (t *txn) commit() error {
	for _, d := range []string{t.dir, t.oldPath("")} {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	if err := t.note(commitLine); err != nil {
		return err
	}
	t.recorded = false
	t.journal.Close()
	t.cleanup()
	return nil
}

// abort undoes the recorded steps that were done, newest first, removes TxnDir, and returns
// err with whatever it could not do named: a file it could not restore is still in TxnDir,
// and the next transaction on dir retries.
func (t *txn) abort(steps []step, err error) error {
	var left []string
	if t.recorded {
		// Said first, as a failed commit may have left its line: no run finishes this one.
		t.note("", abortLine)
		_, _, left = t.rollback(steps)
		if len(left) == 0 {
			t.note("", undoneLine) // a partial line before it is ignored; if this fails, undoing again is harmless
		}
	}
	if t.journal != nil {
		t.journal.Close()
	}
	if len(left) == 0 {
		if cerr := t.cleanup(); cerr != nil {
			left = append(left, cerr.Error())
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%w; undoing the write was incomplete: %s (the next lossgen run on %s retries)", err, strings.Join(left, "; "), t.dir)
	}
	return err
}

// rollback undoes whichever of the recorded steps were done, newest first, telling them by
// the files left (so it also undoes the steps of a killed run): a backup in old/ goes back to
// its place, and a created file whose new/ copy is gone (it was renamed into place) is
// removed. It returns the files it restored and removed, and what it could not do.
func (t *txn) rollback(steps []step) (restored, removed, left []string) {
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if s.kind == createStep {
			if exists(t.newPath(s.name)) {
				continue
			}
			switch err := remove(t.target(s.name)); {
			case err == nil:
				removed = append(removed, s.name)
			case !errors.Is(err, os.ErrNotExist):
				left = append(left, fmt.Sprintf("could not remove the new %s (%v)", t.target(s.name), err))
			}
			continue
		}
		if !exists(t.oldPath(s.name)) {
			continue
		}
		if err := rename(t.oldPath(s.name), t.target(s.name)); err != nil {
			left = append(left, fmt.Sprintf("could not restore %s from %s (%v)", t.target(s.name), t.oldPath(s.name), err))
			continue
		}
		restored = append(restored, s.name)
	}
	return restored, removed, left
}

// cleanup removes TxnDir: the files in new/ and old/, then the journal, so that a TxnDir
// without a journal is always an empty one.
func (t *txn) cleanup() error {
	var first error
	keep := func(err error) {
		if err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	for _, sub := range []string{"new", "old"} {
		es, err := os.ReadDir(filepath.Join(t.tdir, sub))
		keep(err)
		for _, e := range es {
			keep(remove(filepath.Join(t.tdir, sub, e.Name())))
		}
		keep(remove(filepath.Join(t.tdir, sub)))
	}
	if first == nil {
		keep(remove(filepath.Join(t.tdir, journalFile)))
	}
	if first == nil {
		keep(remove(t.tdir))
	}
	if first != nil {
		return fmt.Errorf("could not remove %s (%v)", t.tdir, first)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// syncDirFile syncs an open directory; tests replace it to inject failures.
var syncDirFile = func(f *os.File) error { return f.Sync() }

// syncDir syncs a directory's entries, so that the renames and creations in it survive a
// crash. A system that cannot sync a directory (Windows; EINVAL or an unsupported-operation
// error from some network and FUSE file systems; a directory it cannot open) gives no such
// guarantee and no error; any other failure (EIO) fails the transaction.
func syncDir(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := syncDirFile(f); err != nil && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("syncing directory %s: %w", path, err)
	}
	return nil
}

// syncDirBestEffort is syncDir whose failure is ignored: for dir's entry of TxnDir, made
// before the journal exists (commit syncs dir again before the journal says done).
func syncDirBestEffort(path string) {
	if f, err := os.Open(path); err == nil {
		f.Sync()
		f.Close()
	}
}
