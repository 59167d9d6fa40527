//go:build !linux

package runtime

// HugePages does nothing here: transparent huge pages are a Linux setting (see the Linux
// version).
func HugePages[T any](s []T) {}
