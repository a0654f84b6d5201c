package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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

// fakeEngine is an in-process engine whose answers the test scripts. It
// logs "<adapter>:static", "<adapter>:live" and "<adapter>:ordinary".
type fakeEngine struct {
	name  string
	log   *callLog
	admit func(plugin.Identity) (*plugin.AdmitResponse, error)
	live  func() error
}

type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func (e *fakeEngine) Describe(context.Context) (*plugin.Description, error) {
	return &plugin.Description{Name: e.name}, nil
}

func (e *fakeEngine) Configure(context.Context, json.RawMessage) ([]plugin.Diagnostic, error) {
	return nil, nil
}

func (e *fakeEngine) Admit(_ context.Context, req plugin.AdmitRequest) (*plugin.AdmitResponse, error) {
	e.log.add(e.name + ":static")
	if e.admit != nil {
		return e.admit(req.Target)
	}
	return &plugin.AdmitResponse{Supported: true, Selection: req.Target}, nil
}

func (e *fakeEngine) Run(_ context.Context, req plugin.RunRequest, _ plugin.Emitter) (*plugin.RunResult, error) {
	if req.Purpose == plugin.PurposePreflight {
		e.log.add(e.name + ":live")
		if req.WorkspaceDir != "" || len(req.Tools) != 0 || len(req.Target.Tools) != 0 {
			return nil, fmt.Errorf("live probe with a workspace or tools: %+v", req)
		}
		if e.live != nil {
			if err := e.live(); err != nil {
				return nil, err
			}
		}
		return &plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "OK", Final: true}},
			Usage: plugin.Usage{Known: true, Input: 3, Output: 1}, Requested: req.Target, Effective: req.Target}, nil
	}
	e.log.add(e.name + ":ordinary")
	return &plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "done", Final: true}},
		Usage: plugin.Usage{Known: true, Input: 1, Output: 1}, Requested: req.Target, Effective: req.Target}, nil
}

// setup describes one test run: the lane's targets (adapter names; the
// provider is "p-<adapter>"), its policy, and each engine's behaviour.
type setup struct {
	targets     []string
	subs        []plugin.Identity
	live        string // "required" or "skip"
	unsupported string // "block" or "allow"
	timeout     time.Duration
	engines     map[string]*fakeEngine
	probes      map[string]PluginProbe // overrides, by adapter
}

func target(adapter string) plugin.Identity {
	return plugin.Identity{Adapter: adapter, Provider: "p-" + adapter, ModelFamily: "f", Model: "m", Tools: []string{}}
}

// harness is a stored run with one engine node on lane "w".
type harness struct {
	t      *testing.T
	run    store.Record
	log    *callLog
	engine map[string]plugin.Engine
	probes map[string]PluginProbe
}

func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	h := &harness{t: t, log: &callLog{}, engine: map[string]plugin.Engine{}, probes: map[string]PluginProbe{}}
	p := &plan.Plan{RunID: "r1", Namespace: "default", Storage: plan.Storage{Directory: dir},
		Preflight: &plan.Preflight{TimeoutMS: 2000, Lanes: []plan.LanePreflight{{Lane: "w", Live: s.live, UnsupportedStatic: s.unsupported}}},
		Plugins:   []plan.PluginPlan{}, Lanes: []plan.LanePlan{}}
	if s.timeout > 0 {
		p.Preflight.TimeoutMS = s.timeout.Milliseconds()
	}
	if s.live == "" {
		p.Preflight.Lanes[0].Live = "skip"
	}
	if s.unsupported == "" {
		p.Preflight.Lanes[0].UnsupportedStatic = "block"
	}
	lane := plan.LanePlan{Name: "w", Requested: target(s.targets[0]), Effective: target(s.targets[0]),
		KnownSubstitutions: append([]plugin.Identity{}, s.subs...), Fallbacks: []plugin.Identity{}}
	for _, a := range s.targets[1:] {
		lane.Fallbacks = append(lane.Fallbacks, target(a))
	}
	p.Lanes = append(p.Lanes, lane)
	for _, a := range s.targets {
		bin := filepath.Join(dir, "bin-"+a)
		if err := os.WriteFile(bin, []byte("engine "+a), 0o755); err != nil {
			t.Fatal(err)
		}
		sum, err := plugin.FileSHA256(bin)
		if err != nil {
			t.Fatal(err)
		}
		p.Plugins = append(p.Plugins, plan.PluginPlan{Name: a, Type: "engine", SHA256: sum, Source: bin, ConfigDigest: "sha256:x"})
		e := s.engines[a]
		if e == nil {
			e = &fakeEngine{}
		}
		e.name, e.log = a, h.log
		h.engine[a] = e
		h.probes[a] = PluginProbe{Binary: bin, Health: func(context.Context) error { return nil }}
		if o, ok := s.probes[a]; ok {
			if o.Binary == "" {
				o.Binary = bin
			}
			h.probes[a] = o
		}
	}
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 1, KeyedConcurrency: []graph.KeyLimit{},
		Nodes: []graph.NodeDef{{ID: "a", Kind: graph.KindRequired, Lane: "w", Prompt: "hi", DependsOn: []string{}}}}
	rs, err := plan.NewRunStarted("run.hcl", def, p, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	h.run = ownedRun(t, st, "r1")
	if _, err := h.run.Append(ctx, 0, store.NewEvent{Type: graph.EventRunStarted, Data: rs}); err != nil {
		t.Fatal(err)
	}
	return h
}

// ownedRun creates run id in st, owned by the test, closed at its end.
func ownedRun(t *testing.T, st *store.Store, id string) store.Record {
	t.Helper()
	ctx := context.Background()
	run, err := st.CreateRun(ctx, id, store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := run.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Release(); run.Close() })
	return run
}

// executor folds the record into a fresh executor with the harness's
// plugins.
func (h *harness) executor() *Executor {
	h.t.Helper()
	x, err := New(Options{Run: h.run, State: h.state(), Engines: h.engine, Probes: h.probes})
	if err != nil {
		h.t.Fatal(err)
	}
	return x
}

// state folds the record.
func (h *harness) state() *runstate.State {
	h.t.Helper()
	st, err := runstate.Load(context.Background(), h.run)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// report is the preflight report of the record.
func (h *harness) report() runstate.PreflightReport {
	h.t.Helper()
	return h.state().Preflight().Report()
}

// execute runs a fresh executor and returns "<kind> <code>".
func (h *harness) execute() string {
	h.t.Helper()
	res, err := h.executor().Execute(context.Background())
	if err != nil {
		h.t.Fatalf("Execute: %v", err)
	}
	return strings.TrimSpace(string(res.Kind) + " " + res.Code)
}

// append records events as another process would.
func (h *harness) append(events ...store.NewEvent) {
	h.t.Helper()
	if _, err := h.run.Append(context.Background(), h.run.Rev(), events...); err != nil {
		h.t.Fatal(err)
	}
}

// events summarises the record after graph:run-started, one line per
// event, with what each test asserts on.
func (h *harness) events() []string {
	h.t.Helper()
	var out []string
	err := h.run.Read(context.Background(), 2, func(e store.Event) error {
		line := e.Type
		switch e.Type {
		case runstate.EventProbeStarted:
			var d runstate.ProbeStartedData
			_ = json.Unmarshal(e.Data, &d)
			line += fmt.Sprintf(" %s %s %s", d.ProbeID, d.Target.Adapter, d.Check)
		case runstate.EventProbeFinished:
			var d runstate.ProbeFinishedData
			_ = json.Unmarshal(e.Data, &d)
			line += " " + d.Outcome
			if d.FailureKind != "" {
				line += " " + d.FailureKind
			}
		case graph.EventModelUnavailable:
			var d graph.ModelUnavailableData
			_ = json.Unmarshal(e.Data, &d)
			line += fmt.Sprintf(" %s %+v", d.FailureKind, d.Retired)
		case runstate.EventPreflightPaused:
			line += " " + e.ID
		case runstate.EventPreflightAdmitted:
			var d runstate.PreflightAdmittedData
			_ = json.Unmarshal(e.Data, &d)
			var lanes []string
			for name, l := range d.Lanes {
				lanes = append(lanes, fmt.Sprintf("%s=%s/%s/%s/%v", name, l.Target.Adapter, l.Static, l.LiveProbe, l.LiveReused))
			}
			for _, b := range d.Blocked {
				lanes = append(lanes, "blocked:"+b.Target.Adapter)
			}
			sort.Strings(lanes)
			line += " " + strings.Join(lanes, " ")
		case graph.EventRunFinished, graph.EventRunWaiting:
			var d runstate.Result
			_ = json.Unmarshal(e.Data, &d)
			line += strings.TrimRight(" "+string(d.Kind)+" "+d.Code, " ")
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// nodeRun is the record of the one node running to completion.
var nodeRun = []string{graph.EventNodeDispatched, graph.EventAttemptStarted, graph.EventEngineAttempt, graph.EventNodeCompleted, graph.EventRunFinished + " complete"}

// checks lists the probe-started/finished pairs of adapter's checks from
// probe number n on, all passed.
func checks(adapter string, n int, names ...string) []string {
	var out []string
	for i, c := range names {
		out = append(out, fmt.Sprintf("%s probe-%d %s %s", runstate.EventProbeStarted, n+i, adapter, c), runstate.EventProbeFinished+" passed")
	}
	return out
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func failure(kind plugin.FailureKind) error {
	return &plugin.Failure{Kind: kind, Message: "scripted " + string(kind)}
}

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

// addLane rewrites the harness's run-started with a second lane "v" served
// by a new engine adapter, checked after "w".
func addLane(t *testing.T, h *harness, adapter string, e *fakeEngine) {
	t.Helper()
	ctx := context.Background()
	rs := h.state().Start()
	p := rs.Plan
	dir := p.Storage.Directory
	bin := filepath.Join(dir, "bin-"+adapter)
	if err := os.WriteFile(bin, []byte("engine "+adapter), 0o755); err != nil {
		t.Fatal(err)
	}
	sum, _ := plugin.FileSHA256(bin)
	p.Plugins = append(p.Plugins, plan.PluginPlan{Name: adapter, Type: "engine", SHA256: sum, Source: bin, ConfigDigest: "sha256:x"})
	p.Lanes = append(p.Lanes, plan.LanePlan{Name: "v", Requested: target(adapter), Effective: target(adapter),
		KnownSubstitutions: []plugin.Identity{}, Fallbacks: []plugin.Identity{}})
	p.Preflight.Lanes = append(p.Preflight.Lanes, plan.LanePreflight{Lane: "v", Live: "required", UnsupportedStatic: "block"})
	e.name, e.log = adapter, h.log
	h.engine[adapter] = e
	h.probes[adapter] = PluginProbe{Binary: bin, Health: func(context.Context) error { return nil }}
	// A fresh record: the run-started is the first event and cannot be
	// replaced, so create a new run with the edited plan.
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	fresh := ownedRun(t, st, "r2")
	p.RunID = "r2"
	nrs, err := plan.NewRunStarted("run.hcl", rs.Definition, p, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Append(ctx, 0, store.NewEvent{Type: graph.EventRunStarted, Data: nrs}); err != nil {
		t.Fatal(err)
	}
	h.run = fresh
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
