package plan

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
)

func TestAttemptID(t *testing.T) {
	a := AttemptID("default", "r1", "draft", "dag/draft/1")
	tests := []struct {
		name                    string
		ns, run, node, position string
		same                    bool
	}{
		{"same position", "default", "r1", "draft", "dag/draft/1", true},
		{"retry position", "default", "r1", "draft", "dag/draft/2", false},
		{"other run", "default", "r2", "draft", "dag/draft/1", false},
		{"other namespace", "team", "r1", "draft", "dag/draft/1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := AttemptID(tt.ns, tt.run, tt.node, tt.position)
			if (a == b) != tt.same || !strings.HasPrefix(b, "sha256:") || len(b) != len("sha256:")+64 {
				t.Fatalf("AttemptID = %s (first %s), same = %v", b, a, tt.same)
			}
		})
	}
}

// TestAttemptIDCanonical holds AttemptID to the digest of the canonical
// JSON of its four strings, the id every record already holds: plain
// strings take the direct path, the others Digest's.
func TestAttemptIDCanonical(t *testing.T) {
	const want = "sha256:81f5a2b55519cd4ebde75ba0d2ec8c682d80998992f98bbae87c5e50f18a9ba0"
	if got := AttemptID("default", "r1", "draft", "dag/draft/1"); got != want {
		t.Fatalf("AttemptID = %s, want %s (ids in existing records would change)", got, want)
	}
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "<&>", "tab\t", "\x7f", "é", "\u2028", "\xff", "loop/l/2/each/k/1"} {
		checkAttemptID(t, "default", s, "n", "dag/n/1")
		checkAttemptID(t, s, "r", s, s)
	}
}

// FuzzAttemptID compares AttemptID with the digest of the map it names.
func FuzzAttemptID(f *testing.F) {
	f.Add("default", "r1", "draft", "dag/draft/1")
	f.Add("ns", `"`, "\\", "\u2028")
	f.Fuzz(func(t *testing.T, ns, run, node, position string) {
		checkAttemptID(t, ns, run, node, position)
	})
}

func checkAttemptID(t *testing.T, ns, run, node, position string) {
	t.Helper()
	want, err := Digest(map[string]string{"namespace": ns, "run": run, "node": node, "position": position})
	if err != nil {
		t.Skip(err) // not JSON-encodable text: Digest's own error
	}
	if got := AttemptID(ns, run, node, position); got != want {
		t.Fatalf("AttemptID(%q, %q, %q, %q) = %s, want %s", ns, run, node, position, got, want)
	}
}

func TestRunStartedCheck(t *testing.T) {
	def := &graph.Definition{GlobalConcurrency: 1, Nodes: []graph.NodeDef{{ID: "a", Kind: graph.KindRequired, Binding: "b", DependsOn: []string{}}}}
	p := &Plan{RunID: "r", Namespace: "default", Plugins: []PluginPlan{}, Lanes: []LanePlan{}}
	rs, err := NewRunStarted("run.hcl", def, p, testTime)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Check(); err != nil {
		t.Fatalf("fresh run-started: %v", err)
	}
	rs.Definition.Nodes[0].RetrySafe = true // an edit of the stored definition
	if err := rs.Check(); !errors.Is(err, ErrDigest) {
		t.Fatalf("edited definition: %v, want ErrDigest", err)
	}
	rs.Definition.Nodes[0].RetrySafe = false
	rs.Plan.Limits.MaxDispatches = 9
	if err := rs.Check(); !errors.Is(err, ErrDigest) {
		t.Fatalf("edited plan: %v, want ErrDigest", err)
	}
}

func TestDigestIsCanonical(t *testing.T) {
	a, err := Digest(map[string]any{"b": 1, "a": []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Digest(map[string]any{"a": []int{1, 2}, "b": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("key order or number form changed the digest: %s vs %s", a, b)
	}
}

func TestRestartBackoff(t *testing.T) {
	tests := []struct {
		n                int
		initialMS, maxMS int64
		want             time.Duration
	}{
		{0, 1000, 30000, time.Second},
		{1, 1000, 30000, 2 * time.Second},
		{4, 1000, 30000, 16 * time.Second},
		{5, 1000, 30000, 30 * time.Second},
		{60, 1000, 30000, 30 * time.Second},
		{3, 50, 400, 400 * time.Millisecond},
		{3, 50, 0, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		r := Restart{InitialBackoffMS: tt.initialMS, MaxBackoffMS: tt.maxMS}
		if got := r.Backoff(tt.n); got != tt.want {
			t.Errorf("%+v.Backoff(%d) = %s, want %s", r, tt.n, got, tt.want)
		}
	}
}

func TestPreflightTimeoutDefault(t *testing.T) {
	if got := (&Plan{}).PreflightTimeout(); got != hcl.DefaultPreflightTimeout {
		t.Errorf("no policy: %s", got)
	}
	if got := (&Plan{Preflight: &Preflight{TimeoutMS: 1500}}).PreflightTimeout(); got != 1500*time.Millisecond {
		t.Errorf("1500 ms: %s", got)
	}
}

// TestPluginStartTimeout: a plugin's start_timeout is recorded in whole
// milliseconds, a part of one rounded up so that a bound below a
// millisecond does not read back as the default, and none leaves the
// default (0).
func TestPluginStartTimeout(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want time.Duration
	}{
		{0, 0},
		{2 * time.Minute, 2 * time.Minute},
		{1500 * time.Microsecond, 2 * time.Millisecond},
		{time.Nanosecond, time.Millisecond},
	}
	for _, tt := range tests {
		pl := hcl.Plugin{Name: "p", Type: "engine", Path: "/p", StartTimeout: tt.in}
		pp, err := Plugin(&pl, strings.Repeat("a", 64))
		if err != nil {
			t.Fatal(err)
		}
		if got := pp.StartTimeout(); got != tt.want {
			t.Errorf("start_timeout %s: the plan holds %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestLaneProviders: a launch target without a provider takes the one the
// lane's other identities give for its adapter and model; none or several
// refuse the plan with ENGINE_IDENTITY_UNRESOLVED.
func TestLaneProviders(t *testing.T) {
	sub := []hcl.Target{{Adapter: "mock", Provider: "local", Model: "m1"}}
	tests := []struct {
		name     string
		lane     hcl.Lane
		want     string // effective provider, "" for a refusal
		fallback string
	}{
		{"written", hcl.Lane{Requested: hcl.Target{Adapter: "mock", Provider: "p"}}, "p", ""},
		{"from a known substitution", hcl.Lane{Requested: hcl.Target{Adapter: "mock", Model: "m1"}, KnownSubstitutions: sub}, "local", ""},
		{"a fallback from the requested", hcl.Lane{Requested: hcl.Target{Adapter: "mock", Provider: "p"},
			Fallbacks: []hcl.Target{{Adapter: "mock"}}}, "p", "p"},
		{"another model does not count", hcl.Lane{Requested: hcl.Target{Adapter: "mock", Model: "m2"}, KnownSubstitutions: sub}, "", ""},
		{"ambiguous", hcl.Lane{Requested: hcl.Target{Adapter: "mock"},
			KnownSubstitutions: append([]hcl.Target{{Adapter: "mock", Provider: "remote"}}, sub...)}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lp, err := lanePlan(tt.lane)
			switch {
			case tt.want == "":
				if !errors.Is(err, ErrIdentityUnresolved) {
					t.Fatalf("lanePlan = %+v, %v; want ErrIdentityUnresolved", lp, err)
				}
			case err != nil || lp.Effective.Provider != tt.want || lp.Requested.Provider != tt.lane.Requested.Provider:
				t.Fatalf("lanePlan = %+v, %v; want effective provider %q, requested as written", lp, err, tt.want)
			case tt.fallback != "" && lp.Fallbacks[0].Provider != tt.fallback:
				t.Fatalf("fallback %+v, want provider %q", lp.Fallbacks[0], tt.fallback)
			}
		})
	}
}
