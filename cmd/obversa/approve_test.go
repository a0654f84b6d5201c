package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// racePositions is how many positions TestApproveRace decides, each by an
// approve and a deny started together.
const racePositions = 50

// TestApproveRace: on a paused run, an approve and a deny (each only
// recording, --no-resume) race for each of 50 positions; each position gets exactly one recorded decision, and
// the losing command is refused naming it.
func TestApproveRace(t *testing.T) {
	t.Parallel()
	var nodes strings.Builder
	var names []string
	for i := 0; i < racePositions; i++ {
		fmt.Fprintf(&nodes, "  node \"n%d\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n    retry_safe = true\n  }\n", i)
		names = append(names, fmt.Sprintf("%q", fmt.Sprintf("n%d", i)))
	}
	runFile, dir := rulesRun(t, "", "", fmt.Sprintf("graph \"dag\" {\n  global_concurrency = %d\n  approval = [%s]\n%s}\n",
		racePositions, strings.Join(names, ", "), nodes.String()))
	if r := obversa(t, dir, "run", "--run-id", "race", runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runDir := runDirOf(runFile, "race")
	type outcome struct {
		deny bool
		res  result
	}
	outcomes := make([][2]outcome, racePositions)
	var wg sync.WaitGroup
	for i := 0; i < racePositions; i++ {
		pos := fmt.Sprintf("dag/n%d/1", i)
		for j, deny := range []bool{false, true} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				args := []string{"approve", "--no-resume", runDir, pos}
				if deny {
					args = []string{"approve", "--no-resume", "--deny", runDir, pos}
				}
				outcomes[i][j] = outcome{deny: deny, res: obversa(t, dir, args...)}
			}()
		}
	}
	wg.Wait()
	decided := map[string][]string{}
	for _, d := range recorded(t, runDir, "graph:approval-decided") {
		p, _ := d["position"].(string)
		dec, _ := d["decision"].(string)
		decided[p] = append(decided[p], dec)
	}
	for i := 0; i < racePositions; i++ {
		pos := fmt.Sprintf("dag/n%d/1", i)
		if len(decided[pos]) != 1 {
			t.Errorf("%s: decisions %v, want exactly one", pos, decided[pos])
			continue
		}
		won := 0
		for _, o := range outcomes[i] {
			switch {
			case o.res.code == 0:
				won++
				if want := map[bool]string{false: "allow", true: "deny"}[o.deny]; decided[pos][0] != want {
					t.Errorf("%s: the command that succeeded asked %s, the record has %s", pos, want, decided[pos][0])
				}
			case o.res.code != exitUsage || !strings.Contains(o.res.stderr, "already decided: "+decided[pos][0]):
				t.Errorf("%s: the losing command: exit %d: %s", pos, o.res.code, o.res.stderr)
			}
		}
		if won != 1 {
			t.Errorf("%s: %d commands succeeded, want 1", pos, won)
		}
	}
}

// TestApproveLiveWorker: while a worker runs a slow node, a position
// pauses for approval; `obversa approve` hands the decision to the live
// worker, which records it and carries the position on without a resume,
// and a racing deny is refused (both --no-resume: neither follows the run). The worker never crashes.
func TestApproveLiveWorker(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", simpleLane+`
graph "dag" {
  global_concurrency = 2
  approval = ["gate"]
  node "slow" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "while [ ! -f RELEASE ]; do sleep 0.05; done"] }
    retry_safe = true
  }
  node "gate" {
    binding    = "shell"
    input      = { command = ["true"] }
    retry_safe = true
  }
  node "late" {
    binding    = "shell"
    depends_on = ["gate"]
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`)
	release := filepath.Join(dir, "release.flag")
	rewrite(t, runFile, "RELEASE", release)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--run-id", "live", runFile)
	cmd.Dir = dir
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	runDir := runDirOf(runFile, "live")
	waitFor(t, 30*time.Second, "dag/gate/1 to pause", func() bool {
		_, err := os.Stat(filepath.Join(runDir, "events.jsonl"))
		return err == nil && len(recorded(t, runDir, "graph:node-paused")) == 1
	})
	// An approve and a deny race; the live worker records one.
	var wg sync.WaitGroup
	res := make([]result, 2)
	for i, args := range [][]string{{"approve", "--no-resume", runDir, "dag/gate/1"}, {"approve", "--no-resume", "--deny", runDir, "dag/gate/1"}} {
		wg.Add(1)
		go func() { defer wg.Done(); res[i] = obversa(t, dir, args...) }()
	}
	wg.Wait()
	decided := recorded(t, runDir, "graph:approval-decided")
	if len(decided) != 1 || decided[0]["request"] == nil {
		t.Fatalf("decisions %v, want one recorded by the worker (with its request id)\napprove: %+v\ndeny: %+v", decided, res[0], res[1])
	}
	winner, loser := res[0], res[1]
	if decided[0]["decision"] == "deny" {
		winner, loser = res[1], res[0]
	}
	if winner.code != 0 || !strings.Contains(winner.stdout, "live worker") {
		t.Errorf("winning command: exit %d: %s %s", winner.code, winner.stdout, winner.stderr)
	}
	if loser.code != exitUsage || !strings.Contains(loser.stderr, "already decided") {
		t.Errorf("losing command: exit %d: %s", loser.code, loser.stderr)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code := exitCode(cmd.Wait())
	want := exitComplete
	if decided[0]["decision"] == "deny" {
		want = exitFailed
	}
	if code != want {
		t.Fatalf("run exited %d, want %d: %s", code, want, errb.String())
	}
	if n := len(recorded(t, runDir, "run:worker-exited")); n != 0 {
		t.Errorf("%d worker crashes", n)
	}
	if n := len(recorded(t, runDir, "run:worker-started")); n != 1 {
		t.Errorf("%d workers started, want 1", n)
	}
}
