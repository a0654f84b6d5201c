package plugin

import (
	"os"
	"time"
)

// drain waits until done (the reader of pipe f reached its end), or,
// from soft on, until f holds no unread bytes, and at the latest until
// hard: a child of the plugin that holds the pipe open cannot keep a
// close waiting, and bytes the plugin wrote are not dropped because their
// reader was slow to run. It returns how many bytes f still held when it
// gave up at hard (0 otherwise).
func drain(f *os.File, done <-chan struct{}, soft, hard time.Time) int {
	t := time.NewTimer(time.Until(soft))
	defer t.Stop()
	select {
	case <-done:
		return 0
	case <-t.C:
	}
	for {
		n := unread(f)
		if n == 0 {
			return 0
		}
		if !time.Now().Before(hard) {
			return n
		}
		select {
		case <-done:
			return 0
		case <-time.After(10 * time.Millisecond):
		}
	}
}
