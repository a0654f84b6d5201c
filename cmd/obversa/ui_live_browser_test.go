package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// liveChainRunFile is a chain of n mock engine nodes (n0, n1…), each
// answering after delay, with a node holdK after every n/4 of them that
// runs until the file holdK exists in directory holds. Every node is retry_safe, so
// that a worker's crash or a pause costs only the step in flight.
func liveChainRunFile(t *testing.T, n int, delay, holds string) string {
	t.Helper()
	var s strings.Builder
	fmt.Fprintf(&s, `
limits {
  max_dispatches = %d
}
storage {
  directory = ".obversa"
}
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { default = { delay = %q } }
}
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  global_concurrency = 1
`, 2*n+20, delay)
	prev := ""
	dep := func() string {
		if prev == "" {
			return ""
		}
		return fmt.Sprintf("    depends_on = [%q]\n", prev)
	}
	for i := range n {
		if i > 0 && i%(n/4) == 0 {
			hold := fmt.Sprintf("hold%d", i/(n/4))
			fmt.Fprintf(&s, "  node %q {\n    binding = \"shell\"\n    input = { command = [\"sh\", \"-c\", \"while [ ! -e %s ]; do sleep 0.05; done\"] }\n    retry_safe = true\n%s  }\n",
				hold, filepath.Join(holds, hold), dep())
			prev = hold
		}
		fmt.Fprintf(&s, "  node \"n%d\" {\n    lane = \"w\"\n    prompt = \"p%d\"\n    retry_safe = true\n%s  }\n", i, i, dep())
		prev = fmt.Sprintf("n%d", i)
	}
	s.WriteString("}\n")
	return writeRunFile(t, s.String())
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// bgObversa starts `obversa args…` in dir and returns a channel that gets
// its exit code; the test's cleanup stops it.
func bgObversa(t *testing.T, dir string, args ...string) <-chan int {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		if code != exitComplete && code != exitPaused {
			t.Logf("obversa %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
		done <- code
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	return done
}

// waitExit waits for a started command's exit code.
func waitExit(t *testing.T, done <-chan int, what string) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not end", what)
		return 0
	}
}

// pageState is what a run page shows: the HTML of every part of it that
// follows the run, and each drawn graph node's id, status and label.
const pageState = `JSON.stringify({
  summary: document.getElementById("summary").innerHTML,
  waiting: document.getElementById("waiting").innerHTML,
  nodes: document.querySelector("#nodes tbody").innerHTML,
  output: document.getElementById("output").innerHTML,
  timeline: document.querySelector("#timeline tbody").innerHTML,
  commands: document.getElementById("commands").innerHTML,
  graph: [...document.querySelectorAll("#graph g.node")].map((g) => g.dataset.node + "=" + g.dataset.status + ":" + g.textContent),
})`

// liveBytes counts what a run's event stream sends until its end: the
// bytes of its "run" messages (snapshots) and of its "change" messages.
type liveBytes struct {
	snapshots, snapshotBytes, changes, changeBytes int
	err                                            error
}

// countLive reads the run's event stream at base until "end".
func countLive(ctx context.Context, url string) liveBytes {
	var lb liveBytes
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		lb.err = err
		return lb
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "run":
			lb.snapshots++
			lb.snapshotBytes += len(line) - len("data: ")
		case strings.HasPrefix(line, "data: ") && event == "change":
			lb.changes++
			lb.changeBytes += len(line) - len("data: ")
		case strings.HasPrefix(line, "data: ") && event == "end":
			return lb
		}
	}
	lb.err = fmt.Errorf("the stream ended before its end event: %v", sc.Err())
	return lb
}

// TestUIBrowserLiveChanges: run pages open while a chain runs — across
// a crash of its worker, a restart of the server (the page reconnects to
// it), a pause and a resume — end showing exactly what a page opened
// afresh after the run shows; the server sends one snapshot per page and
// then changes, a small part of the view each. The run waits at nodes
// hold1…hold3 for the test, so that every step happens while it runs.
func TestUIBrowserLiveChanges(t *testing.T) {
	tabA := newTab(t)
	// Mermaid takes seconds to draw a graph of 200 nodes in a loaded
	// headless Chromium, and the page as long to answer DevTools: the
	// sizes of a 200-node run's updates are TestLiveChangeBytes's.
	const n = 40
	holds := t.TempDir()
	release := func(hold string) {
		if err := os.WriteFile(filepath.Join(holds, hold), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runFile := liveChainRunFile(t, n, "20ms", holds)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	runDir := runDirOf(runFile, "chain")
	run := bgObversa(t, dir, "run", "--run-id", "chain", runFile)
	t.Cleanup(func() {
		for _, h := range []string{"hold1", "hold2", "hold3"} {
			_ = os.WriteFile(filepath.Join(holds, h), nil, 0o644)
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(runDir, "events.jsonl")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not start")
		}
	}
	listen := freeAddr(t)
	base, stopUI := startUIAt(t, dir, listen)
	status := func(node, status string) chromedp.Action[chromedp.Void] {
		return shows(fmt.Sprintf(`#nodes tr[data-node=%q][data-status=%q]`, node, status))
	}
	step(t, tabA, "a page follows the chain to hold1", chromedp.Navigate(base+"/runs/chain"), status("hold1", "started"))
	pid := workerPID(t, runDir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill worker %d: %v", pid, err)
	}
	for workerPID(t, runDir) == pid {
		time.Sleep(50 * time.Millisecond)
	}
	step(t, tabA, "hold1 starts again in the next worker", status("hold1", "started"))
	release("hold1")
	step(t, tabA, "the page follows the chain past its worker's crash", status("hold2", "started"))

	// The server restarts: the page reconnects to the new one, which has
	// a follower (an epoch) of its own, and starts from its snapshot.
	stopUI()
	step(t, tabA, "the page sees its stream cut", shows(`#conn.off`))
	base2, _ := startUIAt(t, dir, listen)
	if base2 != base {
		t.Fatalf("the server came back at %s, not %s", base2, base)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counted := make(chan liveBytes, 1)
	go func() { counted <- countLive(ctx, base+"/api/live/runs/chain") }()
	step(t, tabA, "the page reconnects", shows(`#conn.on`), status("hold2", "started"))
	tabC := newTab(t)
	step(t, tabC, "a second page opens while the run runs", chromedp.Navigate(base+"/runs/chain"), status("hold2", "started"))

	// Paused, then carried on by a new watchdog and worker.
	if r := obversa(t, dir, "stop", "--pause", runDir); r.code != 0 {
		t.Fatalf("stop --pause: exit %d: %s", r.code, r.stderr)
	}
	if code := waitExit(t, run, "obversa run"); code != exitPaused {
		t.Fatalf("obversa run after stop --pause: exit %d, want %d", code, exitPaused)
	}
	step(t, tabA, "the page shows the run paused", shows(`#summary .badge[data-status="paused"]`))
	release("hold2")
	resumed := bgObversa(t, dir, "resume", runDir)
	for _, tab := range []context.Context{tabA, tabC} {
		step(t, tab, "the pages follow the resumed run", status("hold3", "started"))
	}
	release("hold3")
	if code := waitExit(t, resumed, "obversa resume"); code != exitComplete {
		t.Fatalf("obversa resume: exit %d", code)
	}
	for _, tab := range []context.Context{tabA, tabC} {
		step(t, tab, "the page shows the run completed and stops listening", status(fmt.Sprintf("n%d", n-1), "passed"),
			shows(`#summary .badge[data-status="completed"]`),
			shows(`#conn[title="the run ended"]`))
	}
	lb := <-counted
	if lb.err != nil {
		t.Fatal(lb.err)
	}
	t.Logf("a page of the %d-node chain from the server's restart to the run's end: %d snapshot of %d bytes, %d changes of %d bytes each on average (%.1f%% of the snapshot)",
		n+3, lb.snapshots, lb.snapshotBytes, lb.changes, lb.changeBytes/max(lb.changes, 1), 100*float64(lb.changeBytes)/float64(max(lb.changes, 1))/float64(max(lb.snapshotBytes, 1)))
	if lb.snapshots != 1 || lb.changes < 5 || lb.changeBytes/max(lb.changes, 1) > lb.snapshotBytes/4 {
		t.Errorf("the stream sent %d snapshots and %d changes of %d bytes: want one snapshot, then changes much smaller than it", lb.snapshots, lb.changes, lb.changeBytes)
	}

	// A page opened now gets the run whole, from a follower that folds
	// the record afresh.
	last := fmt.Sprintf(`#graph svg g.node[data-node="n%d"][data-status="passed"]`, n-1)
	tabB := newTab(t)
	step(t, tabB, "a page opened after the run", chromedp.Navigate(base+"/runs/chain"),
		shows(`#summary .badge[data-status="completed"]`), shows(`#conn[title="the run ended"]`), shows(last))
	fresh := value(t, tabB, "the fresh page", chromedp.Evaluate[string](pageState))
	for name, tab := range map[string]context.Context{"the page open from the start": tabA, "the page opened during the run": tabC} {
		step(t, tab, "the graph is drawn as it ended", shows(last))
		if got := value(t, tab, name, chromedp.Evaluate[string](pageState)); got != fresh {
			t.Errorf("%s differs from a page opened after the run:\n%s", name, firstDiff(got, fresh))
		}
	}
}

// shows waits until the page has an element that css selects. It asks
// the page itself, not the DevTools DOM mirror, which lags far behind a
// page whose 200-node graph is drawn again at every update.
func shows(css string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf("document.querySelector(%q) !== null", css), chromedp.WithPollingInterval(50*time.Millisecond))
}

// firstDiff shows where two texts first differ.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-200)
	return fmt.Sprintf("at byte %d of %d/%d:\n got: …%.400s\nwant: …%.400s", i, len(a), len(b), a[from:], b[from:])
}
