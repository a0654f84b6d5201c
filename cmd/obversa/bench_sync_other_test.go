//go:build !linux

package main

import "golang.org/x/sys/unix"

// datasync is fsync(2), which the store uses where there is no
// fdatasync(2).
func datasync(fd int) error { return unix.Fsync(fd) }
