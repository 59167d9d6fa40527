package dirtx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lossgen/lossgen/internal/testdir"
)

var (
	snapshot = testdir.Snapshot
	writeAll = testdir.WriteAll
)

// inject runs act before every rename, remove, write and directory sync of a transaction (n counts them
// from 0), for the rest of the test: the operation fails with act's error if it returns
// one; act may also panic, which stops the transaction where it is, as a killed process.
func inject(t *testing.T, act func(n int, path string) error) *int {
	t.Helper()
	calls := 0
	before := func(path string) error {
		defer func() { calls++ }()
		return act(calls, path)
	}
	rename = func(from, to string) error {
		if err := before(from); err != nil {
			return err
		}
		return os.Rename(from, to)
	}
	remove = func(path string) error {
		if err := before(path); err != nil {
			return err
		}
		return os.Remove(path)
	}
	write = func(f *os.File, b []byte) error {
		if err := before(f.Name()); err != nil {
			return err
		}
		_, err := f.Write(b)
		return err
	}
	syncDirFile = func(f *os.File) error {
		if err := before(f.Name()); err != nil {
			return err
		}
		return f.Sync()
	}
	t.Cleanup(func() { uninject() })
	return &calls
}

// uninject restores the real operations.
func uninject() {
	rename, remove = os.Rename, os.Remove
	write = func(f *os.File, b []byte) error { _, err := f.Write(b); return err }
	syncDirFile = func(f *os.File) error { return f.Sync() }
}

var errInjected = errors.New("injected failure")

// crash is what an injected panic carries: the process "dies" there.
type crash struct{}

// crashed runs f and reports whether it stopped at an injected crash.
func crashed(f func()) (died bool) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(crash); !ok {
				panic(p)
			}
			died = true
		}
	}()
	f()
	return false
}

// A transaction that replaces a.go, creates b.go, keeps c.go, removes s1.go and s2.json,
// ignores missing.go, and leaves the user's files alone, .lossgen-like names included.
var (
	put = map[string][]byte{
		"a.go": []byte("new a\n"),
		"b.go": []byte("new b\n"),
		"c.go": []byte("same c\n"),
	}
	del    = []string{"s1.go", "s2.json", "missing.go"}
	before = map[string]string{
		"a.go": "old a\n", "c.go": "same c\n", "s1.go": "stale 1\n", "s2.json": "stale 2\n",
		"user.go": "mine\n", ".lossgen-old-a.go": "mine too\n", ".lossgen-new-b.go": "and this\n",
	}
	after = map[string]string{
		"a.go": "new a\n", "b.go": "new b\n", "c.go": "same c\n",
		"user.go": "mine\n", ".lossgen-old-a.go": "mine too\n", ".lossgen-new-b.go": "and this\n",
	}
)

// fixture is a directory holding before.
func fixture(t *testing.T) string {
	dir := t.TempDir()
	writeAll(t, dir, before)
	return dir
}

func TestApply(t *testing.T) {
	dir := fixture(t)
	res, err := Apply(context.Background(), dir, put, del)
	require.NoError(t, err)
	require.Equal(t, after, snapshot(t, dir))
	require.Equal(t, []string{"a.go", "b.go"}, res.Written)
	require.Equal(t, []string{"s1.go", "s2.json"}, res.Removed)
	require.Empty(t, res.Repaired)

	res, err = Apply(context.Background(), dir, put, del)
	require.NoError(t, err)
	require.Equal(t, Result{}, res, "nothing to do")
}

// Whichever rename, remove or write fails (a full disk fails writes), Apply either fails
// leaving the directory as it was, or succeeds with exactly the new files, at worst
// leaving its TxnDir when removing it failed after the commit, which the next run removes.
func TestApplyEveryFailurePoint(t *testing.T) {
	for k := 0; ; k++ {
		dir := fixture(t)
		calls := inject(t, func(n int, _ string) error {
			if n == k {
				return syscall.ENOSPC
			}
			return nil
		})
		_, err := Apply(context.Background(), dir, put, del)
		uninject()
		if *calls <= k { // no call failed: every failure point has been tried
			require.NoError(t, err)
			require.Equal(t, after, snapshot(t, dir))
			require.Greater(t, k, 10, "the transaction made too few calls to test anything")
			return
		}
		if err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC, "failure at call %d", k)
			require.NotContains(t, err.Error(), "incomplete", "failure at call %d", k)
			require.Equal(t, before, snapshot(t, dir), "failure at call %d", k)
			continue
		}
		got := snapshot(t, dir)
		if _, left := got[TxnDir]; left {
			delete(got, TxnDir)
			require.Equal(t, after, got, "failure at call %d", k)
			lines, err := Recover(dir)
			require.NoError(t, err)
			require.Len(t, lines, 1)
		}
		require.Equal(t, after, snapshot(t, dir), "failure at call %d", k)
	}
}

// A failed transaction into a directory that did not exist (a first generation on a full
// disk) removes the directories it created: the user's tree is as it was.
func TestApplyFailureRemovesCreatedDirs(t *testing.T) {
	for k := 0; ; k++ {
		parent := t.TempDir()
		dir := filepath.Join(parent, "gen", "pkg")
		calls := inject(t, func(n int, _ string) error {
			if n == k {
				return syscall.ENOSPC
			}
			return nil
		})
		_, err := Apply(context.Background(), dir, put, nil)
		uninject()
		if *calls <= k {
			require.NoError(t, err)
			require.Equal(t, map[string]string{"a.go": "new a\n", "b.go": "new b\n", "c.go": "same c\n"}, snapshot(t, dir))
			require.Greater(t, k, 3)
			return
		}
		if err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC, "failure at call %d", k)
			entries, rerr := os.ReadDir(parent)
			require.NoError(t, rerr)
			require.Empty(t, entries, "failure at call %d left %v", k, entries)
		}
	}
}

// A process killed at any point of a transaction (SIGKILL, a power cut) leaves the
// directory for the next run to repair: Recover makes it exactly what it was, or what the
// transaction wrote when it had committed, and says what it did; Apply after the crash
// recovers and writes.
func TestApplyCrashAtEveryPoint(t *testing.T) {
	for k := 0; ; k++ {
		for _, again := range []bool{false, true} {
			dir := fixture(t)
			calls := inject(t, func(n int, _ string) error {
				if n == k {
					panic(crash{})
				}
				return nil
			})
			died := crashed(func() { Apply(context.Background(), dir, put, del) })
			uninject()
			if !died {
				require.Greater(t, k, 10, "the transaction made too few calls to test anything")
				require.LessOrEqual(t, *calls, k)
				require.Equal(t, after, snapshot(t, dir))
				return
			}
			left := Pending(dir)
			if again {
				res, err := Apply(context.Background(), dir, put, del)
				require.NoError(t, err, "crash at call %d", k)
				require.Equal(t, after, snapshot(t, dir), "crash at call %d", k)
				require.Equal(t, left, len(res.Repaired) == 1, "crash at call %d: %q", k, res.Repaired)
				continue
			}
			lines, err := Recover(dir)
			require.NoError(t, err, "crash at call %d", k)
			require.Equal(t, left, len(lines) == 1, "crash at call %d: %q", k, lines)
			if end := snapshot(t, dir); !equal(end, before) {
				require.Equal(t, after, end, "crash at call %d: neither as it was nor as written", k)
			}
		}
	}
}

// A first generation into directories it creates, killed at any point: Recover leaves the
// user's tree as it was, the directories gone, unless the transaction had committed (or
// had not yet written the first line of its journal, which records them).
func TestRecoverRemovesCreatedDirs(t *testing.T) {
	for k := 0; ; k++ {
		parent := t.TempDir()
		dir := filepath.Join(parent, "gen", "pkg")
		calls := inject(t, func(n int, _ string) error {
			if n == k {
				panic(crash{})
			}
			return nil
		})
		died := crashed(func() { Apply(context.Background(), dir, put, nil) })
		uninject()
		if !died {
			require.Greater(t, k, 5, "the transaction made too few calls to test anything")
			require.LessOrEqual(t, *calls, k)
			return
		}
		_, err := Recover(dir)
		require.NoError(t, err, "crash at call %d", k)
		if k == 0 {
			// Killed before the journal's first write: nothing says who made the directories,
			// so they stay, empty.
			require.Empty(t, snapshot(t, dir))
			continue
		}
		if exists(dir) {
			require.Equal(t, map[string]string{"a.go": "new a\n", "b.go": "new b\n", "c.go": "same c\n"}, snapshot(t, dir), "crash at call %d: the directory stayed, so the write had committed", k)
			continue
		}
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		require.Empty(t, entries, "crash at call %d left %v", k, entries)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A killed run that had renamed some files (the old package's moved aside, some new ones
// in place: a directory that holds two packages) is undone by the next run, which names
// what it restored.
func TestRecoverUndoesHalfDoneWrite(t *testing.T) {
	dir := fixture(t)
	inject(t, func(n int, path string) error {
		if strings.HasSuffix(path, filepath.Join("old", "s1.go")) || filepath.Base(path) == "s1.go" {
			panic(crash{}) // a.go and b.go are in place, the stale files not yet removed
		}
		return nil
	})
	require.True(t, crashed(func() { Apply(context.Background(), dir, put, del) }))
	uninject()
	mid := snapshot(t, dir)
	require.Equal(t, "new a\n", mid["a.go"])
	require.Equal(t, "stale 1\n", mid["s1.go"])
	require.Contains(t, mid, TxnDir)
	lines, err := Recover(dir)
	require.NoError(t, err)
	require.Equal(t, []string{dir + ": undid an interrupted write: restored a.go; removed b.go"}, lines)
	require.Equal(t, before, snapshot(t, dir))
}

// A context that ends (lossgen's SIGINT and SIGTERM handler) at any point before the
// commit undoes the transaction; after it, the transaction completes. Nothing is left.
func TestApplyInterruptAtEveryPoint(t *testing.T) {
	for k := 0; ; k++ {
		dir := fixture(t)
		ctx, cancel := context.WithCancelCause(context.Background())
		calls := inject(t, func(n int, _ string) error {
			if n == k {
				cancel(errors.New("signal: interrupt"))
			}
			return nil
		})
		_, err := Apply(ctx, dir, put, del)
		uninject()
		if *calls <= k {
			require.NoError(t, err)
			require.Equal(t, after, snapshot(t, dir))
			return
		}
		if err != nil {
			require.ErrorIs(t, err, ErrInterrupted, "interrupt at call %d", k)
			require.ErrorContains(t, err, "signal: interrupt")
			require.Equal(t, before, snapshot(t, dir), "interrupt at call %d", k)
			continue
		}
		require.Equal(t, after, snapshot(t, dir), "interrupt at call %d", k)
	}
}

// When undoing a failed write cannot put a file back, the error says where the original
// is, it is there, and the next run puts it back.
func TestApplyFailedRollbackNamesBackups(t *testing.T) {
	dir := fixture(t)
	inject(t, func(_ int, path string) error {
		if filepath.Base(path) == "s2.json" || strings.Contains(path, filepath.Join(TxnDir, "old")) {
			return errInjected
		}
		return nil
	})
	_, err := Apply(context.Background(), dir, put, del)
	require.ErrorIs(t, err, errInjected)
	backup := filepath.Join(dir, TxnDir, "old", "a.go")
	require.ErrorContains(t, err, "could not restore "+filepath.Join(dir, "a.go")+" from "+backup)
	b, rerr := os.ReadFile(backup)
	require.NoError(t, rerr)
	require.Equal(t, "old a\n", string(b))
	uninject()
	lines, err := Recover(dir)
	require.NoError(t, err)
	require.Len(t, lines, 1)
	require.Equal(t, before, snapshot(t, dir))
}

// A TxnDir that is not lossgen's is an error, and is left alone with everything else.
func TestRecoverLeavesForeignTxnDir(t *testing.T) {
	for _, mk := range []func(string) error{
		func(p string) error { return os.WriteFile(p, []byte("mine"), 0o644) },
		func(p string) error {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(p, "notes"), []byte("mine"), 0o644)
		},
		func(p string) error {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(p, journalFile), []byte("my journal\n"), 0o644)
		},
	} {
		dir := fixture(t)
		require.NoError(t, mk(filepath.Join(dir, TxnDir)))
		was := snapshot(t, dir)
		_, err := Apply(context.Background(), dir, put, del)
		require.ErrorContains(t, err, "move it away")
		require.Equal(t, was, snapshot(t, dir))
	}
}

func TestApplyRejectsPaths(t *testing.T) {
	dir := fixture(t)
	for _, name := range []string{"../x.go", "sub/x.go", TxnDir, "", ".."} {
		_, err := Apply(context.Background(), dir, map[string][]byte{name: []byte("x")}, nil)
		require.ErrorContains(t, err, "is not a file name")
		_, err = Apply(context.Background(), dir, nil, []string{name})
		require.ErrorContains(t, err, "is not a file name")
	}
	require.Equal(t, before, snapshot(t, dir))
}

// A directory under a file, or a file where the directory should be, is named as such.
func TestApplyUnderAFile(t *testing.T) {
	parent := t.TempDir()
	f := filepath.Join(parent, "f")
	require.NoError(t, os.WriteFile(f, []byte("mine\n"), 0o644))
	_, err := Apply(context.Background(), filepath.Join(f, "pkg"), put, nil)
	require.EqualError(t, err, f+" is a file, so the directory "+filepath.Join(f, "pkg")+" cannot be made in it")
	_, err = Apply(context.Background(), f, put, nil)
	require.EqualError(t, err, f+" is a file, not a directory")
	_, err = Recover(filepath.Join(f, "pkg"))
	require.ErrorContains(t, err, " is a file, so the directory ")
	require.Equal(t, map[string]string{"f": "mine\n"}, snapshot(t, parent))
}

// Two writers of one directory at once take turns: both succeed, the directory ends with one
// of their file sets whole, and neither undoes the other's live transaction (before the
// lock, the adversarial trial saw both fail in one run of eight).
func TestConcurrentApplies(t *testing.T) {
	for range 20 {
		dir := fixture(t)
		other := map[string][]byte{"a.go": []byte("other a\n"), "b.go": []byte("other b\n"), "c.go": []byte("other c\n")}
		errs := make(chan error, 2)
		for _, p := range []map[string][]byte{put, other} {
			go func() {
				_, err := Apply(context.Background(), dir, p, del)
				errs <- err
			}()
		}
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		got := snapshot(t, dir)
		require.NotContains(t, got, TxnDir)
		require.Contains(t, []string{"new a\n", "other a\n"}, got["a.go"])
		want := map[string]string{"new a\n": "new b\n", "other a\n": "other b\n"}[got["a.go"]]
		require.Equal(t, want, got["b.go"], "one writer's files whole")
	}
}

// A directory sync that fails (EIO) fails the transaction, which leaves the directory as it
// was; one a file system cannot do (EINVAL, unsupported) is no error.
func TestApplyDirectorySync(t *testing.T) {
	dir := fixture(t)
	inject(t, func(_ int, path string) error {
		if path == dir {
			return syscall.EIO
		}
		return nil
	})
	_, err := Apply(context.Background(), dir, put, del)
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorContains(t, err, "syncing directory "+dir)
	require.Equal(t, before, snapshot(t, dir))

	for _, cannot := range []error{syscall.EINVAL, syscall.ENOTSUP} {
		dir := fixture(t)
		syncDirFile = func(*os.File) error { return cannot }
		t.Cleanup(uninject)
		_, err := Apply(context.Background(), dir, put, del)
		require.NoError(t, err, "%v", cannot)
		require.Equal(t, after, snapshot(t, dir))
	}
}
