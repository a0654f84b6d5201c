//go:build failpoints

package failpoint

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
)

// Enabled reports whether this binary was built with the failpoints tag.
const Enabled = true

// Hit is a failpoint: the context's Handler decides what happens, else the
// point armed by Env (if it is this point and key) kills the process.
func Hit(ctx context.Context, point, key string) {
	if h, ok := ctx.Value(handlerKey{}).(Handler); ok {
		h(point, key)
		return
	}
	a := armed()
	if a == nil || a.point != point || a.key != key || !a.claim() {
		return
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// Armed reports whether a Hit of point with key would act: a Handler is
// in ctx, or Env arms this point and key and it has not fired yet (its
// flag file does not exist; "-" fires every time). A point that first
// makes something durable asks it before writing, so that a binary built
// with the tag and nothing armed appends the record exactly as a release
// build does.
func Armed(ctx context.Context, point, key string) bool {
	return armedFor(ctx, armed(), point, key)
}

func armedFor(ctx context.Context, a *arm, point, key string) bool {
	if _, ok := ctx.Value(handlerKey{}).(Handler); ok {
		return true
	}
	if a == nil || a.point != point || a.key != key {
		return false
	}
	if a.flag == "-" {
		return true
	}
	_, err := os.Lstat(a.flag)
	return errors.Is(err, fs.ErrNotExist)
}

type arm struct{ point, key, flag string }

var armed = sync.OnceValue(func() *arm {
	// The key may hold colons (an append point's key is an event type,
	// graph:…): the point ends at the first colon, the flag file starts
	// after the last.
	v := os.Getenv(Env)
	point, rest, ok := strings.Cut(v, ":")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i < 0 || rest[i+1:] == "" {
		return nil
	}
	return &arm{point: point, key: rest[:i], flag: rest[i+1:]}
})

// claim fires the point once across processes: the first to create the
// flag file wins; "-" fires every time.
func (a *arm) claim() bool {
	if a.flag == "-" {
		return true
	}
	f, err := os.OpenFile(a.flag, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// Flooding reports whether Env arms the Flood point.
func Flooding() bool {
	a := armed()
	return a != nil && a.point == Flood
}
