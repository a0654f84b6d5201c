//go:build !unix

package plugin

import "os"

// openNonblocking opens path read-only; named pipes are not files here.
func openNonblocking(path string) (*os.File, error) { return os.Open(path) }
