package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// attemptsMode is what the host knows of a plugin's Attempts RPC.
type attemptsMode int

const (
	attemptsUnknown     attemptsMode = iota // not tried yet
	attemptsServed                          // served: calls go on the stream
	attemptsUnsupported                     // UNIMPLEMENTED: calls use Run
)

// attemptsState is the engine client's Attempts stream: opened on the
// first Run, shared by every Run after it, opened again after it broke.
type attemptsState struct {
	mu   sync.Mutex
	mode attemptsMode
	cur  *attemptStream
	// perCall makes every Run use the Run RPC (PerCallRun).
	perCall bool
}

// stream returns the open Attempts stream, opening it when there is none.
// nil (with a nil error) means the call goes through the Run RPC: the
// plugin does not serve Attempts, or opening it failed in a way the Run
// RPC reports as well (the plugin exited). A non-nil error is ctx's end
// while opening.
func (c *engineClient) stream(ctx context.Context) (*attemptStream, error) {
	a := &c.attempts
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.perCall || a.mode == attemptsUnsupported {
		return nil, nil
	}
	if a.cur != nil && !a.cur.broken() {
		return a.cur, nil
	}
	s, err := c.openAttempts(ctx)
	switch {
	case err == nil:
		a.mode, a.cur = attemptsServed, s
		return s, nil
	case status.Code(err) == codes.Unimplemented && ctx.Err() == nil:
		a.mode = attemptsUnsupported
		return nil, nil
	case ctx.Err() != nil:
		return nil, c.callError(ctx, "Run", err)
	default:
		return nil, nil
	}
}

// openAttempts opens an Attempts stream and waits for the plugin's
// response headers: a plugin that serves it sends them at once, one that
// does not ends the stream with UNIMPLEMENTED. The stream lives until the
// plugin exits or the stream fails, not as long as ctx; ctx bounds the
// wait for the headers.
func (c *engineClient) openAttempts(ctx context.Context) (*attemptStream, error) {
	sctx, cancel := c.join(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	cl, err := c.client.Attempts(sctx)
	if err != nil {
		cancel()
		return nil, err
	}
	md, err := cl.Header()
	if err == nil && md == nil {
		// The stream ended before any header: Recv returns its status.
		_, err = cl.Recv()
		if err == nil {
			err = errors.New("attempt stream sent a message before its headers")
		}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	if !stop() {
		cancel()
		return nil, ctx.Err()
	}
	s := &attemptStream{client: c, cl: cl, cancel: cancel, calls: map[uint64]*attemptCall{}, done: make(chan struct{})}
	go s.read()
	return s, nil
}

// attemptStream is one open Attempts stream on the host side. A reader
// goroutine hands each received message to the call it names.
type attemptStream struct {
	client *engineClient
	cl     pb.Engine_AttemptsClient
	cancel context.CancelFunc
	sendMu sync.Mutex // gRPC allows one SendMsg at a time

	mu    sync.Mutex
	next  uint64
	calls map[uint64]*attemptCall
	err   error         // why the stream ended; set once
	done  chan struct{} // closed when err is set
}

// attemptCall is one call in progress on an attemptStream.
type attemptCall struct {
	mu    sync.Mutex
	queue []attemptItem
	wake  chan struct{} // 1-buffered: the queue grew
}

// broken reports whether the stream has ended.
func (s *attemptStream) broken() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// read hands messages to their calls until the stream ends, then records
// why it ended. Messages of a call no longer in progress (cancelled, or
// ended by a protocol error) are dropped.
//
// Each AttemptMessages is received as its wire bytes (wireBytes, one
// buffer reused) and decoded by decodeAttemptMessages
// (wire_attempts_decode.go), which copies what it keeps.
func (s *attemptStream) read() {
	var raw wireBytes
	for {
		err := s.cl.RecvMsg(&raw)
		var items []attemptItem
		if err == nil {
			items, err = decodeAttemptMessages(raw.b)
		}
		if err != nil {
			s.mu.Lock()
			s.err = err
			close(s.done)
			s.mu.Unlock()
			s.cancel()
			return
		}
		s.mu.Lock()
		for len(items) > 0 {
			// The messages of one call that come together are handed
			// over as one run of items.
			n := 1
			for n < len(items) && items[n].call == items[0].call {
				n++
			}
			if call := s.calls[items[0].call]; call != nil {
				call.put(items[:n:n])
			}
			items = items[n:]
		}
		s.mu.Unlock()
	}
}

// put queues run, messages of this call, and wakes the call. An empty
// queue takes run as it is: a call's messages usually come in one
// AttemptMessages with nothing queued before them, and are then handed
// over without a copy. run's capacity ends with it, so that an append to
// the queue never writes over the items of the calls after it.
func (a *attemptCall) put(run []attemptItem) {
	a.mu.Lock()
	if len(a.queue) == 0 {
		a.queue = run
	} else {
		a.queue = append(a.queue, run...)
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// send sends one request, an AttemptRequest in its wire form
// (wire_attempts_request.go), on the stream.
func (s *attemptStream) send(req []byte) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.cl.SendMsg(&wireBytes{b: req})
}

// start registers a new call; ok is false when the stream has ended.
func (s *attemptStream) start() (id uint64, call *attemptCall, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, nil, false
	}
	s.next++
	call = &attemptCall{wake: make(chan struct{}, 1)}
	s.calls[s.next] = call
	return s.next, call, true
}

// end forgets call id; with cancel, the plugin is told to cancel it.
func (s *attemptStream) end(id uint64, cancel bool) {
	s.mu.Lock()
	delete(s.calls, id)
	s.mu.Unlock()
	if cancel {
		_ = s.send(appendCancelAttempt(nil, id))
	}
}

// streamErr returns why the stream ended.
func (s *attemptStream) streamErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// run makes one Run call on the stream; see engineClient.Run. ok is false
// when the stream had ended before the request was sent, so that the
// plugin never saw it and the caller may make the call another way.
func (s *attemptStream) run(ctx context.Context, m *pb.RunRequest, emit Emitter) (res *RunResult, ok bool, err error) {
	id, call, ok := s.start()
	if !ok {
		return nil, false, nil
	}
	c := s.client
	finished := false
	defer func() { s.end(id, !finished) }()
	req := appendRunAttempt(nil, id, m)
	if n := len(req); n > MaxMessageBytes {
		// gRPC refuses a message over its limit by ending the whole
		// stream, every call on it included: refused here, it ends
		// this call alone, as it would end a Run stream of its own.
		finished = true
		return nil, true, c.callError(ctx, "Run", status.Errorf(codes.ResourceExhausted, "trying to send message larger than max (%d vs. %d)", n, MaxMessageBytes))
	}
	if err := s.send(req); err != nil {
		if !errors.Is(err, io.EOF) {
			// Refused before it was sent (not encodable); gRPC ends
			// the stream with it, so the calls beside it see it
			// break off. runRequestToProto refuses a string that is
			// not UTF-8 first, so that such a request fails alone.
			finished = true
			return nil, true, c.callError(ctx, "Run", err)
		}
		// The stream ended, and Recv tells why. The request may have
		// reached the plugin, so the call is not made again.
		<-s.done
		return nil, true, c.callError(ctx, "Run", s.streamErr())
	}
	for {
		select {
		case <-call.wake:
		case <-s.done:
			// Messages received before the end are still taken.
			if !call.pending() {
				return nil, true, c.callError(ctx, "Run", s.streamErr())
			}
		case <-ctx.Done():
			return nil, true, c.callError(ctx, "Run", ctx.Err())
		}
		for _, am := range call.take() {
			res, done, err := c.attemptMessage(ctx, am, emit)
			if done {
				// A terminal message ends the call on the plugin's side
				// too; anything else (an event refused by emit or by the
				// protocol) leaves it running there, so it is cancelled.
				finished = am.statusCode != 0 || am.msg.result != nil || am.msg.failure != nil
				if err != nil && deadlinePassed(ctx) {
					// The plugin's answer to the call's deadline, which
					// it counts from timeout_ms: the deadline is what
					// ended the call, as on a Run stream, whose
					// deadline ends it before such an answer can come.
					<-ctx.Done()
					return nil, true, c.callError(ctx, "Run", ctx.Err())
				}
				return res, true, err
			}
		}
	}
}

// deadlinePassed reports whether ctx's deadline has passed by the clock,
// which may be a moment before ctx's own timer ends it.
func deadlinePassed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// pending reports whether the call has messages not yet taken.
func (a *attemptCall) pending() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue) > 0
}

// take returns the call's queued messages and empties the queue.
func (a *attemptCall) take() []attemptItem {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.queue
	a.queue = nil
	return q
}

// attemptMessage handles one message of a call as Run handles one message
// of its stream; done means the call ended, with res or err.
func (c *engineClient) attemptMessage(ctx context.Context, am attemptItem, emit Emitter) (res *RunResult, done bool, err error) {
	if am.statusCode != 0 {
		return nil, true, c.callError(ctx, "Run", status.Error(codes.Code(am.statusCode), am.statusMsg))
	}
	d := am.msg
	switch {
	case am.err != nil:
		return nil, true, c.protocolError("Run", am.err)
	case d.failure != nil:
		return nil, true, d.failure
	case d.result != nil:
		return d.result, true, nil
	case d.event != nil && emit != nil:
		if err := emit(*d.event); err != nil {
			return nil, true, fmt.Errorf("plugin %q: Run: emitting %s event: %w", c.name, d.event.Kind, err)
		}
	}
	return nil, false, nil
}

// RunPerCall returns an Engine that makes every Run as a Run RPC of its
// own, even when the plugin serves the Attempts stream; the conformance
// kit checks both. e must come from Client.Engine; any other Engine is
// returned as it is.
func RunPerCall(e Engine) Engine {
	c, ok := e.(*engineClient)
	if !ok {
		return e
	}
	return &engineClient{remote: c.remote, client: c.client, attempts: attemptsState{perCall: true}}
}

// ServesAttempts reports whether e, from Client.Engine, makes its Run
// calls on the plugin's Attempts stream, opening the stream when no call
// has yet. It is false for a plugin that answers UNIMPLEMENTED, for an
// Engine from RunPerCall or any other Engine, and when the stream could
// not be opened; the error is ctx's end while opening.
func ServesAttempts(ctx context.Context, e Engine) (bool, error) {
	c, ok := e.(*engineClient)
	if !ok {
		return false, nil
	}
	s, err := c.stream(ctx)
	return s != nil, err
}
