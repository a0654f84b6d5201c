package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUIBrowserReview: the review loop example's run page shows each
// round's review member with what its verdict did to the round — the
// first rejected, the second accepted — in the node table and, with the
// verdict's summary, in the node's detail.
func TestUIBrowserReview(t *testing.T) {
	tab := newTab(t)
	base := startUI(t, runReviewLoop(t, "loop"))
	step(t, tab, "the run page lists both rounds' review members",
		chromedp.Navigate(base+"/"),
		chromedp.Click(chromedp.CSS(`#runs tr[data-run="loop"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="config/1/review"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="config/2/review"]`)))
	for node, want := range map[string]string{"config/1/review": "rejected", "config/2/review": "accepted"} {
		row := value(t, tab, node+" row", chromedp.Text(chromedp.CSS(`#nodes tr[data-node="`+node+`"]`)))
		if !strings.Contains(row, want) {
			t.Errorf("the node table's row of %s %q does not say %q", node, row, want)
		}
	}
	for node, want := range map[string]string{
		"config/1/review": "fail (round rejected): The config has no request timeout.",
		"config/2/review": "pass (accepted): The config sets a request timeout.",
	} {
		step(t, tab, node+" opens with its verdict",
			chromedp.Click(chromedp.CSS(`#nodes tr[data-node="`+node+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#node-detail .detail[data-node="`+node+`"] dd[data-key="review"]`)))
		detail := value(t, tab, node+" detail", chromedp.Text(chromedp.CSS(`#node-detail .detail[data-node="`+node+`"]`)))
		if !strings.Contains(detail, want) {
			t.Errorf("the detail of %s %q does not say %q", node, detail, want)
		}
	}
	// A node outside the loop has no review.
	step(t, tab, "plan opens without a review",
		chromedp.Click(chromedp.CSS(`#nodes tr[data-node="plan"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#node-detail .detail[data-node="plan"]`)))
	if n := value(t, tab, "plan's review rows", chromedp.Evaluate[int](`document.querySelectorAll("#node-detail dd[data-key=review]").length`)); n != 0 {
		t.Errorf("plan's detail has %d review rows", n)
	}
}

// runReviewLoop pins and runs the review-loop example, with this test
// binary's plugins, to completion as run id, and returns the directory
// of its run file (where its storage is).
func runReviewLoop(t *testing.T, id string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot, "examples", "review-loop", "run.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	runFile := writeRunFile(t, strings.ReplaceAll(string(text), `"../../bin/`, `"`+binDir+`/`))
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	if r := obversa(t, dir, "run", "--run-id", id, runFile); r.code != exitComplete {
		t.Fatalf("review loop: exit %d: %s", r.code, r.stderr)
	}
	return dir
}
