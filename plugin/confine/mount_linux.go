package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// unshareMountNS starts the shim in a mount namespace of its own.
const unshareMountNS = unix.CLONE_NEWNS

// protectMounts, in the shim's own mount namespace, stops mount events
// from flowing back to the host, mounts every read-only tree read-only
// over itself and every rebound tree writable over itself again, then
// drops CAP_SYS_ADMIN from the bounding set, so the plugin — root or not —
// can neither undo the mounts nor enter another mount namespace. Landlock,
// applied next, forbids changing mounts as well.
func protectMounts(readOnly, rebind []string) error {
	if len(readOnly) == 0 {
		return nil
	}
	if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("making the plugin's mounts private: %w", err)
	}
	for _, p := range readOnly {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("mounting %s read-only: %w", p, err)
		}
	}
	for _, p := range rebind {
		if err := unix.Mount(p, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding %s writable: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT, ""); err != nil {
			return fmt.Errorf("mounting %s writable: %w", p, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_ADMIN, 0, 0, 0); err != nil {
		return fmt.Errorf("dropping CAP_SYS_ADMIN: %w", err)
	}
	return nil
}
