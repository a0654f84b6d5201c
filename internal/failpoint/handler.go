package failpoint

import "context"

// Handler decides what a failpoint does inside a process (the crash
// simulation): it may record the point, stop the caller's goroutine
// (runtime.Goexit) after making the process's storage unusable, or
// return to let the caller go on. It is only called in binaries built
// with the failpoints tag.
type Handler func(point, key string)

type handlerKey struct{}

// WithHandler returns a context whose failpoints call h.
func WithHandler(ctx context.Context, h Handler) context.Context {
	return context.WithValue(ctx, handlerKey{}, h)
}
