package store

import (
	"context"
	"time"
)

// Read calls fn for each committed event from fromRev (values below 1 mean
// 1) to the stream's current end, in order, after picking up batches other
// processes appended. Only complete batches are read. It streams: memory
// does not grow with the stream. Each line's digest and chain link are
// checked again as it is read; damage found returns a *CorruptError. An
// error from fn stops the iteration and is returned as is.
func (s *Stream) Read(ctx context.Context, fromRev int64, fn func(Event) error) error {
	if err := s.refresh(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	pub := s.pub
	s.mu.Unlock()
	return s.readRange(ctx, pub, fromRev, fn)
}

func (s *Stream) readRange(ctx context.Context, pub published, from int64, fn func(Event) error) error {
	n := 0
	return readCommitted(s.f, s.path, pub.offsets, pub.size, from, pub.rev, func(env *envelope) error {
		if n++; n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return fn(env.event())
	})
}

// Follow is Read followed by waiting for new events and passing them to fn
// as they are committed — by this handle (at once) or by other processes
// (noticed within 50 ms). It returns when ctx is done (with ctx.Err()),
// when fn returns an error (that error), or on a read failure.
func (s *Stream) Follow(ctx context.Context, fromRev int64, fn func(Event) error) error {
	next := max(fromRev, 1)
	t := time.NewTicker(followPoll)
	defer t.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if err := s.refresh(ctx); err != nil {
			return err
		}
		s.mu.Lock()
		pub := s.pub
		s.mu.Unlock()
		if pub.rev >= next {
			if err := s.readRange(ctx, pub, next, fn); err != nil {
				return err
			}
			next = pub.rev + 1
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
	}
}

// close closes the stream, saving the validated-prefix cache if this handle
// appended. Appends still queued fail with ErrClosed.
func (s *Stream) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.changed)
	s.mu.Unlock()
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	s.mu.Lock()
	save := s.appended && s.failed == nil && !s.ro
	s.mu.Unlock()
	if save {
		s.saveCache()
	}
	return s.f.Close()
}
