package conformance

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/plugin"
)

// strayWait is how long handshake.stdout waits, after its calls, for a
// line still on its way through the pipe.
const strayWait = 200 * time.Millisecond

// caseHandshakeStdout launches the plugin as the host does, calls it as a
// run would (Describe, Configure, and a Run for an engine), and fails when
// the host logged a line the plugin wrote to its real stdout after the
// handshake (plugin.StdoutAfterHandshake). Output a Go plugin writes to
// os.Stdout travels over go-plugin's stdio service and is not a fault.
func caseHandshakeStdout(ctx context.Context, k *kit) verdict {
	stray := &strayLines{forward: k.logger}
	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})
	logger.RegisterSink(stray)
	s, err := k.launchLogged(ctx, logger)
	if err != nil {
		return fail("launch: %v", err)
	}
	defer s.close()
	calls := []string{"the launch", "Describe", "Configure"}
	_, _ = s.describe(ctx)
	_, _ = s.configure(ctx, k.opts.Config)
	if k.typ == plugin.TypeEngine {
		rctx, cancel := context.WithTimeout(ctx, runDeadline)
		collect(rctx, s, k.request("handshake.stdout"))
		cancel()
		calls = append(calls, "a Run")
	}
	time.Sleep(strayWait)
	during := strings.Join(calls, ", ")
	if first, n := stray.seen(); n > 0 {
		return fail("wrote to stdout after its handshake: %s (%d line(s) during %s); stdout carries the handshake line alone: log to stderr",
			quoteTail(first, 200), n, during)
	}
	return pass("nothing on stdout after the handshake line during %s", during)
}

// strayLines is an hclog sink that counts the host's
// plugin.StdoutAfterHandshake messages and keeps the first line, and
// passes every message on to forward.
type strayLines struct {
	forward hclog.Logger
	mu      sync.Mutex
	first   string
	n       int
}

// Accept implements hclog.SinkAdapter.
func (s *strayLines) Accept(name string, level hclog.Level, msg string, args ...any) {
	s.forward.Named(name).Log(level, msg, args...)
	if msg != plugin.StdoutAfterHandshake {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.n > 1 {
		return
	}
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == "line" {
			s.first = fmt.Sprint(args[i+1])
		}
	}
}

// seen returns the first stray line and how many there were.
func (s *strayLines) seen() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, s.n
}
