package store

import (
	"context"
	"time"
)

// Read is Run.Read.
func (s *stream) Read(ctx context.Context, fromRev int64, fn func(Event) error) error {
	if err := s.refresh(ctx); err != nil {
		return err
	}
	return s.readRange(ctx, s.pub.Load(), fromRev, fn)
}

func (s *stream) readRange(ctx context.Context, pub *published, from int64, fn func(Event) error) error {
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

// Follow is Run.Follow.
func (s *stream) Follow(ctx context.Context, fromRev int64, fn func(Event) error) error {
	next := max(fromRev, 1)
	t := time.NewTicker(followPoll)
	defer t.Stop()
	for {
		changed := s.pub.Load().next
		if err := s.refresh(ctx); err != nil {
			return err
		}
		pub := s.pub.Load()
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

// close closes the stream, saving the validated-prefix cache and cutting
// off the zero tail if this handle appended. An Append waiting for the stream fails with ErrClosed.
func (s *stream) close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu <- struct{}{}
	defer s.unlock()
	close(s.pub.Load().next) // wakes followers, which then see ErrClosed
	if s.appended && s.failed == nil && !s.ro {
		s.saveCache()
		s.trim()
	}
	return s.f.Close()
}
