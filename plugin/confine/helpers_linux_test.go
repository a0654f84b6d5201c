package confine

import (
	"strconv"
	"syscall"
)

func sysProcAttr(unshare uintptr) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Unshareflags: unshare}
}

func fmtInt(n int) string { return strconv.Itoa(n) }
