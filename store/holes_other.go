//go:build !linux

package store

import "io"

// dataAt cannot tell holes on this platform: ok is always false, and a
// reader reads the NULs of a hole like any others.
func dataAt(io.ReaderAt, int64) (next int64, end, ok bool) { return 0, false, false }
