//go:build !unix

package regfile

import "os"

// OpenNonblocking opens path for reading; the callers examine the path
// first, and these systems have no named pipes in the file system.
func OpenNonblocking(path string) (*os.File, error) { return os.Open(path) }
