package store

import (
	"context"
	"time"
)

// waitLockPoll bounds the pause between two tries of waitLock: a lock
// held elsewhere is held for a batch's write or a closing writer's trim,
// milliseconds, so the wait stays short without spinning.
const waitLockPoll = 20 * time.Millisecond

// waitLock takes a lock that may be held elsewhere without blocking in
// the kernel, so that ctx can end the wait: try asks for it without
// waiting (File.Lock or File.WriterLock with wait false); while it fails
// with EWOULDBLOCK, waitLock asks again after a pause that grows from
// 0.5 ms to waitLockPoll. It returns try's other errors as they are, and
// ctx.Err() when ctx ends first.
func waitLock(ctx context.Context, try func() error) error {
	pause := 500 * time.Microsecond
	for {
		err := try()
		if !isWouldBlock(err) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, waitLockPoll)
	}
}
