//go:build unix

package regfile

import (
	"fmt"
	"os"
	"syscall"
)

// Map maps a regular file of at most max bytes read-only into memory,
// examined as Read examines it, and returns its bytes and the function
// that unmaps them. A page is read when first touched, and the kernel
// maps the pages around it with it, so the bytes cost no copy and no
// fault of their own each, where Read fills a buffer of fresh pages. A
// read of the bytes after unmap faults, and so does one past the end of
// a file cut shorter meanwhile (SIGBUS): a reader that must survive a
// file changed under it reads them with debug.SetPanicOnFault. An empty
// file is an empty slice. Errors: Read's, and mmap's (*os.SyscallError).
func Map(path string, max int64) (b []byte, unmap func(), err error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := info.Size()
	if size > max {
		return nil, nil, fmt.Errorf("%w: %d bytes is more than the limit of %d bytes", ErrTooLarge, size, max)
	}
	if size == 0 {
		return []byte{}, func() {}, nil
	}
	b, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, os.NewSyscallError("mmap", err)
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}
