//go:build !unix

package dirtx

// lock is a no-op where flock is not available: concurrent writers of one directory are
// not serialised there.
func lock(dir string) (unlock func(), err error) { return func() {}, nil }
