package ui

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/obversa/obversa/host/graph"
)

// pageToken returns the token a rendered page carries.
func pageToken(t *testing.T, url string) string {
	t.Helper()
	page := get(t, url)
	_, rest, ok := strings.Cut(page, `<meta name="obversa-page-token" content="`)
	tok, _, _ := strings.Cut(rest, `"`)
	if !ok || tok == "" {
		t.Fatalf("no page token in %s", page)
	}
	return tok
}

func post(t *testing.T, url string, header map[string]string, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSteeringGuards: a POST needs the page token and the same origin;
// a read-only server refuses it whatever it carries. Each refusal leaves
// the record as it was.
func TestSteeringGuards(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	r := newTestRun(t, storage, "r1")
	r.append(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "c", Position: "dag/c/1"}}})
	r.append(graph.EventNodePaused, graph.PausedData{Node: "c", Position: "dag/c/1", Request: graph.PauseRequest{Kind: graph.PauseApproval, Position: "dag/c/1"}})
	_, hs := newTestServer(t, storage, Options{})
	_, ro := newTestServer(t, storage, Options{ReadOnly: true})
	tok := pageToken(t, hs.URL+"/runs/r1")
	roTok := pageToken(t, ro.URL+"/runs/r1")
	body := `{"position":"dag/c/1","decision":"allow"}`
	tests := []struct {
		name   string
		url    string
		header map[string]string
		want   int
	}{
		{"no page token", hs.URL + "/api/runs/r1/approve", nil, 403},
		{"forged page token", hs.URL + "/api/runs/r1/approve", map[string]string{PageTokenHeader: "abc.def"}, 403},
		{"another server's page token", hs.URL + "/api/runs/r1/approve", map[string]string{PageTokenHeader: roTok}, 403},
		{"cross-origin", hs.URL + "/api/runs/r1/approve", map[string]string{PageTokenHeader: tok, "Origin": "http://evil.example"}, 403},
		{"cross-site fetch", hs.URL + "/api/runs/r1/resume", map[string]string{PageTokenHeader: tok, "Sec-Fetch-Site": "cross-site"}, 403},
		{"no origin", hs.URL + "/api/runs/r1/approve", map[string]string{PageTokenHeader: tok}, 403},
		{"user-typed request", hs.URL + "/api/runs/r1/approve", map[string]string{PageTokenHeader: tok, "Sec-Fetch-Site": "none"}, 403},
		{"read-only", ro.URL + "/api/runs/r1/approve", map[string]string{PageTokenHeader: roTok, "Origin": ro.URL}, 403},
		{"read-only resume", ro.URL + "/api/runs/r1/resume", map[string]string{PageTokenHeader: roTok, "Origin": ro.URL}, 403},
		{"unknown run", hs.URL + "/api/runs/nope/approve", map[string]string{PageTokenHeader: tok, "Origin": hs.URL}, 404},
		{"bad decision", hs.URL + "/api/runs/r1/approve", map[string]string{PageTokenHeader: tok, "Origin": hs.URL}, 400},
	}
	for _, tt := range tests {
		b := body
		if tt.name == "bad decision" {
			b = `{"position":"dag/c/1","decision":"maybe"}`
		}
		if code, out := post(t, tt.url, tt.header, b); code != tt.want {
			t.Errorf("%s: %d %s, want %d", tt.name, code, out, tt.want)
		}
	}
	if got := r.rec.Rev(); got != r.rev {
		t.Errorf("a refused request changed the record: rev %d, want %d", got, r.rev)
	}
	// The record's owner (this test) holds the lock, so a valid approval
	// is queued for a worker that never answers: that proves it got past
	// the guards without recording anything here.
}

// TestApproveRecordsDecision: a POST from the page records the decision
// through watchdog.Approve (the run's lock, an append at the revision it
// read) and starts the configured executable to resume the run; a
// second decision for the position is refused naming the first.
func TestApproveRecordsDecision(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	r := newTestRun(t, storage, "r1")
	r.append(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "c", Position: "dag/c/1"}}})
	r.append(graph.EventNodePaused, graph.PausedData{Node: "c", Position: "dag/c/1", Request: graph.PauseRequest{Kind: graph.PauseApproval, Position: "dag/c/1"}})
	r.release()
	_, hs := newTestServer(t, storage, Options{Executable: "/bin/true"})
	h := map[string]string{PageTokenHeader: pageToken(t, hs.URL+"/runs/r1"), "Origin": hs.URL}
	// A mistyped position gets a suggestion that waits (dag/c/1), never
	// one that does not (dag/a/1 runs), as on the command line.
	code, out := post(t, hs.URL+"/api/runs/r1/approve", h, `{"position":"dag/zz/1","decision":"allow"}`)
	if code != http.StatusConflict || !strings.Contains(out, `did you mean \"dag/c/1\"`) {
		t.Errorf("a mistyped position: %d %s, want a suggestion of dag/c/1", code, out)
	}
	code, out = post(t, hs.URL+"/api/runs/r1/approve", h, `{"position":"dag/c/1","decision":"deny"}`)
	if code != 200 || !strings.Contains(out, `"recorded_by":"ui"`) || !strings.Contains(out, `"resumed":true`) || !strings.Contains(out, `"command":"obversa approve --deny `) {
		t.Fatalf("approve: %d %s", code, out)
	}
	if body := get(t, hs.URL+"/api/runs/r1/nodes/c"); !strings.Contains(body, `"approved":"deny"`) {
		t.Errorf("node c after deny: %s", body)
	}
	code, out = post(t, hs.URL+"/api/runs/r1/approve", h, `{"position":"dag/c/1","decision":"allow"}`)
	if code != http.StatusConflict || !strings.Contains(out, "deny") {
		t.Errorf("second decision: %d %s", code, out)
	}
	code, out = post(t, hs.URL+"/api/runs/r1/approve", h, `{"position":"dag/c/2","decision":"allow"}`)
	if code != http.StatusConflict || !strings.Contains(out, "dag/c/1") {
		t.Errorf("a position that does not wait: %d %s", code, out)
	}
}
