// Package proc reads and signals processes by identity: a process is its
// (pid, start time) pair, read from /proc/<pid>/stat, so a pid the kernel
// reused for an unrelated process is never signalled. It finds the
// processes of a run by the owner marker in /proc/<pid>/environ
// (docs/architecture.md#the-watchdog) and stops them: SIGTERM, a grace period, SIGKILL, then verification.
//
// It is a leaf package (standard library and x/sys only) shared by the host
// and the SDK's command runner.
package proc
