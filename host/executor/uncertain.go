package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/plugin"
)

// cutOff says why the host cut attempt s off before its plugin answered
// with an outcome, so that its effect may have happened: the node's
// timeout passed (the host cancelled the call, whether the plugin was
// still working or hung), the kernel's OOM killer ended a process in the
// plugin's memory group while the call ran (oom is the outOfMemory
// message) — the plugin itself, or a process it started (a command the
// engine runs) while the plugin lived on to report the failure: either way
// the work was killed mid-way, not finished and judged — or the call broke
// off without the plugin's answer (plugin.ErrPluginTransport). It returns ""
// for an outcome the plugin reported and classified itself, which is
// definite: an engine's own `timeout` failure before the node's deadline
// is a failure like any other (docs/run-file.md, "retry_safe"). A plugin
// process that died otherwise is left to pluginDied (the crash table
// applies to it), and the run ending is not a cut-off: the attempt then
// settles nothing (attempt).
func cutOff(ctx context.Context, s start, err error, oom string) string {
	var f *plugin.Failure
	switch {
	case deadlinePassed(ctx):
		return fmt.Sprintf("timed out after %s; its effect may have happened", s.node.Timeout())
	case oom != "" && errors.Is(err, plugin.ErrPluginExited):
		return "its plugin was ended by the OOM killer (confine.memory) before it answered; its effect may have happened"
	case oom != "":
		return "the OOM killer (confine.memory) ended a process its plugin started, which the plugin reported as a failure; its effect may have happened"
	case errors.Is(err, plugin.ErrPluginTransport) && !errors.Is(err, plugin.ErrPluginExited) && !errors.As(err, &f):
		return fmt.Sprintf("the call to its plugin broke off before it answered (%v); its effect may have happened", err)
	}
	return ""
}

// deadlinePassed reports whether ctx's deadline (the node's timeout) has
// passed. The clock is read as well as ctx.Err(): on a loaded machine the
// plugin's end of a call may break off at the deadline before ctx's own
// timer has fired.
func deadlinePassed(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// uncertain builds the settle of an attempt the host cut off (cause, from
// cutOff): a node that is not retry_safe pauses with a reconcile-attempt
// request naming the cause, exactly as the crash table pauses an attempt
// a crash cut off (recover; docs/architecture.md#the-executor), so the
// effect is never repeated without a person's word. A retry-safe node, or
// an attempt nothing cut off (cause ""), returns nil: the caller records
// the failure, which is retried under retry_cap_per_node.
func (x *Executor) uncertain(s start, cause string) []event {
	if cause == "" || s.node.RetrySafe {
		return nil
	}
	return []event{newEvent(graph.EventNodePaused, reconcilePause(s.node.ID, s.position, s.attempt, cause))}
}

// crashCause says why an attempt a crash cut off is uncertain (recover),
// from what the record holds of the previous worker's end (ex,
// runstate.State.PreviousEnd; nil when its end was not recorded): the
// cause the worker reported (a plugin that died: its name, binary and how
// it ended), the pause that stopped it, or how the worker process ended.
// recovered says the previous worker did not run the attempt but
// recovered it and ended before it recorded its pause
// (runstate.State.RecoveredBefore): ex is then that worker's end, and the
// reason says so.
func crashCause(ex *runstate.Exit, recovered bool) string {
	const effect = "; its effect may have happened"
	const unrecorded = "ended and its end was not recorded (its watchdog ended too, the machine stopped, or the record could not be written)"
	if recovered {
		end := unrecorded
		if ex != nil {
			end = ex.Cause()
		}
		return "a crash cut it off, and the worker recovering it " + end + " before it recorded this pause" + effect
	}
	if ex == nil {
		return "the worker running it " + unrecorded + effect
	}
	return "the worker running it " + ex.Cause() + effect
}

// reconcilePause is the graph:node-paused data asking a person whether
// attempt (at position, of node) took effect: for an attempt a crash cut
// off (recover; reason from crashCause) or the host cut off (uncertain;
// reason names the cause). The reason is never empty.
func reconcilePause(node, position, attempt, reason string) graph.PausedData {
	return graph.PausedData{Node: node, Position: position,
		Request: graph.PauseRequest{Kind: graph.PauseReconcile, Position: position, AttemptID: attempt, Reason: reason}}
}
