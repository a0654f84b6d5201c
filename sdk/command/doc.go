// Package command runs an owned command: an external program started on
// behalf of a run, which must not outlive the call that started it.
//
// Run starts argv directly (never through a shell unless argv itself names
// one) in its own process group, feeds it stdin, captures stdout and stderr
// up to a cap, and watches the whole process tree it creates. When the
// command times out, exceeds its output or memory cap, or the caller's
// context ends, Run stops the tree: SIGTERM to every owned process, a grace
// period, SIGKILL to what is left, then a check that each process is gone.
// A process is always addressed by its (pid, start time) pair, so a pid
// that was reused by an unrelated program is never signalled.
//
// # Owned processes
//
// On Linux a process belongs to the command when any of these holds:
//
//   - it is the started process, or is in its process group;
//   - its parent belongs to the command (checked by sampling /proc every
//     50 ms; a process once seen stays owned after it is re-parented);
//   - its environment carries this command's private marker
//     OBVERSA_COMMAND_ID (found by scanning /proc/*/environ at teardown),
//     which catches a descendant that called setsid and lost its parent
//     between two samples;
//   - it is in the command's cgroup v2 child group, when one could be
//     created (see CleanupCapability).
//
// The child group (obversa-cmd-<id>, under this process's group) is
// removed with any groups the command made under it when Run returns; one
// still holding a process teardown could not stop is removed once it
// empties. A process killed while a command ran cannot remove its group:
// the first command of each process sweeps, beside itself, the empty
// command groups under its parent ten minutes old, and a host's plugin
// launch sweeps those of its killed plugins (docs/decisions.md, "Command
// cgroups are removed on every path").
//
// The command also receives OBVERSA_RUN_OWNER, OBVERSA_ATTEMPT_ID and
// OBVERSA_RUN_ID. The owner marker ties every process of a run together, so
// a watchdog can find and stop survivors after a crash with
// InspectOwnerMarked and StopOwnedTree (docs/architecture.md#the-watchdog).
//
// # Limits
//
// Output is capped per stream: stdout and stderr each keep at most
// Request.MaxOutputBytes bytes, and the command is stopped with
// ErrOutputLimit as soon as either would exceed it. Memory is the summed
// resident set size of the owned tree, sampled every 50 ms; a command over
// Request.MaxMemoryBytes is stopped with ErrMemoryLimit. Sampling can miss a
// spike shorter than one interval; CleanupCapability says so.
//
// # Output
//
// Stdout and stderr are read to the end of their pipes, and that end is
// awaited only after the command's tree is stopped: once every writer is
// gone the end is certain, so a slow reader never loses output. A process
// teardown could not stop may still hold a pipe; Run then keeps what the
// pipe holds, stops reading and returns ErrOutputCut with the reason in
// Result.OutputCut.
//
// On platforms other than Linux only the started process is tracked and
// stopped; CleanupCapability reports what is not guaranteed.
package command
