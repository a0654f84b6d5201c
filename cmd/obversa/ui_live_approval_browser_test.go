package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// liveGraph keeps its worker busy ("slow" runs until the test creates
// the file RELEASE) while "gate" waits for approval.
const liveGraph = `
workspace {
  root     = "."
  provider = "none"
}
storage {
  directory = ".obversa"
}
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
graph "dag" {
  global_concurrency = 2
  approval = ["gate"]
  node "slow" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "while [ ! -e RELEASE ]; do sleep 0.05; done; echo released"] }
    retry_safe = true
  }
  node "gate" {
    binding    = "shell"
    input      = { command = ["echo", "through"] }
    retry_safe = true
  }
}
`

// TestUIBrowserLive: while a run runs, the page shows a node start and
// then pass without a reload, and an approval clicked on the page is
// handed to the live worker, which records it.
func TestUIBrowserLive(t *testing.T) {
	tab := newTab(t)
	release := filepath.Join(t.TempDir(), "release")
	runFile := writeRunFile(t, strings.ReplaceAll(liveGraph, "RELEASE", release))
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	run := exec.Command(filepath.Join(binDir, "obversa"), "run", "--run-id", "live", runFile)
	run.Dir = dir
	var runErr strings.Builder
	run.Stderr = &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	t.Cleanup(func() {
		_ = os.WriteFile(release, nil, 0o644)
		_ = run.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	runDir := runDirOf(runFile, "live")
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(filepath.Join(runDir, "events.jsonl")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not start: %s", runErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	base := startUI(t, dir)
	step(t, tab, "the live run page shows slow running and gate waiting",
		chromedp.Navigate(base+"/runs/live"),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="slow"][data-status="started"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#waiting .wait[data-position="dag/gate/1"] button.approve`)))
	step(t, tab, "approving while the worker lives",
		chromedp.Click(chromedp.CSS(`#waiting .wait[data-position="dag/gate/1"] button.approve`)),
		chromedp.WaitVisible(chromedp.CSS(`#message.ok`)))
	// The live page renders the summary again on each update of the run,
	// replacing #message with a copy: its text is read in the page, from
	// the element there at the time (a node queried before is detached
	// by then and reads as "").
	msg := value(t, tab, "message", chromedp.Poll[string](`document.getElementById("message")?.innerText`))
	if !strings.Contains(msg, "live worker") {
		t.Errorf("approval message %q: want the live worker to record it", msg)
	}
	step(t, tab, "gate passes while slow still runs",
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="gate"][data-status="passed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="slow"][data-status="started"]`)))
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, tab, "slow turns passed, then the run completes",
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="slow"][data-status="passed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph svg g.node[data-node="slow"][data-status="passed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#summary .badge[data-status="completed"]`)))
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Errorf("obversa run: %v\n%s", err, runErr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("obversa run did not end after the page showed the run complete")
	}
}
