package watchdog

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/internal/regfile"
)

// ReserveFile is the file, in a run's directory, that holds room for the
// watchdog's own record of a full device: while a worker runs it takes
// reserveBytes, and a watchdog whose append fails with STORAGE_FULL
// removes it and appends again, so that the run's pause is recorded even
// when the device filled up to the last byte (docs/decisions.md, "Storage
// faults pause the run").
const ReserveFile = "space.reserve"

// reserveBytes is the room kept: the pause and its cleanup record are a
// few KiB (a watchdog's message is cut to 4 KiB).
const reserveBytes = 64 << 10

// reserve is one run directory's reserve file.
type reserve struct {
	path string
}

func newReserve(runDir string) *reserve {
	return &reserve{path: filepath.Join(runDir, ReserveFile)}
}

// ensure makes the reserve file hold reserveBytes, allocated on the
// device: fallocate, else written zeros and synced. It fails when the
// device has no such room; the run then goes on without it.
//
// fallocate takes the blocks from the file system's free space at once,
// which is all the reserve is for, so that file is not synced: a sync
// would make the allocation survive a crash of the machine, and the next
// watchdog of the run makes the file again anyway. Written zeros are
// synced, since a file system may allocate their blocks only when it
// writes them back (docs/decisions.md, "Storage faults pause the run").
// The sync was one of the four before a run's first dispatch.
func (r *reserve) ensure() error {
	if r == nil {
		return nil
	}
	if fi, err := os.Stat(r.path); err == nil && fi.Size() >= reserveBytes {
		return nil
	}
	f, err := regfile.OpenFile(r.path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = allocate(f, reserveBytes)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		if _, err = f.WriteAt(make([]byte, reserveBytes), 0); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(r.path)
	}
	return err
}

// release removes the reserve file, freeing its room; it reports whether
// there was one to remove.
func (r *reserve) release() bool {
	return r != nil && os.Remove(r.path) == nil
}
