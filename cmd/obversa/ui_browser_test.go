package main

import (
	"bufio"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshot makes TestUIBrowserApproval write the README's screenshot,
// docs/img/ui-run.png (`make screenshot`).
var screenshot = flag.Bool("screenshot", false, "write docs/img/ui-run.png from the browser test")

// The browser tests share one headless Chromium, started by the first
// and stopped by TestMain.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

// chromiumPath finds Debian's chromium (or another Chrome).
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newTab opens a tab of the shared browser (a failed load of a URL ending
// in one of expected is no problem of the page); it skips the test when no
// browser is installed, except under CI, which installs one.
func newTab(t *testing.T, expected ...string) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium on PATH; CI installs Debian's chromium package (.ci/run)")
		}
		t.Skip("no Chromium on PATH: install Debian's chromium (apt-get install chromium) to run the browser tests")
	}
	browser.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
			chromedp.WindowSize(1400, 1000), chromedp.Flag("disable-dev-shm-usage", true))
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		browser.ctx, browser.cancel = ctx, func() { cancel(); cancelAlloc() }
		browser.err = chromedp.Do(ctx)
	})
	if browser.err != nil {
		t.Fatalf("starting %s: %v", path, browser.err)
	}
	tab, cancel := chromedp.NewContext(browser.ctx)
	t.Cleanup(cancel)
	// Every script error and every Content-Security-Policy violation the
	// page logs fails the test.
	var mu sync.Mutex
	var problems []string
	console := chromedp.Console(tab)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleType("error") {
				mu.Lock()
				problems = append(problems, m.String()+" "+m.URL)
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			// A live event stream cut when the test ends is not the page's
			// fault, nor is a failed load of a URL the test expects to fail.
			if !strings.Contains(p, "/api/live/") && !slices.ContainsFunc(expected, func(u string) bool { return strings.HasSuffix(p, u) }) {
				t.Errorf("the page logged: %s", p)
			}
		}
	})
	return tab
}

// stopBrowser ends the shared browser (TestMain).
func stopBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
}

// startUI starts `obversa ui` on a free loopback port and returns its
// address.
func startUI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	addr, _ := startUIAt(t, dir, "127.0.0.1:0", args...)
	return addr
}

// startUIAt starts `obversa ui` listening on listen and returns its
// address and a function that stops it (SIGTERM) and waits for it; the
// test's cleanup stops it too.
func startUIAt(t *testing.T, dir, listen string, args ...string) (string, func()) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), append([]string{"ui", "--listen", listen}, args...)...)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			if stderr.Len() > 0 {
				t.Logf("obversa ui stderr:\n%s", stderr.String())
			}
		})
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("obversa ui: %v\n%s", err, stderr.String())
	}
	_, addr, ok := strings.Cut(strings.TrimSpace(line), " at ")
	if !ok {
		t.Fatalf("obversa ui printed %q", line)
	}
	addr, _, _ = strings.Cut(addr, " ")
	return strings.TrimSuffix(addr, "/"), stop
}

// step runs browser actions with a deadline, naming what it waited for.
func step(t *testing.T, tab context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		html, _ := chromedp.Run(tab, chromedp.OuterHTML(chromedp.CSS("main")))
		t.Fatalf("%s: %v\npage:\n%.3000s", what, err, html)
	}
}

// value runs one browser action that returns a value.
func value[T any](t *testing.T, tab context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// approvalGraph is a run file whose "publish" waits for approval after
// an engine node and a command.
const approvalGraph = `
workspace {
  root     = "."
  provider = "none"
}
storage {
  directory = ".obversa"
}
plugin "mock" {
  type = "engine"
  path = "BIN/mock-engine"
}
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  global_concurrency = 2
  approval = ["publish"]
  node "draft" {
    lane   = "writer"
    prompt = "Write a haiku about durable logs."
  }
  node "count" {
    binding    = "shell"
    depends_on = ["draft"]
    input      = { command = ["wc", "-w"], stdin = "${input.results.draft}" }
    retry_safe = true
  }
  node "publish" {
    binding    = "shell"
    depends_on = ["count"]
    input      = { command = ["echo", "published"] }
    retry_safe = true
  }
}
`

// TestUIBrowserApproval: the runs page lists a completed quickstart run
// and a paused approval run; the run page draws the graph with each
// node's state, shows the agent's output and the commands; approving
// from the page carries the run to completion.
func TestUIBrowserApproval(t *testing.T) {
	tab := newTab(t)
	runFile := writeRunFile(t, approvalGraph)
	dir := filepath.Dir(runFile)
	qs, err := os.ReadFile(filepath.Join(repoRoot, "examples", "quickstart", "run.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	quick := filepath.Join(dir, "quickstart.hcl")
	if err := os.WriteFile(quick, []byte(strings.ReplaceAll(string(qs), `"../../bin/`, `"`+binDir+`/`)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{runFile, quick} {
		if r := obversa(t, dir, "plugin", "lock", f); r.code != 0 {
			t.Fatalf("lock %s: %s", f, r.stderr)
		}
	}
	if r := obversa(t, dir, "run", "--run-id", "quickstart", quick); r.code != exitComplete {
		t.Fatalf("quickstart: exit %d: %s", r.code, r.stderr)
	}
	if r := obversa(t, dir, "run", "--run-id", "review", runFile); r.code != exitPaused {
		t.Fatalf("approval run: exit %d: %s", r.code, r.stderr)
	}
	base := startUI(t, dir)

	step(t, tab, "the runs page lists both runs",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="review"][data-phase="paused"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="quickstart"][data-phase="completed"]`)))
	runs := value(t, tab, "runs", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#runs tbody tr")].map(r => r.dataset.run)`))
	if strings.Join(runs, ",") != "review,quickstart" {
		t.Errorf("runs newest first: %v", runs)
	}
	step(t, tab, "the phase filter keeps the paused run",
		chromedp.SetValue(chromedp.CSS(`#phase`), "paused"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("phase").dispatchEvent(new Event("change"))`),
		chromedp.WaitNotPresent(chromedp.CSS(`#runs tr[data-run="quickstart"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="review"]`)))

	step(t, tab, "the run page shows the nodes by state",
		chromedp.Click(chromedp.CSS(`#runs tr[data-run="review"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="publish"][data-status="paused"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="draft"][data-status="passed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="count"][data-status="passed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph svg g.node[data-node="draft"][data-status="passed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph svg g.node[data-node="publish"][data-status="paused"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#output .line[data-node="draft"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline tr[data-type="graph:node-paused"]`)))
	runDir := runDirOf(runFile, "review")
	output := value(t, tab, "output", chromedp.Text(chromedp.CSS(`#output`)))
	approveCmd := value(t, tab, "commands", chromedp.Text(chromedp.CSS(`#commands`)))
	if !strings.Contains(output, "mock answer to") {
		t.Errorf("agent output %q lacks the mock engine's answer", output)
	}
	if !strings.Contains(approveCmd, "obversa show "+runDir) {
		t.Errorf("commands %q lack `obversa show %s`", approveCmd, runDir)
	}
	step(t, tab, "a node opens with its result",
		chromedp.Click(chromedp.CSS(`#nodes tr[data-node="count"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail-count`)))
	detail := value(t, tab, "node detail", chromedp.Text(chromedp.CSS(`#detail-count`)))
	if !strings.Contains(detail, "exit") || !strings.Contains(detail, "obversa logs --node count") {
		t.Errorf("node detail: %q", detail)
	}
	png := value(t, tab, "screenshot", chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(t.TempDir(), "ui-run.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if *screenshot {
		if err := os.WriteFile(filepath.Join(repoRoot, "docs", "img", "ui-run.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	step(t, tab, "approving from the page carries the run to completion",
		chromedp.Click(chromedp.CSS(`#waiting .wait[data-position="dag/publish/1"] button.approve`)),
		chromedp.WaitVisible(chromedp.CSS(`#message.ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tr[data-node="publish"][data-status="passed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#summary .badge[data-status="completed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph svg g.node[data-node="publish"][data-status="passed"]`)))
	if d := recorded(t, runDir, "graph:approval-decided"); len(d) != 1 || d[0]["decision"] != "allow" {
		t.Errorf("recorded decisions: %v", d)
	}
	if r := obversa(t, dir, "runs", "--phase", "completed"); !strings.Contains(r.stdout, "review") {
		t.Errorf("obversa runs after approval:\n%s", r.stdout)
	}
}
