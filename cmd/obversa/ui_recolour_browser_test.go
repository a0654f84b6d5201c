package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

// liveNodes is the length of TestUIBrowserLiveRecolours's chain: more
// (`-args -ui-live-nodes 200`) measures what a large graph costs the page.
var liveNodes = flag.Int("ui-live-nodes", 8, "mock engine nodes in TestUIBrowserLiveRecolours's chain (at least 4)")

// countDrawings counts, in every page the tab opens, the graph drawings
// Mermaid makes and the milliseconds they take (window.drawings): it
// wraps mermaid.render as the vendored build sets it.
const countDrawings = `window.drawings = {count: 0, ms: 0};
(() => {
  let m;
  Object.defineProperty(window, "mermaid", {configurable: true, get: () => m, set: (v) => {
    m = v;
    const render = v.render;
    v.render = async function (...args) {
      const start = performance.now();
      try { return await render.apply(this, args); } finally { window.drawings.count++; window.drawings.ms += performance.now() - start; }
    };
  }});
})();`

// tabBusy is what the tab's main thread has spent so far, in seconds:
// on tasks, on script and on layout (the DevTools Performance metrics).
func tabBusy(t *testing.T, tab context.Context) map[string]float64 {
	t.Helper()
	return value(t, tab, "the tab's metrics", func(ctx context.Context, tg *chromedp.Target) (map[string]float64, error) {
		r, err := cdp.Call(ctx, tg, performance.GetMetrics, cdp.Empty{})
		if err != nil {
			return nil, err
		}
		out := map[string]float64{}
		for _, m := range r.Metrics {
			switch m.Name {
			case "TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration":
				out[m.Name] = m.Value
			}
		}
		return out, nil
	})
}

// TestUIBrowserLiveRecolours: the graph of a page open while a chain runs
// is drawn once; as its nodes change state the page recolours that
// drawing (the same svg element, Mermaid not run again), and each node
// shows its state in colour and in its label as a page opened afresh
// does. It logs what the page's main thread spent while the run ran.
func TestUIBrowserLiveRecolours(t *testing.T) {
	n := *liveNodes
	if n < 4 {
		t.Fatalf("-ui-live-nodes %d: at least 4", n)
	}
	tab := newTab(t)
	step(t, tab, "the tab counts Mermaid's drawings and its busy time", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: countDrawings}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, tg, performance.Enable, performance.EnableParams{})
		return chromedp.Void{}, err
	})
	holds := t.TempDir()
	release := func(hold string) {
		if err := os.WriteFile(filepath.Join(holds, hold), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, h := range []string{"hold1", "hold2", "hold3"} {
			_ = os.WriteFile(filepath.Join(holds, h), nil, 0o644)
		}
	})
	runFile := liveChainRunFile(t, n, "20ms", holds)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	run := bgObversa(t, dir, "run", "--run-id", "chain", runFile)
	waitFor(t, 60*time.Second, "the run's record", func() bool {
		_, err := os.Stat(filepath.Join(runDirOf(runFile, "chain"), "events.jsonl"))
		return err == nil
	})
	base := startUI(t, dir)
	node := func(id, status string) chromedp.Action[chromedp.Void] {
		return shows(fmt.Sprintf(`#graph svg g.node[data-node=%q][data-status=%q]`, id, status))
	}
	step(t, tab, "the page draws the graph with hold1 started", chromedp.Navigate(base+"/runs/chain"), node("hold1", "started"))
	drawn := value(t, tab, "the drawing", chromedp.Evaluate[int](`window.kept = document.querySelector("#graph svg"); window.drawings.count`))
	before := tabBusy(t, tab)
	started := time.Now()
	for _, h := range []string{"hold1", "hold2", "hold3"} {
		release(h)
	}
	if code := waitExit(t, run, "obversa run"); code != exitComplete {
		t.Fatalf("obversa run: exit %d", code)
	}
	last := fmt.Sprintf("n%d", n-1)
	step(t, tab, "the page shows the run completed", node(last, "passed"), node("hold1", "passed"),
		shows(`#summary .badge[data-status="completed"]`), shows(`#conn[title="the run ended"]`))
	after := tabBusy(t, tab)
	type drawings struct {
		Count int     `json:"count"`
		MS    float64 `json:"ms"`
		Kept  bool    `json:"kept"`
	}
	d := value(t, tab, "the drawings", chromedp.Evaluate[drawings](
		`({count: window.drawings.count, ms: window.drawings.ms, kept: window.kept === document.querySelector("#graph svg")})`))
	t.Logf("a page of a %d-node chain: %d Mermaid drawings (%d before the run went on), %.0f ms in Mermaid; from hold1 to the end (%.1f s): the tab's main thread busy %.0f ms (script %.0f ms, layout %.0f ms, style %.0f ms)",
		n+3, d.Count, drawn, d.MS, time.Since(started).Seconds(), 1000*(after["TaskDuration"]-before["TaskDuration"]), 1000*(after["ScriptDuration"]-before["ScriptDuration"]),
		1000*(after["LayoutDuration"]-before["LayoutDuration"]), 1000*(after["RecalcStyleDuration"]-before["RecalcStyleDuration"]))
	if d.Count != drawn || !d.Kept {
		t.Errorf("the graph was drawn again as its nodes changed state: %d drawings after the first %d; the same svg element: %v", d.Count-drawn, drawn, d.Kept)
	}
	// What the recoloured drawing shows is what a fresh drawing shows.
	const graphShown = `JSON.stringify([...document.querySelectorAll("#graph g.node")].map((g) => [g.id.replace(/-[0-9]+$/, ""), g.dataset.node, g.dataset.status, g.textContent,
	  getComputedStyle(g.querySelector(".label-container")).fill]))`
	live := value(t, tab, "the live page's graph", chromedp.Evaluate[string](graphShown))
	unlabelled := value(t, tab, "the labels", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#graph g.node")].filter((g) => !g.textContent.endsWith(g.dataset.status)).map((g) => g.textContent)`))
	if len(unlabelled) > 0 {
		t.Errorf("graph nodes whose label does not end with their status: %q", unlabelled)
	}
	fresh := newTab(t)
	step(t, fresh, "a page opened after the run", chromedp.Navigate(base+"/runs/chain"), node(last, "passed"), shows(`#conn[title="the run ended"]`))
	if want := value(t, fresh, "the fresh page's graph", chromedp.Evaluate[string](graphShown)); live != want {
		t.Errorf("the recoloured graph differs from a fresh drawing:\n%s", firstDiff(live, want))
	}
}
