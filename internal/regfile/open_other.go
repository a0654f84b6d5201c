//go:build !unix

package regfile

import "os"

// openNonblocking opens path for reading; the callers examine the path
// first, and these systems have no named pipes in the file system.
func openNonblocking(path string) (*os.File, error) { return os.Open(path) }
