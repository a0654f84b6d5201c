package graph

import (
	"errors"
	"testing"
)

// FuzzApply feeds arbitrary event sequences to the fold of a graph with a
// node, a loop and a for_each node: it must never panic and must keep its
// in-flight count consistent with the units' statuses.
func FuzzApply(f *testing.F) {
	f.Add(EventNodeDispatched, []byte(`{"dispatches":[{"node":"a","position":"dag/a/1"}]}`), EventNodeCompleted, []byte(`{"node":"a","position":"dag/a/1"}`))
	f.Add(EventNodePaused, []byte(`{"node":"a"}`), EventNodeResumed, []byte(`{}`))
	f.Add(EventNodeDispatched, []byte(`{"dispatches":[{"node":"a","position":"dag/a/1"}]}`), EventActionDecided,
		[]byte(`{"node":"a","position":"dag/a/1","attempt":1,"verdict":"deny","reason":"r","policy":"guard"}`))
	f.Add(EventNodeExpanded, []byte(`{"node":"e","keys":["x","y"]}`), EventNodeDispatched, []byte(`{"dispatches":[{"node":"e","position":"dag/e[x]/1"}]}`))
	f.Add(EventLoopStarted, []byte(`{"loop":"l","max_rounds":2}`), EventRoundStarted, []byte(`{"loop":"l","round":1}`))
	f.Fuzz(func(t *testing.T, t1 string, d1 []byte, t2 string, d2 []byte) {
		def := &Definition{GlobalConcurrency: 2, Nodes: []NodeDef{node("a", KindRequired), node("b", KindOptional, "a"), node("f", KindFinalizer),
			forEach("e", 3, "${x}"),
			{ID: "l", Kind: KindRequired, DependsOn: []string{}, Loop: loopDef("l", 2, "r", "${true}", member("w"), member("r", "w"))}}}
		s, err := New(def)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range checkDecide(t, s).Transitions {
			if err := s.ApplyData(tr.Data); err != nil {
				t.Fatal(err)
			}
		}
		_ = s.Apply(t1, d1)
		_ = s.Apply(t2, d2)
		if got := len(s.InFlight()); got != s.inflight {
			t.Fatalf("inflight counter %d, statuses say %d", s.inflight, got)
		}
		d := checkDecide(t, s)
		for _, a := range d.Asks {
			_ = a.Vertex.Status()
		}
	})
}

func TestNoRetryForFinalFailures(t *testing.T) {
	tests := []struct {
		code, kind string
		retried    bool
	}{
		{"NODE_FAILED", "transient", true},
		{"NODE_FAILED", "rate_limit", true},
		{"TIMEOUT", "timeout", true},
		{"DENIED", "", false},
		{"INPUT_RENDER", "", false},
		{"RESULT_TOO_LARGE", "", false},
		{"ENGINE_UNAVAILABLE", "", false},
		{"NODE_FAILED", "invalid_config", false},
		{"NODE_FAILED", "auth", false},
	}
	for _, tt := range tests {
		t.Run(tt.code+"/"+tt.kind, func(t *testing.T) {
			def := &Definition{GlobalConcurrency: 1, RetryCapPerNode: 2, Nodes: []NodeDef{node("a", KindRequired)}}
			s, err := New(def)
			if err != nil {
				t.Fatal(err)
			}
			ds, _ := next(t, s)
			apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: ds})
			apply(t, s, EventAttemptStarted, AttemptStartedData{Node: "a", Position: "dag/a/1"})
			apply(t, s, EventNodeFailed, FailedData{Node: "a", Position: "dag/a/1", Code: tt.code, FailureKind: tt.kind})
			next, out := next(t, s)
			if retried := len(next) == 1 && next[0].Position == "dag/a/2"; retried != tt.retried {
				t.Fatalf("retried = %v (next %v, outcome %+v), want %v", retried, next, out, tt.retried)
			}
		})
	}
}

// TestActionDecision: a policy decision is kept for the position's offer;
// a resume that answers a wait drops it (the policies are asked again),
// a crash's retry-safe resume of a started attempt keeps it, and a new
// position starts without one. A decision on a position that is not
// dispatched, or with no known verdict, does not replay.
func TestActionDecision(t *testing.T) {
	def := &Definition{GlobalConcurrency: 1, RetryCapPerNode: 1, Nodes: []NodeDef{node("a", KindRequired)}}
	s, err := New(def)
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := next(t, s)
	apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: ds})
	wait := ActionDecidedData{Node: "a", Position: "dag/a/1", Attempt: 1, Verdict: VerdictWait, Policy: "guard"}
	apply(t, s, EventActionDecided, wait)
	if d := s.Node("a").Decision; d == nil || d.Verdict != VerdictWait {
		t.Fatalf("decision %+v, want the wait", d)
	}
	apply(t, s, EventNodePaused, PausedData{Node: "a", Position: "dag/a/1", Request: PauseRequest{Kind: PauseApproval, Position: "dag/a/1"}})
	apply(t, s, EventNodeResumed, ResumedData{Node: "a", Position: "dag/a/1", Reason: ResumedOperator})
	if d := s.Node("a").Decision; d != nil {
		t.Fatalf("a resumed wait kept its decision %+v", d)
	}
	allow := wait
	allow.Verdict = VerdictAllow
	apply(t, s, EventActionDecided, allow)
	apply(t, s, EventAttemptStarted, AttemptStartedData{Node: "a", Position: "dag/a/1", RetrySafe: true})
	apply(t, s, EventNodeResumed, ResumedData{Node: "a", Position: "dag/a/1", Reason: ResumedRetrySafe})
	if d := s.Node("a").Decision; d == nil || d.Verdict != VerdictAllow {
		t.Fatalf("a crash's resume dropped the allow: %+v", d)
	}
	apply(t, s, EventAttemptStarted, AttemptStartedData{Node: "a", Position: "dag/a/1", RetrySafe: true})
	apply(t, s, EventNodeFailed, FailedData{Node: "a", Position: "dag/a/1", Code: "EFFECT_FAILED"})
	ds, _ = next(t, s)
	apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: ds})
	if n := s.Node("a"); n.Position != "dag/a/2" || n.Decision != nil {
		t.Fatalf("the retry at %s starts with decision %+v", n.Position, n.Decision)
	}
	for name, bad := range map[string]ActionDecidedData{
		"not dispatched":  {Node: "a", Position: "dag/a/1", Verdict: VerdictAllow},
		"unknown verdict": {Node: "a", Position: "dag/a/2", Verdict: "maybe"},
	} {
		if err := s.Apply(EventActionDecided, mustJSON(t, bad)); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("%s: %v, want INVALID_EVENT", name, err)
		}
	}
}
