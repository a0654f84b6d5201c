package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/obversa/obversa/host/runview"
)

// jsonLines decodes each line of out as one JSON object.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not one JSON object per line: %q: %v", line, err)
		}
		objs = append(objs, m)
	}
	return objs
}

// wantRefusal checks that r is the refusal object with code and exit
// status.
func wantRefusal(t *testing.T, what string, r result, exit int, code, msg string) {
	t.Helper()
	objs := jsonLines(t, r.stdout)
	if r.code != exit || len(objs) != 1 || objs[0]["code"] != code || !strings.Contains(objs[0]["message"].(string), msg) {
		t.Errorf("%s: exit %d, %s; want exit %d, code %s, a message with %q", what, r.code, r.stdout, exit, code, msg)
	}
}

// TestQuickstartViews: after the quickstart runs without --json, a
// person can read each node's result, list runs, show a node, draw the
// run's graph and read what the engines streamed — and script each of
// these with --json.
func TestQuickstartViews(t *testing.T) {
	t.Parallel()
	runFile := example(t, "quickstart")
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	r := obversa(t, dir, "run", "--progress", "--run-id", "qs", runFile)
	runDir := runDirOf(runFile, "qs")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"complete: 3 nodes passed", "nodes: 3/3 done", `draft   passed`, `mock answer to: "Write a haiku about durable logs."`,
		"count   passed", "exit 0 · 9", "obversa show " + runDir} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run's result has no %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "  completed  dag/draft/1") {
		t.Errorf("no plain progress lines on stderr (--progress):\n%s", r.stderr)
	}

	storage := filepath.Join(dir, ".obversa")
	if r := obversa(t, dir, "runs", "--storage", storage); r.code != 0 || !regexpMatch(`(?m)^qs +completed +\S+ \S+ +\S+ +3/3  in \d+ · out \d+$`, r.stdout) {
		t.Errorf("runs: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := obversa(t, dir, "runs", "--storage", storage, "--phase", "paused"); r.code != 0 || strings.TrimSpace(r.stdout) != "no runs" {
		t.Errorf("runs --phase paused: exit %d: %s", r.code, r.stdout)
	}
	if r := obversa(t, dir, "runs", "--storage", storage, "--phase", "complted"); r.code != exitUsage || !strings.Contains(r.stderr, `did you mean "completed"`) {
		t.Errorf("runs --phase complted: exit %d: %s", r.code, r.stderr)
	}
	runs := jsonLines(t, obversa(t, dir, "runs", "--json", "--storage", storage).stdout)
	if len(runs) != 1 || runs[0]["run_id"] != "qs" || runs[0]["phase"] != "completed" || runs[0]["nodes"].(map[string]any)["done"] != 3.0 {
		t.Errorf("runs --json: %v", runs)
	}

	if r := obversa(t, dir, "show", runDir); r.code != 0 || !strings.Contains(r.stdout, "nodes:    3/3 done (3 passed") || !strings.Contains(r.stdout, "report  passed") {
		t.Errorf("show: exit %d:\n%s", r.code, r.stdout)
	}
	if r := obversa(t, dir, "show", runDir, "draft"); r.code != 0 || !strings.Contains(r.stdout, "text:\n  mock answer to:") || !strings.Contains(r.stdout, "call 1:   completed") {
		t.Errorf("show draft: exit %d:\n%s", r.code, r.stdout)
	}
	count := jsonLines(t, obversa(t, dir, "show", "--json", runDir, "dag/count/1").stdout)
	if len(count) != 1 || count[0]["exit_code"] != 0.0 || count[0]["stdout"] != "9" || count[0]["status"] != "passed" {
		t.Errorf("show --json count: %v", count)
	}
	wantRefusal(t, "show of an unknown node", obversa(t, dir, "show", "--json", runDir, "drfat"), exitUsage, "USAGE", `did you mean "draft"`)

	if r := obversa(t, dir, "graph", runDir); r.code != 0 || !strings.Contains(r.stdout, "class n0,n1,n2 passed") || !strings.Contains(r.stdout, "draft<br/>required · lane writer · passed") {
		t.Errorf("graph RUN: exit %d:\n%s", r.code, r.stdout)
	}

	if r := obversa(t, dir, "logs", runDir); r.code != 0 || !strings.Contains(r.stdout, `dag/draft/1  │ mock answer to: "Write a haiku about durable logs."`) ||
		!regexpMatch(`dag/report/1 │ usage: in \d+ · out \d+`, r.stdout) {
		t.Errorf("logs: exit %d:\n%s", r.code, r.stdout)
	}
	if r := obversa(t, dir, "logs", "--node", "report", runDir); r.code != 0 || strings.Contains(r.stdout, "dag/draft/1") || !strings.Contains(r.stdout, "dag/report/1") {
		t.Errorf("logs --node report: exit %d:\n%s", r.code, r.stdout)
	}
	lines := jsonLines(t, obversa(t, dir, "logs", "--json", runDir).stdout)
	if len(lines) < 4 || lines[0]["position"] != "dag/draft/1" || lines[0]["kind"] != "text" {
		t.Errorf("logs --json: %v", lines)
	}
	wantRefusal(t, "logs of an unknown node", obversa(t, dir, "logs", "--json", "--node", "reprot", runDir), exitUsage, "USAGE", `did you mean "report"`)
}

// TestApproveCarriesOn: approve records the decision and carries the run
// on in one command; hints name the real run directory; a mistyped
// position gets a suggestion; a bare resume carries a decision recorded
// with --no-resume on.
func TestApproveCarriesOn(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", simpleLane+`
graph "dag" {
  approval = ["gate", "other"]
  node "gate" {
    lane   = "w"
    prompt = "first"
  }
  node "after" {
    binding    = "shell"
    depends_on = ["gate"]
    input      = { command = ["true"] }
    retry_safe = true
  }
  node "other" {
    lane   = "w"
    prompt = "second"
  }
}
`)
	r := obversa(t, dir, "run", "--run-id", "ap", runFile)
	runDir := runDirOf(runFile, "ap")
	if r.code != exitPaused || !strings.Contains(r.stdout, "next: obversa approve "+runDir+" dag/gate/1") || strings.Contains(r.stdout, " RUN") {
		t.Fatalf("run: exit %d, want paused with a hint naming %s:\n%s", r.code, runDir, r.stdout)
	}
	if r := obversa(t, dir, "approve", runDir, "dag/gat/1"); r.code != exitUsage || !strings.Contains(r.stderr, `did you mean "dag/gate/1"`) {
		t.Errorf("approve of a mistyped position: exit %d: %s", r.code, r.stderr)
	}
	if r := obversa(t, dir, "resume", "--position", "dag/othr/1", runDir); r.code != exitUsage || !strings.Contains(r.stderr, `did you mean "dag/other/1"`) {
		t.Errorf("resume of a mistyped position: exit %d: %s", r.code, r.stderr)
	}
	// One command: the decision, then the run carried on to its next
	// pause (other still waits).
	r = obversa(t, dir, "approve", "--json", runDir, "dag/gate/1")
	objs := jsonLines(t, r.stdout)
	if r.code != exitPaused || len(objs) != 2 || objs[0]["recorded_by"] != "approve" || objs[0]["decision"] != "allow" || objs[1]["kind"] != "paused" {
		t.Fatalf("approve --json: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if n := len(recorded(t, runDir, "graph:node-completed")); n != 2 {
		t.Fatalf("%d nodes completed after approving gate, want gate and after", n)
	}
	// Record only, then a bare resume carries the decision on.
	if r := obversa(t, dir, "approve", "--no-resume", "--deny", runDir, "dag/other/1"); r.code != 0 || !strings.Contains(r.stdout, "obversa resume "+runDir) {
		t.Fatalf("approve --no-resume: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	r = obversa(t, dir, "resume", "--json", runDir)
	objs = jsonLines(t, r.stdout)
	if r.code != exitFailed || len(objs) != 1 || objs[0]["code"] != "DAG_NODE_FAILED" {
		t.Fatalf("bare resume after a deny: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if failed := recorded(t, runDir, "graph:node-failed"); len(failed) != 1 || failed[0]["code"] != "DENIED" {
		t.Errorf("node-failed %v, want other DENIED", failed)
	}
	// stop of the ended run answers with its settled result and the
	// result's exit status.
	r = obversa(t, dir, "stop", "--json", runDir)
	objs = jsonLines(t, r.stdout) // at least one object, or the test ends
	if res, _ := objs[0]["result"].(map[string]any); r.code != exitFailed || len(objs) != 1 || objs[0]["action"] != "ended" ||
		objs[0]["phase"] != "failed" || res["code"] != "DAG_NODE_FAILED" {
		t.Errorf("stop of an ended run: exit %d, %s; want exit %d, action ended, the settled result", r.code, r.stdout, exitFailed)
	}
}

// TestStopAsksAndPauses: stop refuses to end a run with work left without
// --yes when it cannot ask; stop --pause pauses a live run so that resume
// carries it on.
func TestStopAsksAndPauses(t *testing.T) {
	t.Parallel()
	dir, runDir, release, cmd := slowRun(t)
	if r := obversa(t, dir, "stop", runDir); r.code != exitUsage || !strings.Contains(r.stderr, "cannot be resumed") || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("stop without a terminal: exit %d: %s", r.code, r.stderr)
	}
	r := obversa(t, dir, "stop", "--pause", "--json", runDir)
	if objs := jsonLines(t, r.stdout); r.code != 0 || objs[0]["action"] != "signalled" || objs[0]["pause"] != true {
		t.Fatalf("stop --pause: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if code := exitCode(cmd.Wait()); code != exitPaused {
		t.Fatalf("the paused run exited %d, want %d", code, exitPaused)
	}
	if st := status(t, runDir); st.Phase != "paused" || len(st.PauseReasons) != 1 || st.PauseReasons[0].Kind != "OPERATOR_PAUSE" {
		t.Fatalf("after stop --pause: %+v", st)
	}
	if r := obversa(t, dir, "stop", "--pause", runDir); r.code != 0 || !strings.Contains(r.stdout, "nothing to pause") {
		t.Errorf("stop --pause of a paused run: exit %d: %s", r.code, r.stdout)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = obversa(t, dir, "resume", "--json", runDir)
	if objs := jsonLines(t, r.stdout); r.code != 0 || objs[0]["kind"] != "complete" {
		t.Fatalf("resume after a pause: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
}

// slowRun starts a run whose first node waits for its release file and
// waits until that node started; it returns the run file's directory, the
// run directory, the release file and the running `obversa run`.
func slowRun(t *testing.T) (dir, runDir, release string, cmd *exec.Cmd) {
	t.Helper()
	runFile, dir := rulesRun(t, "", "", simpleLane+`
graph "dag" {
  node "slow" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "while [ ! -f RELEASE ]; do sleep 0.05; done"] }
    retry_safe = true
  }
  node "next" {
    binding    = "shell"
    depends_on = ["slow"]
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`)
	release = filepath.Join(dir, "release.flag")
	rewrite(t, runFile, "RELEASE", release)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	cmd = exec.Command(filepath.Join(binDir, "obversa"), "run", "--run-id", "st", runFile)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	runDir = runDirOf(runFile, "st")
	waitFor(t, 30*time.Second, "dag/slow/1 to start", func() bool {
		_, err := os.Stat(filepath.Join(runDir, "events.jsonl"))
		return err == nil && len(recorded(t, runDir, "graph:node-attempt-started")) == 1
	})
	return dir, runDir, release, cmd
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// TestNodeTableOneRowPerNode: a for_each instance's id holds its key,
// any string an upstream result held; a line feed, tab or other control
// character in it stays on the node's row, escaped, and the status
// column lines up on every row as a terminal shows it: a wide character
// takes two columns, a combining mark none.
func TestNodeTableOneRowPerNode(t *testing.T) {
	t.Parallel()
	nodes := []runview.Node{
		{ID: "each[a\n  deploy  passed]", Status: runview.StatusPassed},
		{ID: "each[b\tc]", Status: runview.StatusPassed},
		{ID: "each[\x00nul\x1b]", Status: runview.StatusPassed},
		{ID: "each[é]", Status: runview.StatusPassed},
		{ID: "each[日本語]", Status: runview.StatusPassed},
		{ID: "each[e\u0301\u0301x]", Status: runview.StatusPassed},
		{ID: "plan", Status: runview.StatusPassed},
	}
	var b strings.Builder
	printNodeTable(&b, nodes, 0, "dir")
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != len(nodes) {
		t.Fatalf("%d lines for %d nodes:\n%s", len(lines), len(nodes), b.String())
	}
	for i, line := range lines {
		if shown := termText(line); shown != line {
			t.Errorf("line %d is changed by the terminal escaping: %q", i, line)
		}
		col := ansi.StringWidth(line[:strings.LastIndex(line, " passed")])
		if first := ansi.StringWidth(lines[0][:strings.LastIndex(lines[0], " passed")]); col != first {
			t.Errorf("line %d: status at column %d, not the first line's:\n%s", i, col, b.String())
		}
	}
	for _, want := range []string{`each[a\n  deploy  passed]`, `each[b\tc]`, `each[\u0000nul\u001b]`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table has no %q:\n%s", want, b.String())
		}
	}
}
