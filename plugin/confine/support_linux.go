package confine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

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
	s.MountNS = hasCapability(unix.CAP_SYS_ADMIN)
	return fake(s)
}

// hasCapability reports whether the capability is in this process's
// effective set (CapEff of /proc/self/status).
func hasCapability(c int) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && n&(1<<uint(c)) != 0
		}
	}
	return false
}
