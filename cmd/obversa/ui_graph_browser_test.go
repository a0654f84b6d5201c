package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// eachNode is a static for_each node put before the review loop example's
// loop: its group row and its instances' rows come before the loop's in
// the node table. Its third key holds a bidirectional control (U+202E),
// which reaches the page in the instance's node id.
const eachNode = `  node "each" {
    depends_on = ["plan"]
    for_each   = ["x", "y", "\u202egnp.exe"]
    binding    = "shell"
    input      = { command = ["echo", "${each.key}"] }
    retry_safe = true
  }

  loop "config" {`

// TestUIBrowserGraphNodes: on the page of a run with a for_each node and
// a loop (two rounds), each drawn graph node is tied to its own node —
// its row of the node table by id, a loop member's in the loop's last
// round — and has that row's status, although the table also lists the
// for_each instances and every round's members. No text and no attribute
// value of the page, the opened instance whose key holds U+202E
// included, holds a bidirectional control: each is shown escaped.
func TestUIBrowserGraphNodes(t *testing.T) {
	tab := newTab(t)
	text, err := os.ReadFile(filepath.Join(repoRoot, "examples", "review-loop", "run.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	src := strings.ReplaceAll(string(text), `"../../bin/`, `"`+binDir+`/`)
	if !strings.Contains(src, `  loop "config" {`) {
		t.Fatal("the review loop example has no loop \"config\"")
	}
	runFile := writeRunFile(t, strings.Replace(src, `  loop "config" {`, eachNode, 1))
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	if r := obversa(t, dir, "run", "--run-id", "ge", runFile); r.code != exitComplete {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	base := startUI(t, dir)
	step(t, tab, "the run page draws and marks its graph",
		chromedp.Navigate(base+"/runs/ge"),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="config/2/review"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph g.node[data-status]`)))
	marks := value(t, tab, "the graph's nodes", chromedp.Evaluate[[][]string](
		`Array.from(document.querySelectorAll("#graph g.node")).map((g) => [g.id, g.dataset.node || "", g.dataset.status || ""])`))
	rows := value(t, tab, "the node table", chromedp.Evaluate[map[string]string](
		`Object.fromEntries(Array.from(document.querySelectorAll("#nodes tbody tr")).map((r) => [r.dataset.node, r.dataset.status]))`))
	// host/diagram numbers the definition's nodes and loop members in order.
	want := map[string]string{"n0": "plan", "n1": "each", "n2": "config/2/author", "n3": "config/2/review", "n4": "ship"}
	mermaidID := regexp.MustCompile(`-(n[0-9]+)-`)
	seen := map[string]bool{}
	for _, m := range marks {
		id := mermaidID.FindStringSubmatch(m[0])
		if id == nil {
			t.Errorf("graph node %q has no Mermaid node id", m[0])
			continue
		}
		seen[id[1]] = true
		if m[1] != want[id[1]] {
			t.Errorf("graph node %s is tied to node %q, want %q", id[1], m[1], want[id[1]])
		}
		if rows[m[1]] == "" || m[2] != rows[m[1]] {
			t.Errorf("graph node %s (%s) has status %q, its row %q", id[1], m[1], m[2], rows[m[1]])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("the graph has nodes %v, want %v", seen, want)
	}
	for _, node := range []string{"each[x]", "each[y]", `each[\u202egnp.exe]`, "config/1/author", "config/1/review"} {
		if rows[node] == "" {
			t.Errorf("the node table has no row %s: %v", node, rows)
		}
	}
	step(t, tab, "the instance whose key holds U+202E opens",
		chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll("#nodes tbody tr")].find((r) => r.dataset.node.includes("gnp.exe")).click()`),
		shows(`#node-detail .detail`), shows(`#output .line`))
	if raw := value(t, tab, "what holds a bidirectional control", chromedp.Evaluate[[]string](bidiSweep)); len(raw) > 0 {
		t.Errorf("the page shows bidirectional controls unescaped: %q", raw)
	}
}

// bidiSweep lists each text node and attribute value of the page (its
// <head> and the drawn graph too) that holds a bidirectional control of
// the page's own list (ob.escapedRe), as "where: value".
const bidiSweep = `(() => {
  const re = new RegExp(ob.escapedRe.source, "u");
  const out = [];
  const walk = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let n = walk.currentNode; n; n = walk.nextNode()) {
    if (n.nodeType === Node.TEXT_NODE) {
      if (re.test(n.nodeValue)) out.push("text of <" + n.parentNode.nodeName + ">: " + n.nodeValue);
      continue;
    }
    for (const a of n.attributes) {
      if (re.test(a.value)) out.push("<" + n.nodeName + " " + a.name + ">: " + a.value);
    }
  }
  if (re.test(document.title)) out.push("title: " + document.title);
  return out;
})()`

// streamsCounter keeps each EventSource a page opens in
// window.__streams.
const streamsCounter = `(() => {
  const ES = window.EventSource;
  window.__streams = [];
  window.EventSource = class extends ES {
    constructor(...args) { super(...args); window.__streams.push(this); }
  };
})();`

// TestUIBrowserUnreadableRun: the page of a run whose record cannot be
// read (a committed event changed since) shows the server's error — its
// code, what is wrong and what to do — instead of an empty page.
func TestUIBrowserUnreadableRun(t *testing.T) {
	tab := newTab(t, "/api/runs/xa")
	dir := runReviewLoop(t, "xa")
	events := filepath.Join(dir, ".obversa", "default", "runs", "xa", "events.jsonl")
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	const was, now = "Plan the config", "Plan thX config"
	if !strings.Contains(string(b), was) {
		t.Fatalf("the record has no %q", was)
	}
	if err := os.WriteFile(events, []byte(strings.Replace(string(b), was, now, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startUI(t, dir)
	step(t, tab, "the tab counts the page's streams", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: streamsCounter})
		return chromedp.Void{}, err
	})
	step(t, tab, "the page shows why the run cannot be shown",
		chromedp.Navigate(base+"/runs/xa"),
		chromedp.WaitVisible(chromedp.CSS(`#load-error[data-code="CORRUPT_EVENT_STREAM"]`)))
	shown := value(t, tab, "the error", chromedp.Text(chromedp.CSS(`#load-error`)))
	for _, want := range []string{"CORRUPT_EVENT_STREAM", "events.jsonl", "obversa verify"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the page's error %q does not say %q", shown, want)
		}
	}
	// The page stops there: it does not ask again at each of the
	// browser's reconnects (about every 3 s), which would fold the record
	// up to its damage each time, until it is told to.
	// Rather than wait and see that nothing happens, it checks the state
	// that rules a new ask out: every stream the page opened (counted by
	// streamsCounter) is CLOSED, which an EventSource never leaves (it
	// does not reconnect), and only Try again opens another, which the
	// count then shows.
	const asked = `performance.getEntriesByType("resource").filter((e) => e.name.endsWith("/api/runs/xa")).length`
	step(t, tab, "the page stops listening", shows(`#conn[title="not following: the run cannot be shown"]`),
		chromedp.Poll[chromedp.Void](`window.__streams.length > 0 && window.__streams.every((e) => e.readyState === EventSource.CLOSED)`,
			chromedp.WithPollingInterval(50*time.Millisecond)))
	if n := value(t, tab, "the requests", chromedp.Evaluate[int](asked)); n != 1 {
		t.Errorf("the page asked why the run cannot be shown %d times, want once", n)
	}
	opened := value(t, tab, "the streams", chromedp.Evaluate[int](`window.__streams.length`))
	step(t, tab, "Try again asks once more and shows the error again",
		chromedp.Click(chromedp.CSS(`#retry`)),
		chromedp.Poll[chromedp.Void](asked+" === 2", chromedp.WithPollingInterval(50*time.Millisecond)),
		shows(`#conn[title="not following: the run cannot be shown"]`), shows(`#load-error[data-code="CORRUPT_EVENT_STREAM"]`),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`window.__streams.length === %d && window.__streams.every((e) => e.readyState === EventSource.CLOSED)`, opened+1),
			chromedp.WithPollingInterval(50*time.Millisecond)))
}
