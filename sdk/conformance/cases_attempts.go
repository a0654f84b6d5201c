package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/obversa/obversa/plugin"
)

// The run.attempts case: the optional Attempts stream, which carries many
// calls on one stream (docs/writing-plugins.md, "The attempt stream").

// attemptsWait bounds each wait of the run.attempts case.
const attemptsWait = 30 * time.Second

// attemptCall is what the case saw of one call on the stream.
type attemptCall struct {
	name     string
	events   int
	bad      []string // invalid events
	terminal *plugin.WireAttemptMessage
	after    int // messages after the terminal one
}

// attemptsRun is the case's view of one Attempts stream.
type attemptsRun struct {
	w     *plugin.WireAttempts
	calls map[uint64]*attemptCall
	// stray counts messages for calls never started.
	stray int
	end   error // how the stream ended, once it has
	// rc is the case's check of what the record can store.
	rc *recordCheck
}

// read takes messages until done() holds, the stream ends, the wait
// passes or ctx ends; false when done() does not hold.
func (r *attemptsRun) read(ctx context.Context, msgs <-chan recvResult, done func() bool) bool {
	timeout := time.After(attemptsWait)
	for !done() {
		select {
		case <-ctx.Done():
			return false
		case m, ok := <-msgs:
			if !ok {
				return done()
			}
			if m.err != nil {
				r.end = m.err
				continue
			}
			r.take(m.msg)
		case <-timeout:
			return false
		}
	}
	return true
}

// take files one message under its call.
func (r *attemptsRun) take(m plugin.WireAttemptMessage) {
	c := r.calls[m.Call]
	switch {
	case c == nil:
		r.stray++
	case c.terminal != nil:
		c.after++
	case m.Status != nil || m.Message.Terminal():
		c.terminal = &m
		r.rc.note(c.name+" call", m.Message.Result)
	case m.Message.Event != nil:
		c.events++
		if err := m.Message.Event.Validate(); err != nil {
			c.bad = append(c.bad, err.Error())
		}
	}
}

// recvResult is one Recv of the stream.
type recvResult struct {
	msg plugin.WireAttemptMessage
	err error
}

// pump receives until the stream ends; the channel closes after the end.
func pump(w *plugin.WireAttempts) <-chan recvResult {
	out := make(chan recvResult, 64)
	go func() {
		defer close(out)
		for {
			m, err := w.Recv()
			out <- recvResult{m, err}
			if err != nil {
				return
			}
		}
	}()
	return out
}

func caseRunAttempts(ctx context.Context, k *kit) verdict {
	s, err := k.launchConfigured(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	w, err := s.c.AttemptsWire(octx)
	cancel()
	if errors.Is(err, plugin.ErrWrongType) {
		return skip("the plugin answers UNIMPLEMENTED for Attempts: the host makes each call with Run")
	}
	if err != nil {
		return fail("opening the Attempts stream: %v (a plugin that serves it sends its response headers at once; one that does not answers UNIMPLEMENTED)", err)
	}
	defer w.Close()
	r := &attemptsRun{w: w, calls: map[uint64]*attemptCall{}, rc: recordCheckOf(ctx)}
	msgs := pump(w)
	var seen []string
	start := func(name string, req plugin.RunRequest) (uint64, error) {
		id, err := w.Start(ctx, req)
		if err == nil {
			r.calls[id] = &attemptCall{name: name}
		}
		return id, err
	}
	// A waiting call, when the plugin can be asked for one, shows that the
	// others do not wait for it and that a cancel reaches it.
	delay := plugin.Scenario{Kind: plugin.ScenarioDelay, Delay: time.Minute}
	var waiting uint64
	if can, _ := k.canAsk(delay); can {
		req := k.request("run.attempts")
		if err := k.ask(ctx, s, &req, delay); err != nil {
			return fail("%v", err)
		}
		if waiting, err = start("waiting", req); err != nil {
			return fail("%v", err)
		}
		if !r.read(ctx, msgs, func() bool { return r.calls[waiting].events > 0 || r.calls[waiting].terminal != nil }) {
			return fail("the delay scenario's call streamed no event within %s", attemptsWait)
		}
	}
	var ordinary []uint64
	for _, name := range []string{"first", "second"} {
		id, err := start(name, k.request("run.attempts"))
		if err != nil {
			return fail("%v", err)
		}
		ordinary = append(ordinary, id)
	}
	if !r.read(ctx, msgs, func() bool { return r.calls[ordinary[0]].terminal != nil && r.calls[ordinary[1]].terminal != nil }) {
		return fail("two ordinary calls did not both end within %s (stream end: %v)", attemptsWait, r.end)
	}
	for _, id := range ordinary {
		c := r.calls[id]
		if c.terminal.Status != nil || c.terminal.Message.Result == nil {
			return fail("the %s ordinary call ended with %s", c.name, describeAttemptEnd(c.terminal))
		}
		if ps := resultProblems(c.terminal.Message.Result); len(ps) > 0 {
			return fail("the %s ordinary call's result: %s", c.name, strings.Join(ps, "; "))
		}
	}
	seen = append(seen, "two calls ended with valid results")
	if waiting != 0 {
		seen[0] += " while a delayed call waited"
		saw, bad := r.cancelWaiting(ctx, msgs, waiting)
		if bad != nil {
			return *bad
		}
		seen = append(seen, saw)
	}
	return r.closeAndEnd(ctx, msgs, seen)
}

// closeAndEnd closes the host's side of the stream and passes when the
// plugin then ends it OK with nothing the protocol forbids on the way;
// seen is what the case saw before, for the verdict.
func (r *attemptsRun) closeAndEnd(ctx context.Context, msgs <-chan recvResult, seen []string) verdict {
	if err := r.w.CloseSend(); err != nil {
		return fail("closing the host's side: %v", err)
	}
	if !r.read(ctx, msgs, func() bool { return r.end != nil }) {
		return fail("%s; the stream did not end within %s of the host closing its side", strings.Join(seen, "; "), attemptsWait)
	}
	if !errors.Is(r.end, io.EOF) {
		return fail("%s; the stream ended with %v after the host closed its side, want OK", strings.Join(seen, "; "), r.end)
	}
	if ps := r.problems(); len(ps) > 0 {
		return fail("%s: %s", strings.Join(seen, "; "), strings.Join(ps, "; "))
	}
	return pass("%s; the stream ended OK once the host closed its side", strings.Join(seen, "; "))
}

// cancelWaiting checks that the delay scenario's call id is still open,
// cancels it and waits for it to end aborted within settleLimit. It returns
// what it saw, or the failing verdict.
func (r *attemptsRun) cancelWaiting(ctx context.Context, msgs <-chan recvResult, id uint64) (string, *verdict) {
	c := r.calls[id]
	if c.terminal != nil {
		v := fail("the delay scenario's call ended before it was cancelled, with %s", describeAttemptEnd(c.terminal))
		return "", &v
	}
	cancelled := time.Now()
	if err := r.w.Cancel(id); err != nil {
		v := fail("cancelling the waiting call: %v", err)
		return "", &v
	}
	if !r.read(ctx, msgs, func() bool { return c.terminal != nil }) || time.Since(cancelled) > settleLimit {
		v := fail("the cancelled call sent no terminal message within %s", settleLimit)
		return "", &v
	}
	if f := c.terminal.Message.Failure; f == nil || f.Kind != plugin.FailureAborted {
		v := fail("the cancelled call ended with %s, want an aborted failure", describeAttemptEnd(c.terminal))
		return "", &v
	}
	return fmt.Sprintf("the cancelled call ended aborted within %s", time.Since(cancelled).Round(time.Millisecond)), nil
}

// problems lists what the stream carried that the protocol forbids.
func (r *attemptsRun) problems() []string {
	var out []string
	if r.stray > 0 {
		out = append(out, fmt.Sprintf("%d message(s) for calls never started", r.stray))
	}
	for _, c := range r.calls {
		if c.after > 0 {
			out = append(out, fmt.Sprintf("%d message(s) after the %s call's terminal message", c.after, c.name))
		}
		for _, b := range c.bad {
			out = append(out, fmt.Sprintf("the %s call streamed an invalid event: %s", c.name, b))
		}
	}
	return out
}

// describeAttemptEnd says how a call on the stream ended.
func describeAttemptEnd(m *plugin.WireAttemptMessage) string {
	switch {
	case m == nil:
		return "no terminal message"
	case m.Status != nil:
		return m.Status.Error()
	case m.Message.Failure != nil:
		return fmt.Sprintf("a %s failure: %q", m.Message.Failure.Kind, cut(m.Message.Failure.Message, 160))
	default:
		final, _ := m.Message.Result.Final()
		return fmt.Sprintf("a result with %d part(s), final %s", len(m.Message.Result.Parts), describePart(final))
	}
}
