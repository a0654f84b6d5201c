package main

import "golang.org/x/sys/unix"

// datasync is fdatasync(2), the store's sync of an append.
func datasync(fd int) error { return unix.Fdatasync(fd) }
