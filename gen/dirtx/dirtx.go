// Package dirtx changes the files of one directory as a transaction: every file is
// written, replaced and removed, or none is, whatever fails (an error, a full disk, an
// interrupt) and even when the process is killed (the next transaction on the directory
// finishes or undoes the one that was cut short). lossgen writes generated packages
// (gen.Write) and golden case directories (cases.Update) through it.
//
// A transaction works in TxnDir, a directory it creates inside the one it changes: the new
// contents are written and synced there first (new/<name>), the plan is recorded in its
// journal, then each file replaced or removed is renamed into it (old/<name>) and each new
// file renamed out of it into place. Until every rename is done the journal lets any step
// be undone; once all are, the journal says so (the commit) and the backups are removed.
package dirtx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// TxnDir is where a transaction keeps its journal, new files and backups, inside the
// directory it changes. Go tools ignore it (its name starts with a dot); a leftover one is
// an interrupted transaction, which the next Apply or Recover on the directory resolves.
const TxnDir = ".lossgen-txn"

// Result says what Apply changed, by file name.
type Result struct {
	Written  []string // created or replaced (unchanged files are not touched)
	Removed  []string
	Repaired []string // what resolving an interrupted earlier transaction did, one line each
}

// ErrInterrupted is returned (wrapped, with the context's cause) when Apply's context ends
// before the transaction commits: the directory is then as it was.
var ErrInterrupted = errors.New("interrupted")

// rename, remove and write are what a transaction does to the file system (write appends b
// to f), replaceable by tests to inject failures and crashes.
var (
	rename = os.Rename
	remove = os.Remove
	write  = func(f *os.File, b []byte) error { _, err := f.Write(b); return err }
)

// Apply makes dir hold put (file name -> content) and no longer hold the files named in
// del, in one transaction: if any step fails or ctx ends before the commit, every step is
// undone and dir is byte for byte as it was. Files whose content is already put's are not
// touched; names in del that do not exist are ignored. Names are plain file names in dir.
// An interrupted transaction found in dir is first resolved (Result.Repaired says how).
// Apply holds an advisory lock on dir throughout: two processes writing one directory take
// turns (the last one's files win), and neither undoes the other's live transaction.
// Apply changes nothing but the named files and its own TxnDir: callers decide which files
// are theirs to replace or remove. The directories Apply creates for dir are removed again
// when it fails, so a failed first generation leaves no empty package directory behind.
func Apply(ctx context.Context, dir string, put map[string][]byte, del []string) (res Result, err error) {
	for _, name := range append(slices.Collect(maps.Keys(put)), del...) {
		if name == "" || name == "." || name == ".." || name != filepath.Base(name) || name == TxnDir || strings.ContainsRune(name, '/') {
			return res, fmt.Errorf("%q is not a file name in %s", name, dir)
		}
	}
	created, err := missingDirs(dir)
	if err != nil {
		return res, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		removeEmpty(created)
		return res, err
	}
	defer func() {
		if err != nil {
			removeEmpty(created)
		}
	}()
	unlock, err := lock(dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	repaired, _, err := recoverLocked(dir)
	res.Repaired = repaired
	if err != nil {
		return res, err
	}
	steps, err := plan(dir, put, del)
	if err != nil || len(steps) == 0 {
		return res, err
	}
	if err := interrupted(ctx, dir); err != nil {
		return res, err
	}
	t, err := begin(dir, len(created))
	if err != nil {
		return res, err
	}
	for _, s := range steps {
		if s.kind != removeStep {
			if err := t.writeNew(s.name, put[s.name]); err != nil {
				return res, t.abort(steps, fmt.Errorf("writing %s: %w", filepath.Join(dir, s.name), err))
			}
		}
	}
	if err := t.record(steps); err != nil {
		return res, t.abort(steps, err)
	}
	for _, s := range steps {
		if err := interrupted(ctx, dir); err != nil {
			return res, t.abort(steps, err)
		}
		if err := t.do(s); err != nil {
			return res, t.abort(steps, err)
		}
	}
	if err := t.commit(); err != nil {
		return res, t.abort(steps, err)
	}
	for _, s := range steps {
		if s.kind == removeStep {
			res.Removed = append(res.Removed, s.name)
		} else {
			res.Written = append(res.Written, s.name)
		}
	}
	return res, nil
}

// missingDirs lists dir and those of its parents that do not exist yet, innermost first:
// the directories MkdirAll(dir) would create. When the nearest one that exists is a file it
// says so in the user's terms (the system's "not a directory" would name lossgen's TxnDir
// inside it).
func missingDirs(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err != nil { // absent, or under a file (ENOTDIR)
			missing = append(missing, d)
			if filepath.Dir(d) == d {
				return missing, nil
			}
			continue
		}
		switch fi, err := os.Stat(d); {
		case err != nil || fi.IsDir():
			return missing, nil
		case len(missing) == 0:
			return nil, fmt.Errorf("%s is a file, not a directory", dir)
		default:
			return nil, fmt.Errorf("%s is a file, so the directory %s cannot be made in it", d, dir)
		}
	}
}

// removeEmpty removes the directories dirs (innermost first) while they are empty; a
// directory something else wrote to in the meantime stays, with its parents.
func removeEmpty(dirs []string) {
	for _, d := range dirs {
		if os.Remove(d) != nil {
			return
		}
	}
}

// interrupted is ErrInterrupted, with ctx's cause, once ctx has ended.
func interrupted(ctx context.Context, dir string) error {
	if ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w (%v): %s left as it was", ErrInterrupted, context.Cause(ctx), dir)
}

// stepKind is what a step does to its file.
type stepKind string

const (
	createStep  stepKind = "create"  // a new file
	replaceStep stepKind = "replace" // a new content for an existing file
	removeStep  stepKind = "remove"
)

// step is one file's change.
type step struct {
	kind stepKind
	name string
}

// plan lists the steps that make dir hold put and not del, creations and replacements in
// name order, then removals.
func plan(dir string, put map[string][]byte, del []string) ([]step, error) {
	var steps []step
	for _, name := range slices.Sorted(maps.Keys(put)) {
		target := filepath.Join(dir, name)
		fi, err := os.Lstat(target)
		switch {
		case errors.Is(err, os.ErrNotExist):
			steps = append(steps, step{createStep, name})
			continue
		case err != nil:
			return nil, err
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("%s exists and is not a regular file", target)
		}
		old, err := os.ReadFile(target)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(old, put[name]) {
			steps = append(steps, step{replaceStep, name})
		}
	}
	for _, name := range slices.Sorted(slices.Values(del)) {
		if _, ok := put[name]; ok {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, err
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("%s is not a regular file", filepath.Join(dir, name))
		default:
			steps = append(steps, step{removeStep, name})
		}
	}
	return slices.CompactFunc(steps, func(a, b step) bool { return a == b }), nil
}
