// Package confine confines a plugin process and everything it starts
// (docs/confinement.md): Landlock rules that let it write only beneath the
// paths it was granted, read everything but the paths it was denied and,
// unless allowed, neither connect nor bind TCP sockets; and a memory
// cgroup (internal/cgroup) that limits it and its descendants.
//
// The rules are applied in the child before it executes the plugin, so
// the plugin cannot opt out: the host starts the plugin through the
// running host binary itself (/proc/self/exe) in a hidden shim mode (the
// first argument is ShimArg, what to apply arrives on file descriptor 3).
// The host builds the Landlock ruleset and hands the shim its descriptor;
// the shim (plugin/confine/internal/shim) joins the plugin's cgroup, sets
// no_new_privs, restricts itself with the ruleset and executes exactly
// the verified binary the host named. A Landlock domain survives execve
// and is inherited by every child; it cannot be lifted. Any binary that
// imports this package answers the shim mode before its main runs (the
// shim package's init, which runs before most of the binary's packages
// initialise), so a host cannot launch a confined plugin through a shim
// other than itself.
//
// Landlock rules are allow-lists. Build expands a Spec into them:
//
//   - read (and execute) is granted on "/" — unless DenyRead names paths:
//     then on every sibling along the way to each denied path instead, so
//     the denied trees, and the directories on the way to them (which can
//     be entered but not listed), are not readable;
//   - write is granted on each Write tree, and where a Write tree holds a
//     Protect or DenyRead tree, on every sibling along the way to it
//     instead: the directories on the way keep their existing entries
//     writable but get no new entries;
//   - write is granted on /dev/null, /dev/zero, /dev/full, /dev/random
//     and /dev/urandom.
//
// Symbolic links met while expanding are not followed: they are reached
// through the rules of their targets. Entries created after the plugin
// started in a directory that was split are not covered by any rule.
package confine
