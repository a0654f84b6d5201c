package proc

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DupFile returns a new descriptor of f's open file, closed on exec
// (F_DUPFD_CLOEXEC): a copy a command's ExtraFiles may own and close once
// the command started, while f stays its caller's. It returns the error
// the duplication failed with, naming f.
func DupFile(f *os.File) (*os.File, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("duplicating %s: %w", f.Name(), err)
	}
	nfd := -1
	cerr := sc.Control(func(fd uintptr) { nfd, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) })
	if cerr != nil {
		return nil, fmt.Errorf("duplicating %s: %w", f.Name(), cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("duplicating %s: %w", f.Name(), err)
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}
