package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// attemptsMethod names the Attempts RPC in logs and panic failures.
const attemptsMethod = "/obversa.plugin.v1.Engine/Attempts"

// maxQueuedMessages bounds the messages an Attempts stream holds for
// sending: an engine that emits faster than the host reads waits, as it
// does on a Run stream whose flow-control window is full.
const maxQueuedMessages = 256

// Attempts implements pb.EngineServer: many Run calls on one stream
// (docs/writing-plugins.md, "The attempt stream"). It sends the response
// headers at once, so that the host knows the plugin serves it, then starts
// each requested call on a goroutine of its own and cancels it on the
// host's Cancel. Every call's messages are those its Run stream would
// carry; a call whose Run stream would have ended with a status error
// (an invalid request, a message over the size limit) ends with that
// status in its AttemptMessage instead. When the host closes its side, the
// calls in progress finish first; when the stream's context ends, they are
// cancelled.
func (s *engineServer) Attempts(stream pb.Engine_AttemptsServer) error {
	if err := stream.SendHeader(nil); err != nil {
		return err
	}
	ctx, cancelAll := context.WithCancel(stream.Context())
	defer cancelAll()
	out := newAttemptSender(stream, cancelAll)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		out.loop(ctx)
	}()
	calls := &attemptCalls{cancel: map[uint64]context.CancelFunc{}, pool: newCallPool()}
	defer calls.pool.stop()
	err := s.receiveAttempts(ctx, stream, out, calls)
	if err != nil {
		cancelAll()
	}
	calls.wg.Wait()
	out.finish()
	<-sent
	if err != nil {
		return err
	}
	return out.failed()
}

// receiveAttempts starts and cancels calls as the host asks until the host
// closes its side (nil) or the stream fails (its error). Each request is
// received as the unknown fields of an empty message, which keeps its wire
// bytes as they came, and read by decodeAttemptRequest
// (wire_attempts_request.go).
func (s *engineServer) receiveAttempts(ctx context.Context, stream pb.Engine_AttemptsServer, out *attemptSender, calls *attemptCalls) error {
	var raw emptypb.Empty
	for {
		err := stream.RecvMsg(&raw)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		req, err := decodeAttemptRequest(raw.ProtoReflect().GetUnknown())
		if err != nil {
			return err
		}
		id := req.GetCall()
		switch r := req.GetRequest().(type) {
		case *pb.AttemptRequest_Run:
			cctx, cancel := context.WithCancel(ctx)
			if !calls.add(id, cancel) {
				cancel()
				out.status(id, codes.InvalidArgument, fmt.Sprintf("call id %d is 0 or already in use on this stream", id))
				continue
			}
			calls.pool.run(func() {
				defer calls.done(id)
				s.attempt(cctx, id, r.Run, out)
			})
		case *pb.AttemptRequest_Cancel:
			calls.cancelCall(id)
		}
	}
}

// attempt serves one call of an Attempts stream, as Run serves a Run
// stream; its deadline is the request's timeout_ms.
func (s *engineServer) attempt(ctx context.Context, id uint64, req *pb.RunRequest, out *attemptSender) {
	r, err := runRequestFromProto(req)
	if err != nil {
		out.status(id, codes.InvalidArgument, err.Error())
		return
	}
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	var (
		mu     sync.Mutex
		closed bool
	)
	emit := func(ev RunEvent) error {
		m, err := attemptEvent(id, ev)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return errStreamClosed
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("run stream: %w", err)
		}
		return out.put(queuedMessage{id, m})
	}
	res, err := s.runRecovered(ctx, r, emit)
	mu.Lock()
	closed = true
	mu.Unlock()
	_ = out.put(queuedMessage{id, attemptTerminal(id, terminalSize(res), func(b []byte) []byte { return s.appendTerminal(b, res, err) })})
}

// runRecovered calls the implementation's Run and turns a panic into an
// unknown failure, as the stream interceptor does for a Run stream.
func (s *engineServer) runRecovered(ctx context.Context, r RunRequest, emit Emitter) (res *RunResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.logger.Error("plugin handler panicked", "method", attemptsMethod, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res, err = nil, &Failure{Kind: FailureUnknown, Message: fmt.Sprintf("plugin panicked in %s: %v", attemptsMethod, v)}
		}
	}()
	return s.impl.Run(ctx, r, emit)
}

// attemptCalls is the calls in progress on one Attempts stream.
type attemptCalls struct {
	mu     sync.Mutex
	cancel map[uint64]context.CancelFunc
	wg     sync.WaitGroup
	pool   *callPool
}

// callPool runs an Attempts stream's calls on goroutines that outlive a
// call: a fresh goroutine per call would grow its stack through the
// engine and protobuf's encoder on every call (docs/decisions.md, "Plugin
// transport"). A call that finds no idle goroutine gets a new one, which
// then stays for later calls until the stream ends, so the pool is as
// large as the most calls the stream had at once.
type callPool struct {
	jobs chan func()
	done chan struct{}
}

func newCallPool() *callPool {
	return &callPool{jobs: make(chan func()), done: make(chan struct{})}
}

// run runs f on an idle goroutine of the pool, or on a new one.
func (p *callPool) run(f func()) {
	select {
	case p.jobs <- f:
	default:
		go p.work(f)
	}
}

func (p *callPool) work(f func()) {
	for {
		f()
		select {
		case f = <-p.jobs:
		case <-p.done:
			return
		}
	}
}

// stop ends the idle goroutines once the calls in progress have ended.
func (p *callPool) stop() { close(p.done) }

// add registers call id; false when id is 0 or in use.
func (c *attemptCalls) add(id uint64, cancel context.CancelFunc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.cancel[id]; dup || id == 0 {
		return false
	}
	c.cancel[id] = cancel
	c.wg.Add(1)
	return true
}

// done forgets call id once its handler returned.
func (c *attemptCalls) done(id uint64) {
	c.mu.Lock()
	cancel := c.cancel[id]
	delete(c.cancel, id)
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wg.Done()
}

// cancelCall cancels call id; an unknown id (a call that already ended)
// is ignored.
func (c *attemptCalls) cancelCall(id uint64) {
	c.mu.Lock()
	cancel := c.cancel[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// attemptSender sends the messages of an Attempts stream's calls from one
// goroutine (loop): whatever the calls queued while it was sending goes
// out as one AttemptMessages, so that a call's events produced back to back
// share a write; nothing waits for more to arrive.
type attemptSender struct {
	stream pb.Engine_AttemptsServer
	// onFail is called when a Send fails: the calls in progress are
	// cancelled, since nothing they produce can reach the host.
	onFail func()
	mu     sync.Mutex
	space  *sync.Cond // signalled when the queue shrinks or sending stops
	queue  []queuedMessage
	wake   chan struct{}
	ending bool  // finish was called: loop sends what is queued and returns
	err    error // the first failed Send; later sends fail with it
}

// queuedMessage is an AttemptMessage of call in its wire form.
type queuedMessage struct {
	call uint64
	wire []byte
}

func newAttemptSender(stream pb.Engine_AttemptsServer, onFail func()) *attemptSender {
	o := &attemptSender{stream: stream, onFail: onFail, wake: make(chan struct{}, 1)}
	o.space = sync.NewCond(&o.mu)
	return o
}

// status queues the end of call id with a status error.
func (o *attemptSender) status(id uint64, code codes.Code, msg string) {
	_ = o.put(queuedMessage{id, appendAttemptStatus(nil, id, code, msg)})
}

// put queues m, waiting while the queue is full. It fails once sending
// has failed.
func (o *attemptSender) put(m queuedMessage) error {
	o.mu.Lock()
	for len(o.queue) >= maxQueuedMessages && o.err == nil {
		o.space.Wait()
	}
	if o.err != nil {
		o.mu.Unlock()
		return o.err
	}
	o.queue = append(o.queue, m)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

// finish makes loop return once the queue is sent.
func (o *attemptSender) finish() {
	o.mu.Lock()
	o.ending = true
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// failed returns the error that stopped sending, if any.
func (o *attemptSender) failed() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// loop sends the queue until finish is called and the queue is empty, a
// Send fails, or ctx ends.
func (o *attemptSender) loop(ctx context.Context) {
	for {
		select {
		case <-o.wake:
		case <-ctx.Done():
			o.stop(ctx.Err())
			return
		}
		o.mu.Lock()
		batch, ending := o.queue, o.ending
		o.queue = nil
		o.space.Broadcast()
		o.mu.Unlock()
		if len(batch) > 0 {
			if err := o.sendBatch(batch); err != nil {
				o.stop(err)
				o.onFail()
				return
			}
		}
		if ending {
			o.mu.Lock()
			left := len(o.queue)
			o.mu.Unlock()
			if left == 0 {
				return
			}
			select {
			case o.wake <- struct{}{}:
			default:
			}
		}
	}
}

// sendBatch sends batch in as few messages as fit the size limit
// (MaxMessageBytes, the limit Serve gives gRPC). gRPC refuses a message
// over its limit by ending the whole stream, every call on it included,
// so a batch is cut before it would pass the limit, and a single message
// over it is not sent: its call ends with RESOURCE_EXHAUSTED, as the same
// message would end a Run stream of its own, and the other calls go on.
func (o *attemptSender) sendBatch(batch []queuedMessage) error {
	from, size := 0, 0
	flush := func(to int) error {
		if to == from {
			return nil
		}
		err := o.stream.SendMsg(attemptBatch(batch[from:to]))
		from, size = to, 0
		return err
	}
	for i, m := range batch {
		n := batchEntrySize(m.wire)
		if size+n <= MaxMessageBytes {
			size += n
			continue
		}
		if err := flush(i); err != nil {
			return err
		}
		if n <= MaxMessageBytes {
			size = n
			continue
		}
		batch[i].wire = appendAttemptStatus(nil, m.call, codes.ResourceExhausted,
			fmt.Sprintf("trying to send message larger than max (%d vs. %d)", n, MaxMessageBytes))
		size = batchEntrySize(batch[i].wire)
	}
	return flush(len(batch))
}

// stop records err as the end of sending and wakes every waiting send.
func (o *attemptSender) stop(err error) {
	o.mu.Lock()
	if o.err == nil {
		o.err = err
	}
	o.queue = nil
	o.space.Broadcast()
	o.mu.Unlock()
}
