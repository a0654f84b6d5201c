package proc

import (
	"errors"
	"time"
)

// Proc identifies one process.
type Proc struct {
	PID  int `json:"pid"`
	PPID int `json:"ppid"`
	PGID int `json:"pgid"`
	// StartTime is field 22 of /proc/<pid>/stat: clock ticks after boot.
	StartTime uint64 `json:"start_time"`
}

// ErrUnsupported is returned on platforms without /proc.
var ErrUnsupported = errors.New("process inspection is not supported on this platform")

// ErrGone is returned by CPU for a process that has exited.
var ErrGone = errors.New("the process has exited")

// pollInterval is how often Stop checks whether signalled processes left.
const pollInterval = 20 * time.Millisecond
