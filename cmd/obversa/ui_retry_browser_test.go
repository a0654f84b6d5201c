package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// refuseAt answers every request at listen with 503, as a proxy in front
// of a server that is down does; the returned function stops it.
func refuseAt(t *testing.T, listen string) func() {
	t.Helper()
	l, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	stop := func() {
		_ = srv.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("the refusing server: %v", err)
		}
	}
	return stop
}

// TestUIBrowserStreamRetried: a page that shows a run, and the runs page,
// whose live stream the browser gave up on (its server answered 503, not
// a stream: an EventSource does not reconnect after that) open their
// streams again once the server is back, and follow on.
func TestUIBrowserStreamRetried(t *testing.T) {
	runTab, listTab := newTab(t, "/api/live/runs/review"), newTab(t, "/api/live/runs")
	runFile := writeRunFile(t, approvalGraph)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	if r := obversa(t, dir, "run", "--run-id", "review", runFile); r.code != exitPaused {
		t.Fatalf("approval run: exit %d: %s", r.code, r.stderr)
	}
	listen := freeAddr(t)
	base, stopUI := startUIAt(t, dir, listen)
	tabs := map[string]context.Context{"the run page": runTab, "the runs page": listTab}
	shown := map[string]string{"the run page": `#nodes tr[data-node="publish"][data-status="paused"]`, "the runs page": `#runs tr[data-run="review"][data-phase="paused"]`}
	url := map[string]string{"the run page": base + "/runs/review", "the runs page": base + "/"}
	for name, tab := range tabs {
		step(t, tab, name+" counts its streams", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: streamsCounter})
			return chromedp.Void{}, err
		})
		step(t, tab, name+" shows the run, live", chromedp.Navigate(url[name]), shows(shown[name]), shows(`#conn.on`))
	}

	// The server goes; what answers in its place refuses: the browser
	// gives up on each page's stream.
	stopUI()
	stopRefusing := refuseAt(t, listen)
	opened := map[string]int{}
	for name, tab := range tabs {
		step(t, tab, name+" sees its stream given up on", shows(`#conn.off`),
			chromedp.Poll[chromedp.Void](`window.__streams.length > 0 && window.__streams.at(-1).readyState === EventSource.CLOSED`,
				chromedp.WithPollingInterval(50*time.Millisecond)))
		opened[name] = value(t, tab, name+"'s streams", chromedp.Evaluate[int](`window.__streams.length`))
	}
	stopRefusing()
	if base2, _ := startUIAt(t, dir, listen); base2 != base {
		t.Fatalf("the server came back at %s, not %s", base2, base)
	}
	for name, tab := range tabs {
		step(t, tab, name+" opens a stream again and follows the run", shows(`#conn.on`),
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`window.__streams.length > %d && window.__streams.at(-1).readyState === EventSource.OPEN`, opened[name]),
				chromedp.WithPollingInterval(50*time.Millisecond)),
			shows(shown[name]))
	}
}
