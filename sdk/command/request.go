package command

import (
	"io"
	"time"
)

// Defaults and sampling periods of Run.
const (
	// DefaultTeardownGrace is the time between SIGTERM and SIGKILL when
	// Request.TeardownGrace is zero. It keeps a cancelled engine attempt
	// within the protocol's 3 s stop budget (docs/writing-plugins.md).
	DefaultTeardownGrace = 2 * time.Second
	// SampleInterval is how often the process tree and its resident memory
	// are sampled while the command runs.
	SampleInterval = 50 * time.Millisecond
	// KillVerifyTimeout bounds how long teardown waits for SIGKILLed
	// processes to disappear before reporting them as remaining.
	KillVerifyTimeout = 2 * time.Second
)

// Request describes one command to run. The zero value of every field but
// Argv is usable.
type Request struct {
	// Argv is the program and its arguments; Argv[0] is resolved with
	// exec.LookPath against this process's PATH (a name containing a slash
	// is used as a path, relative to Dir). No shell is involved.
	Argv []string
	// Dir is the working directory; empty means this process's.
	Dir string
	// Env lists explicit "NAME=value" entries for the child. They override
	// inherited ones; the OBVERSA_* markers override both.
	Env []string
	// InheritEnv is an allow-list of variable names copied from this
	// process's environment when set. Nothing else is inherited.
	InheritEnv []string
	// StdoutTee, when set, also receives stdout as it is read, in chunks,
	// never more than MaxOutputBytes in total; it is called from one
	// goroutine and its errors are ignored. Streaming parsers use it; a
	// slow writer slows the command down through the pipe.
	StdoutTee io.Writer
	// Stdin is written to the command's standard input, which is then
	// closed; nil gives the command an empty stdin (/dev/null).
	Stdin []byte
	// Timeout stops the command after this long; 0 means no timeout other
	// than ctx's deadline.
	Timeout time.Duration
	// TeardownGrace is the wait between SIGTERM and SIGKILL; 0 means
	// DefaultTeardownGrace, negative means SIGKILL at once.
	TeardownGrace time.Duration
	// MaxOutputBytes caps stdout and stderr each (not their sum), in bytes;
	// 0 means no cap. Exceeding it stops the command with ErrOutputLimit.
	MaxOutputBytes int64
	// MaxMemoryBytes caps the summed resident set size of the command's
	// process tree, in bytes, checked every SampleInterval; 0 means no cap.
	// Exceeding it stops the command with ErrMemoryLimit.
	MaxMemoryBytes int64
	// AttemptID, OwnerID and RunID are passed to the command as
	// OBVERSA_ATTEMPT_ID, OBVERSA_RUN_OWNER and OBVERSA_RUN_ID. A valid
	// owner marker (sha256:<64 hex>) already in this process's environment
	// wins over OwnerID, so every process of a run carries the run's
	// marker. Empty values are not set.
	AttemptID, OwnerID, RunID string
}

// Result is what a started command did.
type Result struct {
	// ExitCode is the command's exit status, or -1 when a signal ended it
	// or its status could not be collected.
	ExitCode int
	// Signal names the signal that ended the command ("killed",
	// "terminated", ...), empty when it exited by itself.
	Signal string
	// Stdout and Stderr hold the captured output, each at most
	// Request.MaxOutputBytes long when a cap is set.
	Stdout, Stderr []byte
	// TimedOut is set when Request.Timeout or ctx's deadline stopped the
	// command; Aborted when ctx was cancelled. At most one is set.
	TimedOut, Aborted bool
	// PeakMemoryBytes is the highest resident memory seen: the larger of
	// the sampled sum over the process tree and the kernel's maximum RSS
	// of the started process and the children it waited for. 0 when
	// unknown.
	PeakMemoryBytes int64
	// RemainingProcesses lists owned processes still alive after teardown;
	// non-empty only together with ErrTeardownIncomplete.
	RemainingProcesses []Process
	// OutputCut is empty when Stdout and Stderr hold everything written to
	// them up to the end of the pipes (or up to MaxOutputBytes). Otherwise
	// it says, in words, which stream Run stopped reading before its end
	// and why: a process outside the stopped tree still held it open (named
	// by pid when /proc shows it). Set only together with ErrOutputCut.
	OutputCut string
}

// Process identifies one operating-system process. PID with StartTime names
// it uniquely across pid reuse.
type Process struct {
	// PID is the process id, PPID its parent's, PGID its process group's.
	PID  int `json:"pid"`
	PPID int `json:"ppid"` // parent process id
	PGID int `json:"pgid"` // process group id
	// StartTime is the process start time in clock ticks after boot, as in
	// field 22 of /proc/<pid>/stat; 0 where unknown.
	StartTime uint64 `json:"start_time"`
	// Name is the kernel's short command name (comm); may be empty.
	Name string `json:"name,omitempty"`
}

// Capability describes the cleanup and memory mechanisms Run uses on this
// machine, for status output and documentation.
type Capability struct {
	// Platform is runtime.GOOS.
	Platform string `json:"platform"`
	// ProcessGroup is true when commands get their own process group.
	ProcessGroup bool `json:"process_group"`
	// ProcScan is true when /proc is scanned for descendants, markers and
	// start times.
	ProcScan bool `json:"proc_scan"`
	// PidFD is true when signals are sent through pidfds, closing the race
	// between the start-time check and the signal.
	PidFD bool `json:"pidfd"`
	// Cgroup is true when each command runs in its own cgroup v2 child
	// group under CgroupParent, which contains every descendant and is
	// killed with cgroup.kill.
	Cgroup bool `json:"cgroup"`
	// CgroupParent is the directory the child groups are created in.
	CgroupParent string `json:"cgroup_parent,omitempty"`
	// Memory names how MaxMemoryBytes is enforced: "rss-sampling" or
	// "none".
	Memory string `json:"memory"`
	// NotGuaranteed lists, in words, what this mechanism cannot promise.
	NotGuaranteed []string `json:"not_guaranteed,omitempty"`
}
