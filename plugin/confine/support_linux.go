package confine

import (
	"errors"
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/internal/cgroup"
)

func detect() Support {
	var s Support
	abi, err := ll.LandlockGetABIVersion()
	switch {
	case err == nil && abi > 0:
		s.LandlockABI = abi
	case errors.Is(err, unix.ENOSYS):
		s.LandlockReason = "kernel lacks Landlock"
	case errors.Is(err, unix.EOPNOTSUPP):
		s.LandlockReason = "kernel lacks Landlock (built in but not enabled: add landlock to the lsm= boot parameter)"
	case err != nil:
		s.LandlockReason = fmt.Sprintf("kernel lacks Landlock (%v)", err)
	default:
		s.LandlockReason = "kernel lacks Landlock"
	}
	info, err := cgroup.Self()
	if err != nil {
		info.Reason = fmt.Sprintf("cannot read this process's control groups: %v", err)
	}
	s.Cgroup = info
	return fake(s)
}
