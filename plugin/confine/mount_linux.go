package confine

import "golang.org/x/sys/unix"

// unshareMountNS starts the shim in a mount namespace of its own, where
// it mounts the protected trees read-only (plugin/confine/internal/shim).
const unshareMountNS = unix.CLONE_NEWNS
