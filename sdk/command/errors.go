package command

import (
	"errors"
	"fmt"
)

// Stable codes of the runner's sentinel errors. The watchdog and the engines
// report them unchanged (docs/cli.md#output-and-exit-status uses OUTPUT_LIMIT and TEARDOWN_INCOMPLETE
// as run outcomes).
const (
	CodeOutputLimit        = "OUTPUT_LIMIT"
	CodeMemoryLimit        = "MEMORY_LIMIT"
	CodeSpawnFailed        = "SPAWN_FAILED"
	CodeTeardownIncomplete = "TEARDOWN_INCOMPLETE"
	CodeOutputCut          = "OUTPUT_CUT"
)

// codedError is a sentinel carrying a stable code.
type codedError struct {
	code string
	msg  string
}

// Error is "CODE: message".
func (e *codedError) Error() string { return e.code + ": " + e.msg }

// Sentinel errors of Run, StopOwnedTree and InspectOwnerMarked. Each is
// wrapped with details; match with errors.Is and read the code with Code.
var (
	// ErrOutputLimit is returned by Run when stdout or stderr exceeded
	// Request.MaxOutputBytes; the command was stopped and the Result holds
	// the first MaxOutputBytes bytes of each stream.
	ErrOutputLimit error = &codedError{CodeOutputLimit, "command output exceeded its limit"}
	// ErrMemoryLimit is returned by Run when the sampled resident memory of
	// the command's process tree exceeded Request.MaxMemoryBytes; the
	// command was stopped.
	ErrMemoryLimit error = &codedError{CodeMemoryLimit, "command memory exceeded its limit"}
	// ErrSpawnFailed is returned by Run when the command could not be
	// started: empty argv, executable not found (the wrapped error then
	// matches exec.ErrNotFound or fs.ErrNotExist), bad directory, or no
	// pipes. The Result is nil.
	ErrSpawnFailed error = &codedError{CodeSpawnFailed, "command could not be started"}
	// ErrTeardownIncomplete is returned by Run and StopOwnedTree when some
	// owned process was still alive after SIGKILL and the verification
	// period; the survivors are listed in Result.RemainingProcesses or the
	// returned slice.
	ErrTeardownIncomplete error = &codedError{CodeTeardownIncomplete, "owned processes survived teardown"}
	// ErrOutputCut is returned by Run when, after the command and its
	// process tree were stopped, a process Run could not stop (one that
	// left the command's process group and cgroup, or survived SIGKILL)
	// still held stdout or stderr open. Everything written before Run
	// stopped reading is kept; Result.OutputCut says which stream was cut
	// and names the holders it could see.
	ErrOutputCut error = &codedError{CodeOutputCut, "command output cut: a process Run could not stop held it open"}
	// ErrUnsupported is returned by InspectOwnerMarked and StopOwnedTree
	// on platforms without /proc; it matches errors.ErrUnsupported.
	ErrUnsupported = fmt.Errorf("owner-marked process scanning needs Linux /proc: %w", errors.ErrUnsupported)
)

// Code returns the stable code (CodeOutputLimit, ...) of the first runner
// sentinel found in err's chain, or "" when there is none. When several are
// joined, output and memory limits come before teardown, then a cut
// output, spawn last.
func Code(err error) string {
	for _, s := range []error{ErrOutputLimit, ErrMemoryLimit, ErrTeardownIncomplete, ErrOutputCut, ErrSpawnFailed} {
		if errors.Is(err, s) {
			return s.(*codedError).code
		}
	}
	return ""
}
