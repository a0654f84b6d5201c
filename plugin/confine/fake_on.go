//go:build failpoints

package confine

import (
	"os"
	"slices"
	"strings"

	"github.com/obversa/obversa/internal/cgroup"
)

// FakeKernelEnv, in test builds only (-tags failpoints), hides kernel
// features from Detect: a comma-separated list of "nolandlock" and
// "nocgroup", so that the reports and refusals of a kernel without them
// can be tested on one that has them.
const FakeKernelEnv = "OBVERSA_FAKE_KERNEL"

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
