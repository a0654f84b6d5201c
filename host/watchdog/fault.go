package watchdog

import (
	"os"
	"strings"
	"syscall"
)

// FaultEnv arms one injected worker crash for crash tests:
// "<point>:<node>:<flag file>" (points in host/executor). The first worker
// that reaches the point creates the flag file and SIGKILLs itself; later
// workers find the file and carry on. The flag file "-" fires every time.
// The point "flood" makes the worker write to its console without end
// (the console budget test).
const FaultEnv = "OBVERSA_FAULT"

// envFault is the executor.Fault read from FaultEnv.
type envFault struct{ point, node, flag string }

// faultFromEnv returns the armed fault, or nil when FaultEnv is unset or
// malformed.
func faultFromEnv() *envFault {
	parts := strings.SplitN(os.Getenv(FaultEnv), ":", 3)
	if len(parts) != 3 || parts[2] == "" {
		return nil
	}
	return &envFault{point: parts[0], node: parts[1], flag: parts[2]}
}

// Armed claims the fault once, by creating the flag file exclusively.
func (f *envFault) Armed(point, node string) bool {
	if point != f.point || node != f.node {
		return false
	}
	if f.flag == "-" {
		return true
	}
	fd, err := os.OpenFile(f.flag, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return false
	}
	fd.Close()
	return true
}

// flood writes to w until the write fails or the process is stopped.
func flood(w *os.File) {
	line := []byte(strings.Repeat("flood ", 16) + "\n")
	for {
		if _, err := w.Write(line); err != nil {
			return
		}
	}
}

// Fire kills the worker the way a crash would: no cleanup, no flush.
func (f *envFault) Fire() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
