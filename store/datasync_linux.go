package store

import "golang.org/x/sys/unix"

// datasyncOp names the call datasync makes, for its errors.
const datasyncOp = "fdatasync"

// datasync is fdatasync(2): the file's data and the metadata needed to
// read it back, without its timestamps.
func datasync(fd int) error { return unix.Fdatasync(fd) }
