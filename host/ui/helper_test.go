package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testRun is a real record in a temporary storage directory: a run of
// three nodes — "a" an engine node, "b" a binding after "a", "c" waiting
// for approval — that the test appends to as it goes.
type testRun struct {
	t       testing.TB
	storage string
	rec     store.Record
	rev     int64
	// release gives up the run's lock, as a watchdog that ended does.
	release func()
}

func newTestRun(t *testing.T, storage, id string, secretEnv ...string) *testRun {
	t.Helper()
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 3, RetryCapPerNode: 1, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{
		{ID: "a", Kind: graph.KindRequired, Lane: "w", Prompt: "p", DependsOn: []string{}},
		{ID: "b", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"a"}},
		{ID: "c", Kind: graph.KindRequired, Lane: "w", Prompt: "q", DependsOn: []string{}, Approval: true},
	}}
	return newTestRunOf(t, storage, id, def, secretEnv...)
}

// newTestRunOf starts a run of def: its record holds graph:run-started
// with a plan whose lane "w" is the mock engine's.
func newTestRunOf(t testing.TB, storage, id string, def *graph.Definition, secretEnv ...string) *testRun {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(storage, "default")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.CreateRun(ctx, id, store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := rec.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Release(); rec.Close() })
	r0 := &testRun{release: func() { owner.Release() }}
	target := plugin.Identity{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{}}
	p := &plan.Plan{RunID: id, Namespace: "default", Restart: plan.Restart{MaxRestarts: 1, InitialBackoffMS: 1, MaxBackoffMS: 1},
		Limits: plan.Limits{TimeoutMS: 60000}, Plugins: []plan.PluginPlan{}, Lanes: []plan.LanePlan{{Name: "w", Requested: target, Effective: target,
			KnownSubstitutions: []plugin.Identity{}, Fallbacks: []plugin.Identity{}}}}
	p.Storage.KnownSecretsFromEnv = secretEnv
	rs, err := plan.NewRunStarted("run.hcl", def, p, t0)
	if err != nil {
		t.Fatal(err)
	}
	r := &testRun{t: t, storage: storage, rec: rec, release: r0.release}
	r.append(graph.EventRunStarted, rs)
	return r
}

// append records one event at the run's revision.
func (r *testRun) append(typ string, data any) {
	r.t.Helper()
	rev, err := r.rec.Append(context.Background(), r.rev, store.NewEvent{Type: typ, Data: data})
	if err != nil {
		r.t.Fatal(err)
	}
	r.rev = rev
}

// newTestServer serves storage with o (Storage filled in).
func newTestServer(t *testing.T, storage string, o Options) (*Server, *httptest.Server) {
	t.Helper()
	o.Storage = storage
	if o.Executable == "" {
		o.Executable = "/bin/false"
	}
	if o.Log == nil {
		o.Log = log.New(testWriter{t}, "", 0)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); hs.Close() })
	return s, hs
}

// testWriter sends the server's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// sse reads server-sent events from a response.
type sse struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

func openSSE(t *testing.T, ctx context.Context, url string) *sse {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET %s: %s %s", url, resp.Status, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return &sse{body: resp.Body, sc: sc}
}

// next returns the next event's name and data.
func (s *sse) next(t *testing.T) (string, []byte) {
	t.Helper()
	var name string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			return name, []byte(strings.TrimPrefix(line, "data: "))
		}
	}
	t.Fatalf("event stream ended: %v", s.sc.Err())
	return "", nil
}

// until reads events until one named name satisfies ok.
func (s *sse) until(t *testing.T, name string, ok func(data []byte) bool) {
	t.Helper()
	for {
		n, d := s.next(t)
		if n == name && ok(d) {
			return
		}
	}
}

// nodeStatus is node's status in a "run" message's view, or, in a
// "change", its new status ("" when the change does not set it).
func nodeStatus(t *testing.T, data []byte, node string) string {
	t.Helper()
	type idStatus struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	var m struct {
		Base  int64 `json:"base"`
		Nodes json.RawMessage
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var nodes []idStatus
	if m.Base == 0 {
		if err := json.Unmarshal(m.Nodes, &nodes); err != nil {
			t.Fatal(err)
		}
	} else if m.Nodes != nil {
		var p struct{ Set map[string]idStatus }
		if err := json.Unmarshal(m.Nodes, &p); err != nil {
			t.Fatal(err)
		}
		for _, n := range p.Set {
			nodes = append(nodes, n)
		}
	}
	for _, n := range nodes {
		if n.ID == node {
			return n.Status
		}
	}
	return ""
}

// phaseOf is the run's phase a "run" message says, or a "change" sets
// ("" when it does not).
func phaseOf(t *testing.T, name string, data []byte) string {
	t.Helper()
	var v struct {
		Run struct {
			Phase string `json:"phase"`
		} `json:"run"`
		Set struct {
			Run struct {
				Phase string `json:"phase"`
			} `json:"run"`
		} `json:"set"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if name == "change" {
		return v.Set.Run.Phase
	}
	return v.Run.Phase
}
