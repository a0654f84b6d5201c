package command

import (
	"errors"

	"golang.org/x/sys/unix"
)

// errGone means the process to signal no longer exists under the recorded
// (pid, start time).
var errGone = errors.New("process gone")

// pidfdUsable reports whether pidfd_open works here (Linux 5.3+).
func pidfdUsable() bool {
	fd, err := unix.PidfdOpen(unix.Getpid(), 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// signalProcess sends sig to the process pid only if it still has start
// time start. With pidfds the check and the signal address the same
// process; without them a pid could in theory be reused in between, which
// the start-time check makes vanishingly unlikely.
func signalProcess(pid int, start uint64, sig unix.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case err == nil:
		defer unix.Close(fd)
		if s, err := readStat(pid); err != nil || s.start != start || !s.alive() {
			return errGone
		}
		if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
			if errors.Is(err, unix.ESRCH) {
				return errGone
			}
			return err
		}
		return nil
	case errors.Is(err, unix.ESRCH):
		return errGone
	}
	// No pidfd support (or a limit on open files): check, then signal.
	if s, err := readStat(pid); err != nil || s.start != start || !s.alive() {
		return errGone
	}
	if err := unix.Kill(pid, sig); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return errGone
		}
		return err
	}
	return nil
}
