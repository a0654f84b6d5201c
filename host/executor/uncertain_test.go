package executor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/plugin"
)

// TestCutOff: what the host cut off is uncertain — a passed node
// deadline (even before ctx's timer fired), a plugin the OOM killer
// ended or a process of it the OOM killer ended while the plugin lived on
// to report it, a call that broke off — and pauses a node that is not
// retry_safe with reconcile-attempt; an outcome the plugin reported
// (its own timeout included), a plugin that died otherwise (the crash
// table's) and a retry-safe node are left to the failure path.
func TestCutOff(t *testing.T) {
	live := context.Background()
	passed, cancel := context.WithDeadline(live, time.Now().Add(-time.Millisecond))
	defer cancel()
	// A deadline the clock passed while ctx's timer has not fired yet.
	lagging := lagCtx{Context: live, deadline: time.Now().Add(-time.Millisecond)}
	exited := fmt.Errorf("plugin %q: Invoke: %w: %w", "shell", plugin.ErrPluginExited, plugin.ErrPluginTransport)
	broken := fmt.Errorf("plugin %q: Invoke: stream terminated: %w", "shell", plugin.ErrPluginTransport)
	reported := &plugin.Failure{Kind: plugin.FailureTimeout, Message: "the command ran past its limit"}
	tests := []struct {
		name      string
		ctx       context.Context
		err       error
		oom       string
		retrySafe bool
		want      string // "" when nothing is cut off or the node is retry-safe
	}{
		{"timeout", passed, context.DeadlineExceeded, "", false, "timed out after 5s; its effect may have happened"},
		{"timeout before ctx fired", lagging, broken, "", false, "timed out after 5s"},
		{"timeout, plugin answered after", passed, reported, "", false, "timed out after 5s"},
		{"timeout, retry-safe", passed, context.DeadlineExceeded, "", true, ""},
		{"plugin reported timeout", live, reported, "", false, ""},
		{"plugin reported failure", live, &plugin.Failure{Kind: plugin.FailureUnknown}, "", false, ""},
		{"call broke off", live, broken, "", false, "the call to its plugin broke off"},
		{"plugin died", live, exited, "", false, ""},
		{"plugin OOM-killed", live, exited, "exceeded its memory limit", false, "OOM killer"},
		{"command OOM-killed, plugin reported", live, &plugin.Failure{Kind: plugin.FailureUnknown}, "exceeded its memory limit", false, "ended a process its plugin started"},
		{"command OOM-killed, plugin reported, retry-safe", live, &plugin.Failure{Kind: plugin.FailureUnknown}, "exceeded its memory limit", true, ""},
		{"plugin OOM-killed, retry-safe", live, exited, "exceeded its memory limit", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start{node: &graph.NodeDef{ID: "h", TimeoutMS: 5000, RetrySafe: tt.retrySafe}, position: "dag/h/1", attempt: "a1"}
			got := (&Executor{}).uncertain(s, cutOff(tt.ctx, s, tt.err, tt.oom))
			if tt.want == "" {
				if got != nil {
					t.Fatalf("got %+v, want the failure path", got[0].v)
				}
				return
			}
			if len(got) != 1 || got[0].Type != graph.EventNodePaused {
				t.Fatalf("got %v, want one node-paused", got)
			}
			p := got[0].v.(graph.PausedData)
			if p.Request.Kind != graph.PauseReconcile || p.Request.AttemptID != "a1" || p.Position != "dag/h/1" || !strings.Contains(p.Request.Reason, tt.want) {
				t.Fatalf("paused %+v, want reconcile-attempt of a1 naming %q", p, tt.want)
			}
		})
	}
}

// lagCtx is a context whose deadline passed but whose timer has not
// fired: Err is still nil.
type lagCtx struct {
	context.Context
	deadline time.Time
}

func (c lagCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// TestCrashCause: the reason of a reconcile request for an attempt a
// crash cut off is never empty: it names the cause the previous worker
// reported (a plugin that died), or how that worker ended, or that its
// end was not recorded; when that worker only recovered the attempt and
// ended before it recorded its pause, it says so.
func TestCrashCause(t *testing.T) {
	tests := []struct {
		ex        *runstate.Exit
		recovered bool
		want      string
	}{
		{&runstate.Exit{Code: "PLUGIN_DIED", Message: `plugin "shell" (/p) died during Invoke: killed by signal SIGKILL, under the attempt at dag/h/1`, ExitCode: 1}, false,
			`the worker running it stopped (PLUGIN_DIED: plugin "shell" (/p) died during Invoke: killed by signal SIGKILL, under the attempt at dag/h/1); its effect may have happened`},
		{&runstate.Exit{Code: "RUN_STORAGE", ExitCode: 1}, false, "the worker running it stopped (RUN_STORAGE); its effect may have happened"},
		{&runstate.Exit{Signal: "killed", ExitCode: -1}, false, "the worker running it was ended by a signal (killed); its effect may have happened"},
		{&runstate.Exit{ExitCode: 2}, false, "the worker running it exited with status 2; its effect may have happened"},
		{&runstate.Exit{Signal: "killed", ExitCode: -1}, true, "a crash cut it off, and the worker recovering it was ended by a signal (killed) before it recorded this pause; its effect may have happened"},
		{nil, true, "a crash cut it off, and the worker recovering it ended and its end was not recorded (its watchdog ended too, the machine stopped, or the record could not be written) before it recorded this pause; its effect may have happened"},
		{nil, false, "the worker running it ended and its end was not recorded (its watchdog ended too, the machine stopped, or the record could not be written); its effect may have happened"},
	}
	for _, tt := range tests {
		if got := crashCause(tt.ex, tt.recovered); got != tt.want {
			t.Errorf("crashCause(%+v, %v) = %q, want %q", tt.ex, tt.recovered, got, tt.want)
		}
	}
}
