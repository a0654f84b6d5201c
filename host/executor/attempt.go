package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// attempt runs one position and hands its settle to the loop. When the
// run's context is cancelled it returns without settling: the position
// stays started in the record.
func (x *Executor) attempt(runCtx context.Context, s start) {
	ctx := runCtx
	if t := s.node.Timeout(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(runCtx, t)
		defer cancel()
	}
	var events []event
	code, msg := "", ""
	if !s.rendered {
		code, msg = x.render(ctx, &s)
	}
	switch {
	case code == codeFault:
		x.stop(s.fault)
		return
	case code != "":
		events = x.failed(s, code, "", msg)
	case s.node.Binding != "":
		events = x.invoke(ctx, s)
	default:
		events = x.engine(ctx, s)
	}
	if runCtx.Err() != nil || events == nil {
		return
	}
	x.settle(runCtx, s, events)
}

// settle hands the settle of attempt s to the loop without waiting for it
// to be durable: the loop records it (or, should the record refuse it,
// the node's failure: refuseResult) and nothing in the attempt depends on
// the outcome. Not waiting lets the attempt goroutine be idle by the time
// the loop launches the next attempt, so a chain's next node runs on it
// at once instead of on a new goroutine while this one wakes for an
// acknowledgement.
func (x *Executor) settle(ctx context.Context, s start, events []event) {
	m := message{node: s.node.ID, position: s.position, events: events, settle: true}
	if s.own {
		if x.ownErr == nil {
			x.ownSettle, x.owned = m, true
		}
		return
	}
	select {
	case x.msgs <- m:
	case <-x.loopEnd:
	case <-ctx.Done():
	}
}

// send hands intermediate events of attempt s to the loop (the attempt
// goes on) and waits until they are durable.
func (x *Executor) send(ctx context.Context, s start, events []event) error {
	if s.own {
		return x.sendOwn(ctx, s, events)
	}
	m := message{node: s.node.ID, position: s.position, events: events, ack: make(chan error, 1)}
	select {
	case x.msgs <- m:
	case <-x.loopEnd:
		return context.Canceled
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-m.ack:
		return err
	case <-x.loopEnd:
		return context.Canceled
	}
}

// sendOwn is send for the attempt the loop runs itself: it appends the
// events as the loop would append them for an attempt goroutine. An error
// that would end the loop there is kept in ownErr, which ends it once the
// attempt returns; its settle is then dropped, as one handed to a loop
// that ended is.
func (x *Executor) sendOwn(ctx context.Context, s start, events []event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := x.handleGroup(x.ctx, []message{{node: s.node.ID, position: s.position, events: events}})
	if err != nil && !errors.Is(err, errRefused) {
		x.ownErr = err
	}
	return err
}

// failed builds a node-failed settle.
func (x *Executor) failed(s start, code, kind, msg string) []event {
	return []event{newEvent(graph.EventNodeFailed, graph.FailedData{Node: s.node.ID, Position: s.position, Code: code, Message: msg, FailureKind: kind})}
}

// completed builds a node-completed settle, moving a result too large for
// an event into an artifact; one too large for an artifact fails the node
// RESULT_TOO_LARGE. A review member's result that is not a verdict fails
// it VERDICT_INVALID (docs/run-file.md, "Loops").
func (x *Executor) completed(ctx context.Context, s start, result json.RawMessage) []event {
	if s.review {
		if _, err := parseVerdict(s.node, result); err != nil {
			return x.failed(s, graph.CodeVerdictInvalid, "", err.Error())
		}
	}
	data := graph.CompletedData{Node: s.node.ID, Position: s.position, Result: result}
	if !x.fitsEvent(len(result)) {
		ref, err := x.o.Run.PutArtifact(ctx, result, "application/json", "node-result")
		if isFault(err) {
			// The record cannot keep the result (a full device): the run
			// stops and pauses; the position stays started, so a resume
			// applies the crash table to it (fault.go).
			x.stop(err)
			return nil
		}
		if err != nil {
			code := store.Code(err)
			if errors.Is(err, store.ErrStorageLimitExceeded) {
				code = CodeResultTooLarge
			}
			return x.failed(s, code, "", fmt.Sprintf("result of %d bytes: %v", len(result), err))
		}
		r := graph.ArtifactRef(ref)
		data.Result, data.ResultArtifact = nil, &r
	}
	return []event{newEvent(graph.EventNodeCompleted, data)}
}

// invoke runs a binding node on its rendered input.
func (x *Executor) invoke(ctx context.Context, s start) []event {
	b, ok := x.o.Bindings[s.node.Binding]
	if !ok {
		return x.failed(s, CodeNodeFailed, "", fmt.Sprintf("%v: binding %q", ErrPluginMissing, s.node.Binding))
	}
	input := s.input
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.BeforePlugin, s.node.ID)
	}
	mark := x.oomMark(s.node.Binding)
	out, err := b.Invoke(ctx, plugin.InvokeRequest{
		RunID: x.plan.RunID, NodeID: s.node.ID, Position: s.position, AttemptID: s.attempt,
		Input: input, WorkspaceDir: x.plan.Workspace.Root, Timeout: remaining(ctx),
	})
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.AfterPlugin, s.node.ID)
	}
	if err != nil {
		oom := x.outOfMemory(s.node.Binding, mark, err)
		if paused := x.uncertain(s, cutOff(ctx, s, err, oom)); paused != nil {
			return paused
		}
		if oom != "" {
			return x.failed(s, CodeOutOfMemory, "", oom)
		}
		if x.pluginDied(s, err) {
			return nil
		}
		code, kind := classify(ctx, err)
		return x.failed(s, code, kind, err.Error())
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	return x.completed(ctx, s, out)
}

// classify turns a plugin error into a failure code and kind. A deadline
// that passed is the node's timeout whatever the plugin said.
func classify(ctx context.Context, err error) (code, kind string) {
	if deadlinePassed(ctx) {
		return CodeTimeout, string(plugin.FailureTimeout)
	}
	var f *plugin.Failure
	if errors.As(err, &f) {
		k := f.Kind
		if k == "" {
			k = plugin.FailureUnknown
		}
		switch k {
		case plugin.FailureTimeout:
			return CodeTimeout, string(k)
		case plugin.FailureAborted:
			return CodeAborted, string(k)
		}
		return CodeNodeFailed, string(k)
	}
	return CodeNodeFailed, string(plugin.FailureUnknown)
}

func remaining(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return 0
}

// pluginDied reports whether err says the plugin process is gone. The
// attempt then settles nothing: the worker stops with the error, and the
// next worker (a fresh plugin process) carries the position on by the
// crash table, so a dead plugin never turns into a node failure or burns a
// retry.
func (x *Executor) pluginDied(s start, err error) bool {
	if !errors.Is(err, plugin.ErrPluginExited) {
		return false
	}
	select {
	case x.fatal <- &PluginDiedError{Position: s.position, Attempt: s.attempt, Err: err}:
	default:
	}
	return true
}

// launch runs each start's attempt on an idle attempt goroutine, or on a
// new one when none is idle. An attempt goroutine waits for the next
// attempt until the loop ends, so its stack grows to what a plugin call
// needs once, not once per attempt (runtime.morestack took about a tenth
// of the worker's CPU in a fan-out DAG when each attempt had a goroutine
// of its own).
func (x *Executor) launch(ctx context.Context, starts []start) {
	if len(starts) == 1 && x.active == 0 && !x.undecided && !x.polling() {
		x.runOwn(ctx, starts[0])
		return
	}
	for _, s := range starts {
		if failpoint.Enabled {
			failpoint.Hit(ctx, failpoint.AfterStart, s.node.ID)
		}
		x.active++
		l := launched{ctx: ctx, s: s}
		select {
		case x.idle <- l:
		default:
			x.wg.Add(1)
			go x.attempter(l)
		}
	}
}

// runOwn runs s's attempt on the loop's goroutine, when it would be the
// only one in flight and the loop waits for nothing but it (no position
// waits for approval, no dispatch is left to decide): nothing else can
// settle or ask the loop for anything meanwhile, so handing it to an
// attempt goroutine and its settle back would only add two goroutine
// switches to each node of a chain
// (docs/decisions.md, "Plugin transport"). It is launched as any attempt
// is, after its attempt-started is durable; its settle is kept for the
// loop (receive), and a cancelled ctx or a stopped run leaves it started
// in the record as it would on an attempt goroutine.
func (x *Executor) runOwn(ctx context.Context, s start) {
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.AfterStart, s.node.ID)
	}
	x.active++
	s.own = true
	x.attempt(ctx, s)
}

// launched is an attempt handed to an attempt goroutine.
type launched struct {
	ctx context.Context
	s   start
}

// attempter runs l's attempt, then each attempt launch hands it, until
// the loop ends.
func (x *Executor) attempter(l launched) {
	defer x.wg.Done()
	for {
		x.attempt(l.ctx, l.s)
		select {
		case l = <-x.idle:
		case <-x.loopEnd:
			return
		}
	}
}
