package store

import "context"

// FollowNotice is told by a Record's Follow that waits out an unreachable
// store instead of returning (pgstore while its database is down): once
// with the error (matching ErrUnavailable) when a read first fails, and
// once with nil when reads succeed again. It is called on Follow's
// goroutine; it must not block.
type FollowNotice func(err error)

type followNoticeKey struct{}

// WithFollowNotice returns ctx carrying notice for the Follow calls made
// under it (a follower that shows the run: `obversa events --follow`, the
// progress views, the web UI).
func WithFollowNotice(ctx context.Context, notice FollowNotice) context.Context {
	return context.WithValue(ctx, followNoticeKey{}, notice)
}

// FollowNoticeOf returns the FollowNotice ctx carries, or one that does
// nothing.
func FollowNoticeOf(ctx context.Context) FollowNotice {
	if n, ok := ctx.Value(followNoticeKey{}).(FollowNotice); ok && n != nil {
		return n
	}
	return func(error) {}
}
