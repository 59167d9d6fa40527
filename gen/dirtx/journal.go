package dirtx

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The journal, TxnDir/journal, is lines: the header, createdLine when the transaction
// created dir (and how many of its parents), then (once the new files are written)
// one line per step and beginLine, then commitLine once every step is done; a failed
// transaction adds abortLine (which cancels a commitLine before it, one whose write
// failed) and, once its steps are undone, undoneLine. Lines it does not know are ignored
// (a partial one written as the disk filled).
const (
	journalFile   = "journal"
	journalHeader = "lossgen transaction 1"
	beginLine     = "begin"
	commitLine    = "commit"
	abortLine     = "abort"
	undoneLine    = "undone"
	createdLine   = "created dirs" // followed by their number: dir, its parent, ...
)

// stepLine is a step's journal line: its kind and quoted file name.
func stepLine(s step) string { return string(s.kind) + " " + strconv.Quote(s.name) }

// journal is what a journal records.
type journal struct {
	steps                    []step
	begun, committed, undone bool
	created                  int // the directories the transaction created: dir, its parent, ...
}

// readJournal parses TxnDir's journal.
func readJournal(path string) (*journal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	if !sc.Scan() || sc.Text() != journalHeader {
		return nil, errors.New("not a lossgen journal")
	}
	j := &journal{}
	for sc.Scan() {
		line := sc.Text()
		switch line {
		case beginLine:
			j.begun = true
			continue
		case commitLine:
			j.committed = true
			continue
		case abortLine:
			j.committed = false
			continue
		case undoneLine:
			j.undone = true
			continue
		}
		if n, ok := strings.CutPrefix(line, createdLine+" "); ok && !j.begun {
			j.created, _ = strconv.Atoi(n)
			continue
		}
		kind, quoted, _ := strings.Cut(line, " ")
		name, err := strconv.Unquote(quoted)
		if j.begun || err != nil || name == "" || name != filepath.Base(name) || name == "." || name == ".." {
			continue
		}
		switch k := stepKind(kind); k {
		case createStep, replaceStep, removeStep:
			j.steps = append(j.steps, step{k, name})
		}
	}
	return j, nil
}

// Recover resolves a transaction on dir that was cut short (the process killed, or the
// machine stopped): one that had committed is finished (its backups removed), any other
// undone (each file it replaced or removed restored, each it created removed), and its
// TxnDir removed. It returns what it did, one line each, and nothing when dir holds no
// TxnDir. It waits for a transaction another process is running on dir (an advisory lock
// on dir, as Apply holds), so that it never takes a live one for an interrupted one.
func Recover(dir string) ([]string, error) {
	if missing, err := missingDirs(dir); err != nil || len(missing) > 0 {
		return nil, err // nothing to resolve in a directory that is not there
	}
	unlock, err := lock(dir)
	if err != nil {
		return nil, err
	}
	did, created, err := recoverLocked(dir)
	unlock()
	if err == nil && created > 0 {
		// The transaction that created dir changed nothing in the end: the directories go
		// too, if nothing else came into them (removeEmpty leaves a directory that holds
		// anything).
		dirs := []string{dir}
		for d := dir; len(dirs) < created; dirs = append(dirs, d) {
			d = filepath.Dir(d)
		}
		removeEmpty(dirs)
	}
	return did, err
}

// recoverLocked is Recover with dir's lock held. created is how many directories (dir, its
// parent, ...) an interrupted transaction that did not commit had created, for Recover to
// remove; Apply, which is about to write dir, leaves them.
func recoverLocked(dir string) (did []string, created int, err error) {
	t := &txn{dir: dir, tdir: filepath.Join(dir, TxnDir)}
	fi, err := os.Lstat(t.tdir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, 0, nil
	case err != nil:
		return nil, 0, err
	case !fi.IsDir():
		return nil, 0, fmt.Errorf("%s is not lossgen's (not a directory): move it away", t.tdir)
	}
	jpath := filepath.Join(t.tdir, journalFile)
	j, err := readJournal(jpath)
	if fi, serr := os.Lstat(jpath); errors.Is(err, os.ErrNotExist) || serr == nil && fi.Size() == 0 {
		// Only a TxnDir that holds nothing but an empty journal, or nothing, has no header:
		// created by a run killed at once, or left by one killed as it removed it.
		if es, rerr := os.ReadDir(t.tdir); rerr != nil || len(es) > 1 || len(es) == 1 && es[0].Name() != journalFile {
			return nil, 0, fmt.Errorf("%s is not lossgen's (no journal): move it away", t.tdir)
		}
		if err := t.cleanup(); err != nil {
			return nil, 0, err
		}
		return []string{fmt.Sprintf("%s: removed the empty %s of an interrupted write", dir, TxnDir)}, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s is not lossgen's (%v): move it away", t.tdir, err)
	}
	var line string
	switch {
	case j.committed:
		line = fmt.Sprintf("%s: finished an interrupted write, which had written every file (removed its backups in %s)", dir, TxnDir)
	case j.undone:
		line = fmt.Sprintf("%s: removed %s, left by a failed write that had been undone", dir, TxnDir)
	case !j.begun:
		line = fmt.Sprintf("%s: removed the temporary files of an interrupted write, which had changed nothing", dir)
	default:
		restored, removed, left := t.rollback(j.steps)
		if len(left) > 0 {
			return nil, 0, fmt.Errorf("%s: could not undo an interrupted write: %s", dir, strings.Join(left, "; "))
		}
		if f, err := os.OpenFile(filepath.Join(t.tdir, journalFile), os.O_WRONLY|os.O_APPEND, 0); err == nil {
			t.journal = f
			t.note("", undoneLine)
			f.Close()
		}
		var parts []string
		if len(restored) > 0 {
			parts = append(parts, "restored "+strings.Join(slices.Sorted(slices.Values(restored)), ", "))
		}
		if len(removed) > 0 {
			parts = append(parts, "removed "+strings.Join(slices.Sorted(slices.Values(removed)), ", "))
		}
		line = fmt.Sprintf("%s: undid an interrupted write", dir)
		if len(parts) > 0 {
			line += ": " + strings.Join(parts, "; ")
		}
	}
	if err := t.cleanup(); err != nil {
		return nil, 0, fmt.Errorf("%s: resolving an interrupted write: %w", dir, err)
	}
	if !j.committed {
		created = j.created
	}
	return []string{line}, created, nil
}

// Pending reports whether dir holds an interrupted transaction (a TxnDir).
func Pending(dir string) bool { return exists(filepath.Join(dir, TxnDir)) }
