package cgroup

import (
	"errors"
	"fmt"
	"time"
)

// CommandPrefix starts the name of the cgroup v2 child group sdk/command
// makes for each command, under the group of the process that runs it.
const CommandPrefix = "obversa-cmd-"

// SweepAge is how old an empty group a killed process left must be before
// a sweep removes it (Sweep): a group younger than that may be one another
// process made and has not started its process in yet.
const SweepAge = 10 * time.Minute

// Controller names how a child group's memory is limited.
type Controller string

// Memory controllers.
const (
	// MemoryNone: no memory controller is usable here.
	MemoryNone Controller = ""
	// MemoryV2 is the cgroup v2 memory controller (memory.max).
	MemoryV2 Controller = "cgroup v2"
	// MemoryV1 is the cgroup v1 memory controller (memory.limit_in_bytes).
	MemoryV1 Controller = "cgroup v1"
)

// Info is where this process's control groups are.
type Info struct {
	// V2 is the directory of this process's cgroup v2 group; "" when no
	// cgroup2 file system shows it.
	V2 string `json:"v2,omitempty"`
	// V1Memory is the directory of this process's group in a cgroup v1
	// memory hierarchy; "" when the memory controller is not mounted as
	// v1.
	V1Memory string `json:"v1_memory,omitempty"`
	// Memory says which controller limits a child group's memory.
	Memory Controller `json:"memory,omitempty"`
	// Reason says, when Memory is MemoryNone, why in words.
	Reason string `json:"reason,omitempty"`
}

// Errors of this package.
var (
	// ErrNoMemoryController is returned by Create when a limit is asked
	// for and Info.Memory is MemoryNone; it wraps the reason.
	ErrNoMemoryController = errors.New("no usable memory cgroup controller")
	// ErrUnsupported is returned on systems without control groups.
	ErrUnsupported = fmt.Errorf("control groups need Linux: %w", errors.ErrUnsupported)
)

// Group is a child group made by Create: a directory in the v2 hierarchy,
// in the v1 memory hierarchy, or both. A process joins it by writing its
// pid into cgroup.procs of each of its Dirs (the confining shim does,
// plugin/confine/internal/shim).
type Group struct {
	// V2 is the v2 directory, "" when none was made.
	V2 string `json:"v2,omitempty"`
	// V1Memory is the v1 memory directory, "" when none was made.
	V1Memory string `json:"v1_memory,omitempty"`
	// LimitBytes is the memory limit set (bytes); 0 = none.
	LimitBytes int64 `json:"limit_bytes,omitempty"`
	// Controller is the controller that enforces LimitBytes.
	Controller Controller `json:"controller,omitempty"`
}
