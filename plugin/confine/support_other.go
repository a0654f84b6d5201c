//go:build !linux

package confine

import "github.com/obversa/obversa/internal/cgroup"

func detect() Support {
	return Support{LandlockReason: "Landlock needs Linux", Cgroup: cgroup.Info{Reason: "control groups need Linux"}}
}
