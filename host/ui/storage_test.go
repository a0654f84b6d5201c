package ui

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// TestCopiedRunListedUnderItsName: a copy of a run directory holds the
// copied run's record; the runs list names it by its own directory, as
// `obversa runs` does, with the record's run id beside it, and the page
// of that name is the copy's.
func TestCopiedRunListedUnderItsName(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	r := newTestRun(t, storage, "orig")
	r.release()
	runs := filepath.Join(storage, "default", "runs")
	if err := os.Mkdir(filepath.Join(runs, "orig-copy"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(runs, "orig", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runs, "orig-copy", "events.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := newTestServer(t, storage, Options{})
	var list RunsList
	if err := json.Unmarshal([]byte(get(t, hs.URL+"/api/runs")), &list); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, s := range list.Runs {
		names[s.Name] = s.RunID
	}
	if len(names) != 2 || names["orig"] != "orig" || names["orig-copy"] != "orig" {
		t.Errorf("runs listed by name (name: run id) %v, want orig: orig and orig-copy: orig", names)
	}
	if code := rawGet(t, strings.TrimPrefix(hs.URL, "http://"), "/api/runs/orig-copy"); code != http.StatusOK {
		t.Errorf("GET /api/runs/orig-copy: %d, want 200", code)
	}
}
