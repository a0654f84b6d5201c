package executor

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

func TestPreflightRound(t *testing.T) {
	unsupported := func(plugin.Identity) (*plugin.AdmitResponse, error) {
		return &plugin.AdmitResponse{Supported: false, Reason: "no static check"}, nil
	}
	authFails := func(plugin.Identity) (*plugin.AdmitResponse, error) { return nil, failure(plugin.FailureAuth) }
	other := plugin.Identity{Provider: "p-mock", ModelFamily: "f", Model: "m2"}
	selectsOther := func(t plugin.Identity) (*plugin.AdmitResponse, error) {
		return &plugin.AdmitResponse{Supported: true, Selection: plugin.Identity{Model: "m2"}}, nil
	}
	tests := []struct {
		name   string
		setup  setup
		result string
		events []string
		calls  []string
	}{
		{
			name:   "every check passes and the node runs",
			setup:  setup{targets: []string{"mock"}, live: "required"},
			result: "complete",
			events: cat(checks("mock", 1, "digest", "health", "static", "live"), []string{runstate.EventPreflightAdmitted + " w=mock/passed/probe-4/false"}, nodeRun),
			calls:  []string{"mock:static", "mock:live", "mock:ordinary"},
		},
		{
			name:   "live skip admits on the static check",
			setup:  setup{targets: []string{"mock"}},
			result: "complete",
			events: cat(checks("mock", 1, "digest", "health", "static"), []string{runstate.EventPreflightAdmitted + " w=mock/passed//false"}, nodeRun),
			calls:  []string{"mock:static", "mock:ordinary"},
		},
		{
			name:   "a transient live failure pauses before dispatch",
			setup:  setup{targets: []string{"mock", "fb"}, live: "required", engines: map[string]*fakeEngine{"mock": {live: func() error { return failure(plugin.FailureTransient) }}}},
			result: "paused PREFLIGHT_PAUSED",
			events: cat(checks("mock", 1, "digest", "health", "static"), []string{
				runstate.EventProbeStarted + " probe-4 mock live", runstate.EventProbeFinished + " failed transient",
				runstate.EventPreflightPaused + " preflight-pause-1", graph.EventRunWaiting + " paused PREFLIGHT_PAUSED"}),
			calls: []string{"mock:static", "mock:live"},
		},
		{
			name:   "auth on the only target fails the run",
			setup:  setup{targets: []string{"mock"}, live: "required", engines: map[string]*fakeEngine{"mock": {admit: authFails}}},
			result: "fail PREFLIGHT_FAILED",
			events: cat(checks("mock", 1, "digest", "health"), []string{
				runstate.EventProbeStarted + " probe-3 mock static", runstate.EventProbeFinished + " failed auth",
				graph.EventModelUnavailable + " auth [{Adapter:mock Provider:p-mock Model:}]",
				runstate.EventPreflightFailed, graph.EventRunFinished + " fail PREFLIGHT_FAILED"}),
			calls: []string{"mock:static"},
		},
		{
			name:   "auth with a fallback admits the fallback, which runs the node",
			setup:  setup{targets: []string{"dead", "mock"}, live: "required", engines: map[string]*fakeEngine{"dead": {admit: authFails}}},
			result: "complete",
			events: cat(checks("dead", 1, "digest", "health"), []string{
				runstate.EventProbeStarted + " probe-3 dead static", runstate.EventProbeFinished + " failed auth",
				graph.EventModelUnavailable + " auth [{Adapter:dead Provider:p-dead Model:}]"},
				checks("mock", 4, "digest", "health", "static", "live"), []string{runstate.EventPreflightAdmitted + " w=mock/passed/probe-7/false"}, nodeRun),
			calls: []string{"dead:static", "mock:static", "mock:live", "mock:ordinary"},
		},
		{
			name:   "a lane-dead live failure retires and moves on",
			setup:  setup{targets: []string{"dead", "mock"}, live: "required", engines: map[string]*fakeEngine{"dead": {live: func() error { return failure(plugin.FailureModelUnavailable) }}}},
			result: "complete",
			events: cat(checks("dead", 1, "digest", "health", "static"), []string{
				runstate.EventProbeStarted + " probe-4 dead live", runstate.EventProbeFinished + " failed model_unavailable",
				graph.EventModelUnavailable + " model_unavailable [{Adapter: Provider:p-dead Model:m}]"},
				checks("mock", 5, "digest", "health", "static", "live"), []string{runstate.EventPreflightAdmitted + " w=mock/passed/probe-8/false"}, nodeRun),
			calls: []string{"dead:static", "dead:live", "mock:static", "mock:live", "mock:ordinary"},
		},
		{
			name:   "unsupported and block fails a single-target lane",
			setup:  setup{targets: []string{"mock"}, unsupported: "block", engines: map[string]*fakeEngine{"mock": {admit: unsupported}}},
			result: "fail PREFLIGHT_FAILED",
			events: cat(checks("mock", 1, "digest", "health"), []string{
				runstate.EventProbeStarted + " probe-3 mock static", runstate.EventProbeFinished + " unsupported",
				runstate.EventPreflightFailed, graph.EventRunFinished + " fail PREFLIGHT_FAILED"}),
			calls: []string{"mock:static"},
		},
		{
			name:   "unsupported and allow admits, never as a success",
			setup:  setup{targets: []string{"mock"}, live: "required", unsupported: "allow", engines: map[string]*fakeEngine{"mock": {admit: unsupported}}},
			result: "complete",
			events: cat(checks("mock", 1, "digest", "health"), []string{
				runstate.EventProbeStarted + " probe-3 mock static", runstate.EventProbeFinished + " unsupported"},
				checks("mock", 4, "live"), []string{runstate.EventPreflightAdmitted + " w=mock/unsupported/probe-4/false"}, nodeRun),
			calls: []string{"mock:static", "mock:live", "mock:ordinary"},
		},
		{
			name:   "a blocked target is withheld from the node call",
			setup:  setup{targets: []string{"mock", "fb"}, engines: map[string]*fakeEngine{"mock": {admit: unsupported}}},
			result: "complete",
			events: cat(checks("mock", 1, "digest", "health"), []string{
				runstate.EventProbeStarted + " probe-3 mock static", runstate.EventProbeFinished + " unsupported"},
				checks("fb", 4, "digest", "health", "static"), []string{runstate.EventPreflightAdmitted + " blocked:mock w=fb/passed//false"}, nodeRun),
			calls: []string{"mock:static", "fb:static", "fb:ordinary"},
		},
		{
			name:   "a selection the lane does not allow blocks the target",
			setup:  setup{targets: []string{"mock"}, engines: map[string]*fakeEngine{"mock": {admit: selectsOther}}},
			result: "fail PREFLIGHT_FAILED",
			events: cat(checks("mock", 1, "digest", "health"), []string{
				runstate.EventProbeStarted + " probe-3 mock static", runstate.EventProbeFinished + " disallowed",
				runstate.EventPreflightFailed, graph.EventRunFinished + " fail PREFLIGHT_FAILED"}),
			calls: []string{"mock:static"},
		},
		{
			name:   "a known substitution is an allowed selection",
			setup:  setup{targets: []string{"mock"}, subs: []plugin.Identity{other}, engines: map[string]*fakeEngine{"mock": {admit: selectsOther}}},
			result: "complete",
			events: cat(checks("mock", 1, "digest", "health", "static"), []string{runstate.EventPreflightAdmitted + " w=mock/passed//false"}, nodeRun),
			calls:  []string{"mock:static", "mock:ordinary"},
		},
		{
			name:   "an engine without Admit is unsupported",
			setup:  setup{targets: []string{"mock"}, unsupported: "allow", engines: map[string]*fakeEngine{"mock": {admit: func(plugin.Identity) (*plugin.AdmitResponse, error) { return nil, plugin.ErrWrongType }}}},
			result: "complete",
			events: cat(checks("mock", 1, "digest", "health"), []string{
				runstate.EventProbeStarted + " probe-3 mock static", runstate.EventProbeFinished + " unsupported",
				runstate.EventPreflightAdmitted + " w=mock/unsupported//false"}, nodeRun),
			calls: []string{"mock:static", "mock:ordinary"},
		},
		{
			name:   "Describe without Admit is unsupported with no call",
			setup:  setup{targets: []string{"mock"}, probes: map[string]PluginProbe{"mock": {NoAdmit: true, Health: func(context.Context) error { return nil }}}},
			result: "fail PREFLIGHT_FAILED",
			events: cat(checks("mock", 1, "digest", "health"), []string{
				runstate.EventProbeStarted + " probe-3 mock static", runstate.EventProbeFinished + " unsupported",
				runstate.EventPreflightFailed, graph.EventRunFinished + " fail PREFLIGHT_FAILED"}),
		},
		{
			name:   "a health answer other than SERVING pauses",
			setup:  setup{targets: []string{"mock", "fb"}, probes: map[string]PluginProbe{"mock": {Health: func(context.Context) error { return plugin.ErrNotServing }}}},
			result: "paused PREFLIGHT_PAUSED",
			events: cat(checks("mock", 1, "digest"), []string{
				runstate.EventProbeStarted + " probe-2 mock health", runstate.EventProbeFinished + " failed",
				runstate.EventPreflightPaused + " preflight-pause-1", graph.EventRunWaiting + " paused PREFLIGHT_PAUSED"}),
		},
		{
			name:   "a binary that changed pauses",
			setup:  setup{targets: []string{"mock"}, probes: map[string]PluginProbe{"mock": {Binary: "/dev/null", Health: func(context.Context) error { return nil }}}},
			result: "paused PREFLIGHT_PAUSED",
			events: []string{runstate.EventProbeStarted + " probe-1 mock digest", runstate.EventProbeFinished + " failed",
				runstate.EventPreflightPaused + " preflight-pause-1", graph.EventRunWaiting + " paused PREFLIGHT_PAUSED"},
		},
		{
			name:   "a static rate limit pauses",
			setup:  setup{targets: []string{"mock", "fb"}, engines: map[string]*fakeEngine{"mock": {admit: func(plugin.Identity) (*plugin.AdmitResponse, error) { return nil, failure(plugin.FailureRateLimit) }}}},
			result: "paused PREFLIGHT_PAUSED",
			events: cat(checks("mock", 1, "digest", "health"), []string{
				runstate.EventProbeStarted + " probe-3 mock static", runstate.EventProbeFinished + " failed rate_limit",
				runstate.EventPreflightPaused + " preflight-pause-1", graph.EventRunWaiting + " paused PREFLIGHT_PAUSED"}),
			calls: []string{"mock:static"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.setup)
			if got := h.execute(); got != tt.result {
				t.Errorf("result %q, want %q", got, tt.result)
			}
			if diff := cmp.Diff(tt.events, h.events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.calls, h.log.get()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPreflightHealthTimeoutStopsPlugin: a health check that never answers
// pauses the run within the preflight timeout and stops the plugin.
func TestPreflightHealthTimeoutStopsPlugin(t *testing.T) {
	stopped := make(chan struct{})
	hang := PluginProbe{
		Health: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
		Stop:   func() { close(stopped) },
	}
	h := newHarness(t, setup{targets: []string{"mock"}, timeout: 100 * time.Millisecond, probes: map[string]PluginProbe{"mock": hang}})
	if got := h.execute(); got != "paused PREFLIGHT_PAUSED" {
		t.Fatalf("result %q", got)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("the plugin that did not answer was not stopped")
	}
	var detail string
	_ = h.run.Read(context.Background(), 2, func(e store.Event) error {
		var d runstate.ProbeFinishedData
		if e.Type == runstate.EventProbeFinished && json.Unmarshal(e.Data, &d) == nil && d.Outcome == runstate.OutcomeFailed {
			detail = d.Detail
		}
		return nil
	})
	if !strings.Contains(detail, "within 100ms") || !strings.Contains(detail, "stopped") {
		t.Errorf("health probe detail %q", detail)
	}
}

// TestPreflightResumeReusesLiveReceipt: after a pause and
// preflight:resumed, static checks run again, the live receipt of a lane
// that passed is reused, and the paused lane is probed again.
func TestPreflightResumeReusesLiveReceipt(t *testing.T) {
	var ready sync.Mutex
	notReady := true
	b := &fakeEngine{live: func() error {
		ready.Lock()
		defer ready.Unlock()
		if notReady {
			return failure(plugin.FailureTransient)
		}
		return nil
	}}
	h := newHarness(t, setup{targets: []string{"a"}, live: "required"})
	// A second lane "v" on engine b, also live required, checked after "w".
	addLane(t, h, "b", b)
	if got := h.execute(); got != "paused PREFLIGHT_PAUSED" {
		t.Fatalf("first round: %q", got)
	}
	// Without preflight:resumed a new worker does not probe again.
	if got := h.execute(); got != "paused PREFLIGHT_PAUSED" {
		t.Fatalf("second start: %q", got)
	}
	if calls := h.log.get(); len(calls) != 4 {
		t.Fatalf("calls after a start without resume: %v", calls)
	}
	ready.Lock()
	notReady = false
	ready.Unlock()
	h.append(store.NewEvent{Type: runstate.EventPreflightResumed, Data: runstate.PreflightResumedData{PreflightEventID: "preflight-pause-1"}},
		store.NewEvent{Type: graph.EventRunResumed, Data: map[string]string{}})
	if got := h.execute(); got != "complete" {
		t.Fatalf("after resume: %q", got)
	}
	want := []string{"a:static", "a:live", "b:static", "b:live", "a:static", "b:static", "b:live", "a:ordinary"}
	if diff := cmp.Diff(want, h.log.get()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	rep := h.report()
	wantAdmitted := map[string]runstate.AdmittedLane{
		"w": {Target: target("a"), Static: runstate.OutcomePassed, LiveProbe: "probe-4", LiveReused: true},
		"v": {Target: target("b"), Static: runstate.OutcomePassed, LiveProbe: "probe-15"},
	}
	if diff := cmp.Diff(wantAdmitted, rep.Admitted); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	if rep.Phase != runstate.PreflightAdmitted || rep.LastPauseEventID != "preflight-pause-1" || rep.PauseEventID != "" {
		t.Errorf("report %+v", rep)
	}
	// Two passed live probes reported 3+1 tokens each; the failed one none.
	if rep.Usage != "unknown" {
		t.Errorf("usage %v, want unknown (a failed live probe reported none)", rep.Usage)
	}
}

// TestPreflightOpenProbe: a probe left open refuses the start with
// PROTOCOL (recorded once), and InterruptPreflight closes it in one
// conditional append, idempotently.
func TestPreflightOpenProbe(t *testing.T) {
	h := newHarness(t, setup{targets: []string{"mock"}, live: "required"})
	h.append(store.NewEvent{Type: runstate.EventProbeStarted, Data: runstate.ProbeStartedData{Lane: "w", Target: target("mock"), Check: runstate.CheckLive, ProbeID: "probe-1"}})
	for i := 0; i < 2; i++ {
		res, err := h.executor().Execute(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := res.Output
		if res.Kind != runstate.KindFail || res.Code != runstate.CodeProtocol || !strings.Contains(out.Message, "probe-1") || !strings.Contains(out.Message, "obversa preflight interrupt") {
			t.Fatalf("start %d: %+v", i+1, res)
		}
	}
	if got := len(h.events()); got != 2 {
		t.Fatalf("%d events after two refused starts, want probe-started and one run-waiting: %v", got, h.events())
	}
	if rep := h.report(); rep.OpenProbe == nil || rep.OpenProbe.ProbeID != "probe-1" || rep.Phase != runstate.PreflightPending {
		t.Fatalf("report %+v", rep)
	}

	stale := h.executor()
	x := h.executor()
	id, already, err := x.InterruptPreflight(context.Background())
	if err != nil || already || id != "preflight-pause-1" {
		t.Fatalf("interrupt: %q %v %v", id, already, err)
	}
	if _, _, err := stale.InterruptPreflight(context.Background()); !errors.Is(err, store.ErrRevisionConflict) {
		t.Fatalf("interrupt from a stale fold: %v, want REVISION_CONFLICT", err)
	}
	before := h.events()
	id, already, err = h.executor().InterruptPreflight(context.Background())
	if err != nil || !already || id != "preflight-pause-1" {
		t.Fatalf("second interrupt: %q %v %v", id, already, err)
	}
	if diff := cmp.Diff(before, h.events()); diff != "" {
		t.Fatalf("a repeated interrupt appended (-before +after):\n%s", diff)
	}
	want := []string{runstate.EventProbeStarted + " probe-1 mock live", graph.EventRunWaiting + " fail PROTOCOL",
		runstate.EventProbeFinished + " interrupted", runstate.EventPreflightPaused + " preflight-pause-1", graph.EventRunWaiting + " paused PREFLIGHT_PAUSED"}
	if diff := cmp.Diff(want, before); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	rep := h.report()
	if rep.Phase != runstate.PreflightPaused || rep.PauseReason != runstate.ReasonInterrupted || rep.OpenProbe != nil || rep.Usage != "unknown" {
		t.Fatalf("report after interrupt %+v", rep)
	}

	// Resumed, the next start runs a whole round.
	h.append(store.NewEvent{Type: runstate.EventPreflightResumed, Data: runstate.PreflightResumedData{PreflightEventID: id}},
		store.NewEvent{Type: graph.EventRunResumed, Data: map[string]string{}})
	if got := h.execute(); got != "complete" {
		t.Fatalf("after resume: %q", got)
	}
	// Nothing is left to interrupt.
	if _, _, err := h.executor().InterruptPreflight(context.Background()); !errors.Is(err, ErrNothingToInterrupt) {
		t.Fatalf("interrupt of an admitted run: %v", err)
	}
}

// TestPreflightCancelLeavesProbeOpen: a worker stopped during a probe
// records nothing more; the probe stays open for the next start.
func TestPreflightCancelLeavesProbeOpen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := &fakeEngine{live: func() error { cancel(); return failure(plugin.FailureAborted) }}
	h := newHarness(t, setup{targets: []string{"mock"}, live: "required", engines: map[string]*fakeEngine{"mock": e}})
	if _, err := h.executor().Execute(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Execute: %v, want context.Canceled", err)
	}
	rep := h.report()
	if rep.OpenProbe == nil || rep.OpenProbe.Check != runstate.CheckLive {
		t.Fatalf("report %+v, want the live probe open", rep)
	}
}

// TestPreflightDisabled: a plan without a policy records no preflight
// event.
func TestPreflightDisabled(t *testing.T) {
	h := newHarness(t, setup{targets: []string{"mock"}})
	ctx := context.Background()
	rs := h.state().Start()
	rs.Plan.Preflight = nil
	st, _ := store.Open(rs.Plan.Storage.Directory, "default")
	run := ownedRun(t, st, "nopf")
	rs.Plan.RunID = "nopf"
	nrs, _ := plan.NewRunStarted("run.hcl", rs.Definition, rs.Plan, time.Now())
	if _, err := run.Append(ctx, 0, store.NewEvent{Type: graph.EventRunStarted, Data: nrs}); err != nil {
		t.Fatal(err)
	}
	h.run = run
	if got := h.execute(); got != "complete" {
		t.Fatalf("result %q", got)
	}
	if diff := cmp.Diff(nodeRun, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if rep := h.report(); rep.Phase != runstate.PreflightDisabled {
		t.Errorf("phase %q", rep.Phase)
	}
}
