package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

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
func ownedRun(t testing.TB, st *store.Store, id string) store.Record {
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
