package confine

import (
	"fmt"
	"sync"

	"github.com/obversa/obversa/internal/cgroup"
)

// FakeKernelEnv, in test builds only (-tags failpoints), hides kernel
// features from Detect: a comma-separated list of "nolandlock" and
// "nocgroup", so that the reports and refusals of a kernel without them
// can be tested on one that has them. Release builds ignore it.
const FakeKernelEnv = "OBVERSA_FAKE_KERNEL"

// MinNetworkABI is the first Landlock ABI with TCP rules.
const MinNetworkABI = 4

// Support is what this machine's kernel offers for confinement.
type Support struct {
	// LandlockABI is the kernel's Landlock ABI version; 0 = none.
	LandlockABI int `json:"landlock_abi"`
	// LandlockReason says, when LandlockABI is 0, why.
	LandlockReason string `json:"landlock_reason,omitempty"`
	// Cgroup is where this process's control groups are and which
	// controller limits memory.
	Cgroup cgroup.Info `json:"cgroup"`
	// MountNS is true when this process may give a plugin a mount
	// namespace of its own (it holds CAP_SYS_ADMIN): the protected trees
	// are then mounted read-only there, and the trees that hold them stay
	// writable as a whole (docs/confinement.md).
	MountNS bool `json:"mount_ns"`
}

var (
	detectOnce sync.Once
	detected   Support
)

// Detect returns this machine's Support, probed once per process.
func Detect() Support {
	detectOnce.Do(func() {
		detected = detect()
	})
	return detected
}

// String says in one line what the kernel offers, e.g. "Landlock ABI 7,
// memory limits by cgroup v1" or "none (kernel lacks Landlock)".
func (s Support) String() string {
	mem := "no memory limits (" + s.Cgroup.Reason + ")"
	if s.Cgroup.Memory != cgroup.MemoryNone {
		mem = "memory limits by " + string(s.Cgroup.Memory)
	}
	if s.LandlockABI == 0 {
		return fmt.Sprintf("none (%s); %s", s.LandlockReason, mem)
	}
	return fmt.Sprintf("Landlock ABI %d, %s", s.LandlockABI, mem)
}

// Missing lists, in words, what s cannot enforce of spec: Landlock itself,
// TCP rules when spec denies the network, a memory controller when spec
// sets a limit. Empty when everything is enforced.
func (s Support) Missing(spec Spec) []string {
	var out []string
	switch {
	case s.LandlockABI == 0:
		out = append(out, "file system and network rules: "+s.LandlockReason)
	case !spec.Network && s.LandlockABI < MinNetworkABI:
		out = append(out, fmt.Sprintf("network rules: Landlock ABI %d has no TCP rules (ABI %d or later has)", s.LandlockABI, MinNetworkABI))
	}
	if spec.MemoryBytes > 0 && s.Cgroup.Memory == cgroup.MemoryNone {
		out = append(out, "memory limit: "+s.Cgroup.Reason)
	}
	return out
}
