// Package cgroup finds this process's control groups and makes child
// groups in them: the one mechanism behind the per-plugin memory limit
// (plugin/confine) and the per-command groups of the SDK's command runner
// (sdk/command).
//
// Linux mounts control groups in one of three layouts: unified (cgroup v2
// only, /sys/fs/cgroup), hybrid (v1 controllers, with a v2 hierarchy
// without controllers at /sys/fs/cgroup/unified) or legacy (v1 only). Self
// reads /proc/self/cgroup and /proc/self/mountinfo to find this process's
// v2 group and its v1 memory group, and says which of them can limit the
// memory of a child group:
//
//   - v2, when "memory" is in the group's cgroup.subtree_control or can be
//     added to it (the group has the controller and no processes of its
//     own, or is the root);
//   - otherwise v1, when the memory controller is mounted on its own
//     hierarchy and the group is writable;
//   - otherwise none, with the reason in words.
//
// A Group limits memory and swap together (memory.max with memory.swap.max
// = 0, or memory.limit_in_bytes with memory.memsw.limit_in_bytes), so a
// group over its limit is stopped by the kernel's OOM killer rather than
// swapped, and counts the processes the OOM killer ended (memory.events
// or memory.oom_control, "oom_kill").
//
// It is a leaf package (standard library and x/sys only). Linux only; on
// other systems Self reports no groups.
package cgroup
