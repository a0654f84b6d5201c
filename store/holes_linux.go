package store

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// dataAt returns the offset of the first byte at or after off that is not
// in a hole of the file ra reads (lseek(2) SEEK_DATA on its descriptor):
// a hole reads as NULs, so a reader skipping NULs may jump over it
// without reading it. end is true when only a hole follows off; ok is
// false when ra has no descriptor or its file system cannot say. It moves
// the descriptor's file offset, which the store never reads or writes by
// (batches and reads go by pwrite(2) and pread(2)).
func dataAt(ra io.ReaderAt, off int64) (next int64, end, ok bool) {
	f, has := ra.(interface{ Fd() uintptr })
	if !has {
		return 0, false, false
	}
	next, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO):
		return 0, true, true
	case err != nil:
		return 0, false, false
	}
	return next, false, true
}
