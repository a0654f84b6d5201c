package ui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
)

// rawGet sends a request line as given (no client-side cleaning) and
// returns the status code.
func rawGet(t *testing.T, addr, target string, header ...string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n", target, addr, strings.Join(header, ""))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestPathsOutsideAreNotFound(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	newTestRun(t, storage, "r1")
	_, hs := newTestServer(t, storage, Options{})
	addr := strings.TrimPrefix(hs.URL, "http://")
	for _, target := range []string{
		"/../../etc/passwd",
		"/%2e%2e/%2e%2e/etc/passwd",
		"/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
		"/assets/../../etc/passwd",
		"/assets/..%2f..%2fetc/passwd",
		"/assets/%2e%2e/%2e%2e/etc/passwd",
		"/runs/../../etc/passwd",
		"/runs/..%2f..%2fetc%2fpasswd",
		"/api/runs/..%2f..%2f..%2fetc",
		"/api/runs/r1/artifacts/..%2f..%2fevents.jsonl",
		"/api/runs/r1/nodes/..%2fa",
		"/api/runs/nope",
		"/api/runs/r1/artifacts/sha256:" + strings.Repeat("0", 64),
		"/runs/r1/../../../../etc/passwd",
		"/assets/run.html",
		"/assets/",
		"/etc/passwd",
	} {
		if code := rawGet(t, addr, target); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", target, code)
		}
	}
	for _, target := range []string{"/", "/runs/r1", "/api/runs", "/api/runs/r1", "/api/runs/r1/nodes/a", "/assets/run.js", "/assets/vendor/mermaid.min.js"} {
		if code := rawGet(t, addr, target); code != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", target, code)
		}
	}
}

// TestSymlinksLeavingStorage: a run directory, or a run's record, that
// is a symbolic link out of the storage is not served.
func TestSymlinksLeavingStorage(t *testing.T) {
	t.Parallel()
	storage, outside := t.TempDir(), t.TempDir()
	newTestRun(t, outside, "elsewhere")
	newTestRun(t, storage, "inside")
	runs := filepath.Join(storage, "default", "runs")
	if err := os.Symlink(filepath.Join(outside, "default", "runs", "elsewhere"), filepath.Join(runs, "linked")); err != nil {
		t.Fatal(err)
	}
	// A run directory whose record is a link to another storage's record.
	if err := os.Mkdir(filepath.Join(runs, "hollow"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "default", "runs", "elsewhere", "events.jsonl"), filepath.Join(runs, "hollow", "events.jsonl")); err != nil {
		t.Fatal(err)
	}
	_, hs := newTestServer(t, storage, Options{})
	addr := strings.TrimPrefix(hs.URL, "http://")
	for _, id := range []string{"linked", "hollow"} {
		for _, p := range []string{"/runs/", "/api/runs/", "/api/live/runs/"} {
			if code := rawGet(t, addr, p+id); code != http.StatusNotFound {
				t.Errorf("GET %s%s: %d, want 404", p, id, code)
			}
		}
	}
	if code := rawGet(t, addr, "/api/runs/inside"); code != http.StatusOK {
		t.Errorf("the run inside: %d", code)
	}
	body := get(t, hs.URL+"/api/runs")
	if strings.Contains(body, "elsewhere") || strings.Contains(body, `"run_id":"linked"`) || !strings.Contains(body, `"hollow"`) {
		t.Errorf("runs list: %s", body)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	newTestRun(t, storage, "r1")
	_, hs := newTestServer(t, storage, Options{})
	for _, p := range []string{"/", "/runs/r1", "/assets/run.js", "/api/runs", "/api/runs/r1", "/nothing", "/../x"} {
		resp, err := http.Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if h.Get("Content-Security-Policy") != CSP || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", p, h)
		}
	}
	for _, must := range []string{"script-src 'self'", "default-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(CSP, must) {
			t.Errorf("CSP %q lacks %q", CSP, must)
		}
	}
	for _, mustNot := range []string{"unsafe-eval", "script-src 'self' 'unsafe-inline'", "*"} {
		if strings.Contains(CSP, mustNot) {
			t.Errorf("CSP %q has %q", CSP, mustNot)
		}
	}
	// No page has an inline script or an inline event handler.
	for _, p := range []string{"/", "/runs/r1"} {
		page := get(t, hs.URL+p)
		if strings.Contains(page, "<script>") || strings.Contains(page, " onclick=") || strings.Count(page, "<script") != strings.Count(page, "<script src=") {
			t.Errorf("%s has inline script:\n%s", p, page)
		}
	}
}

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

// TestAccessToken: with a token every request must carry it; ?token=
// sets a cookie that carries it from then on. Without one, only loopback
// host names are answered.
func TestAccessToken(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	newTestRun(t, storage, "r1")
	const token = "0123456789abcdef-secret"
	_, hs := newTestServer(t, storage, Options{Token: token})
	for _, p := range []string{"/", "/api/runs", "/assets/run.js", "/../../etc/passwd", "/api/live/runs"} {
		resp, err := http.Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", p, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/api/runs", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("bearer token: %v %v", resp, err)
	}
	req.Header.Set("Authorization", "bearer "+token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("bearer token, scheme in lower case: %v %v", resp, err)
	}
	req.Header.Set("Authorization", "Bearer wrong"+token)
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != 401 {
		t.Errorf("wrong bearer token: %d", resp.StatusCode)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(hs.URL + "/runs/r1?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == AccessCookie {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs/r1" || cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("?token=: %d %v %+v", resp.StatusCode, resp.Header, cookie)
	}
	req, _ = http.NewRequest(http.MethodGet, hs.URL+"/runs/r1", nil)
	req.AddCookie(cookie)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("cookie: %v %v", resp, err)
	}

	// Without a token, a Host that is not loopback (a rebound DNS name)
	// is refused.
	_, open := newTestServer(t, storage, Options{})
	addr := strings.TrimPrefix(open.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /api/runs HTTP/1.1\r\nHost: attacker.example:80\r\nConnection: close\r\n\r\n")
	r2, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r2.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d, want 403", r2.StatusCode)
	}
}

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8787": true, "localhost:1": true, "[::1]:8787": true, "127.1.2.3:0": true,
		"0.0.0.0:8787": false, ":8787": false, "192.168.1.2:80": false, "[::]:80": false, "example.com:80": false, "nonsense": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestOneFollowerPerRun: three pages watching a run share one follower
// of its files; every page sees a node pass as it is recorded; the
// follower stops when the last page leaves.
func TestOneFollowerPerRun(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	r := newTestRun(t, storage, "r1")
	newTestRun(t, storage, "r2")
	s, hs := newTestServer(t, storage, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pages []*sse
	for range 3 {
		p := openSSE(t, ctx, hs.URL+"/api/live/runs/r1")
		if n, d := p.next(t); n != "run" || nodeStatus(t, d, "a") != "idle" {
			t.Fatalf("first event %s %s", n, d)
		}
		pages = append(pages, p)
	}
	other := openSSE(t, ctx, hs.URL+"/api/live/runs/r2")
	other.next(t)
	s.mu.Lock()
	active, started := len(s.followers), s.started
	s.mu.Unlock()
	if active != 2 || started != 2 {
		t.Fatalf("followers: %d active, %d started; want 2 and 2 (one per run, shared by its pages)", active, started)
	}
	r.append(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "c", Position: "dag/c/1"}}})
	r.append(graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"})
	r.append(graph.EventNodeCompleted, graph.CompletedData{Node: "a", Position: "dag/a/1", Result: []byte(`"done"`)})
	for i, p := range pages {
		deadline := time.AfterFunc(10*time.Second, func() { p.body.Close() })
		p.until(t, "run", func(d []byte) bool { return nodeStatus(t, d, "a") == "passed" })
		deadline.Stop()
		t.Logf("page %d saw a pass", i)
	}
	for _, p := range append(pages, other) {
		p.body.Close()
	}
	waitFor(t, func() bool { return s.activeFollowers() == 0 }, "followers to stop after the last page left")
}

// TestSecretsRedacted: a known secret (an environment variable the run's
// storage block names) that reached the record is not sent.
func TestSecretsRedacted(t *testing.T) {
	const secret = "sk-ui-test-secret-value"
	t.Setenv("OBVERSA_UI_TEST_SECRET", secret)
	storage := t.TempDir()
	r := newTestRun(t, storage, "r1", "OBVERSA_UI_TEST_SECRET")
	r.append(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "c", Position: "dag/c/1"}}})
	r.append(graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"})
	r.append(graph.EventNodeCompleted, graph.CompletedData{Node: "a", Position: "dag/a/1", Result: []byte(`"the key is ` + secret + `"`)})
	_, hs := newTestServer(t, storage, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := openSSE(t, ctx, hs.URL+"/api/live/runs/r1")
	for range 3 {
		n, d := p.next(t)
		if strings.Contains(string(d), secret) {
			t.Errorf("event %s has the secret", n)
		}
	}
	for _, u := range []string{"/api/runs/r1", "/api/runs/r1/nodes/a", "/api/runs"} {
		body := get(t, hs.URL+u)
		if strings.Contains(body, secret) {
			t.Errorf("%s has the secret: %s", u, body)
		}
	}
	if body := get(t, hs.URL+"/api/runs/r1/nodes/a"); !strings.Contains(body, "the key is ") {
		t.Errorf("node a: %s", body)
	}
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	code, out := post(t, hs.URL+"/api/runs/r1/approve", h, `{"position":"dag/c/1","decision":"deny"}`)
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

// TestRunsListLive: an open runs page gets the list at once and again
// when a run starts or changes; one poller serves every page and stops
// with the last.
func TestRunsListLive(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	r1 := newTestRun(t, storage, "r1")
	s, hs := newTestServer(t, storage, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pages := []*sse{openSSE(t, ctx, hs.URL+"/api/live/runs"), openSSE(t, ctx, hs.URL+"/api/live/runs")}
	for _, p := range pages {
		if n, d := p.next(t); n != "runs" || !strings.Contains(string(d), `"run_id":"r1"`) {
			t.Fatalf("first event %s %s", n, d)
		}
	}
	newTestRun(t, storage, "r2")
	r1.append(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "c", Position: "dag/c/1"}}})
	for _, p := range pages {
		deadline := time.AfterFunc(10*time.Second, func() { p.body.Close() })
		p.until(t, "runs", func(d []byte) bool {
			return strings.Contains(string(d), `"run_id":"r2"`) && strings.Contains(string(d), `"running":2`)
		})
		deadline.Stop()
		p.body.Close()
	}
	waitFor(t, func() bool {
		s.runs.mu.Lock()
		defer s.runs.mu.Unlock()
		return !s.runs.polling && len(s.runs.subs) == 0
	}, "the runs poller to stop after the last page left")
}
