//go:build !unix

package regfile

import (
	"io/fs"
	"os"
)

// OpenNonblocking opens path for reading; the callers examine the path
// first, and these systems have no named pipes in the file system.
func OpenNonblocking(path string) (*os.File, error) { return os.Open(path) }

// openNonblocking is os.OpenFile: these systems have no named pipes in
// the file system.
func openNonblocking(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// clearNonblock has nothing to clear here.
func clearNonblock(*os.File) error { return nil }
