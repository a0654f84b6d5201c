//go:build failpoints

package confine

import (
	"os"
	"slices"
	"strings"

	"github.com/obversa/obversa/internal/cgroup"
)

func fake(s Support) Support {
	hide := strings.Split(os.Getenv(FakeKernelEnv), ",")
	if slices.Contains(hide, "nolandlock") {
		s.LandlockABI, s.LandlockReason = 0, "kernel lacks Landlock"
	}
	if slices.Contains(hide, "nocgroup") {
		s.Cgroup.Memory, s.Cgroup.Reason = cgroup.MemoryNone, "kernel lacks a memory cgroup controller"
	}
	return s
}
