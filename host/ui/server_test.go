package ui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
)

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
// of its files; every page is sent a node's pass as it is recorded; the
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
		p.until(t, "change", func(d []byte) bool { return nodeStatus(t, d, "a") == "passed" })
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
