package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// eachNode is a static for_each node put before the review loop example's
// loop: its group row and its instances' rows come before the loop's in
// the node table.
const eachNode = `  node "each" {
    depends_on = ["plan"]
    for_each   = ["x", "y"]
    binding    = "shell"
    input      = { command = ["echo", "${each.key}"] }
    retry_safe = true
  }

  loop "config" {`

// TestUIBrowserGraphNodes: on the page of a run with a for_each node and
// a loop (two rounds), each drawn graph node is tied to its own node —
// its row of the node table by id, a loop member's in the loop's last
// round — and has that row's status, although the table also lists the
// for_each instances and every round's members.
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
	for _, node := range []string{"each[x]", "each[y]", "config/1/author", "config/1/review"} {
		if rows[node] == "" {
			t.Errorf("the node table has no row %s: %v", node, rows)
		}
	}
}

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
	const asked = `performance.getEntriesByType("resource").filter((e) => e.name.endsWith("/api/runs/xa")).length`
	step(t, tab, "the page stops listening", shows(`#conn[title="not following: the run cannot be shown"]`))
	time.Sleep(8 * time.Second)
	if n := value(t, tab, "the requests", chromedp.Evaluate[int](asked)); n != 1 {
		t.Errorf("the page asked why the run cannot be shown %d times, want once", n)
	}
	step(t, tab, "Try again asks once more and shows the error again",
		chromedp.Click(chromedp.CSS(`#retry`)),
		chromedp.Poll[chromedp.Void](asked+" === 2", chromedp.WithPollingInterval(50*time.Millisecond)),
		shows(`#conn[title="not following: the run cannot be shown"]`), shows(`#load-error[data-code="CORRUPT_EVENT_STREAM"]`))
}
