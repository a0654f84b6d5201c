package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/internal/failpoint"
)

// simProcs is how many real-process cases TestSimProcesses runs; the
// in-process crash simulation (host/watchdog, `make sim`) runs thousands.
var simProcs = flag.Int("sim.procs", 6, "crash simulation with real processes: how many seeded cases to run")

// procCase is a seeded real-process crash case: a random graph of shell
// binding nodes, each leaving one line in the side-effect file per
// execution, killed one way at one point.
type procCase struct {
	seed      int64
	nodes     []string
	retrySafe map[string]bool
	approval  []string
	how       string // "failpoint", "watchdog" or "both"
	point     string // the failpoint, for "failpoint"
	at        string // the node the kill aims at
}

var procPoints = []string{failpoint.AfterDispatch, failpoint.AfterStart, failpoint.BeforePlugin, failpoint.AfterPlugin, failpoint.AfterResult}

func newProcCase(seed int64) *procCase {
	r := rand.New(rand.NewSource(seed))
	c := &procCase{seed: seed, retrySafe: map[string]bool{}}
	n := 3 + r.Intn(3)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i)
		c.nodes = append(c.nodes, id)
		c.retrySafe[id] = r.Intn(2) == 0
		if r.Intn(6) == 0 {
			c.approval = append(c.approval, id)
		}
	}
	c.how = []string{"failpoint", "watchdog", "both"}[seed%3]
	c.point = procPoints[r.Intn(len(procPoints))]
	c.at = c.nodes[r.Intn(n)]
	return c
}

// runFile writes the case's run file: node i depends on a random earlier
// node (a chain or a fan-out) and appends its id to effects, which the
// plugin may write.
func (c *procCase) runFile(t *testing.T, effects string) string {
	r := rand.New(rand.NewSource(c.seed))
	var b strings.Builder
	b.WriteString("restart {\n  max_restarts = 3\n  initial_backoff = \"50ms\"\n}\nteardown_grace = \"1s\"\n")
	// The commands write effects beside the workspace (docs/confinement.md).
	fmt.Fprintf(&b, "plugin \"shell\" {\n  type = \"node\"\n  path = \"BIN/cmd-engine\"\n  confine {\n    write = [%q]\n  }\n}\n", filepath.Dir(effects))
	var approval []string
	for _, a := range c.approval {
		approval = append(approval, fmt.Sprintf("%q", a))
	}
	fmt.Fprintf(&b, "graph \"dag\" {\n  global_concurrency = 2\n  approval = [%s]\n", strings.Join(approval, ", "))
	for i, id := range c.nodes {
		fmt.Fprintf(&b, "  node %q {\n    binding = \"shell\"\n    retry_safe = %v\n", id, c.retrySafe[id])
		fmt.Fprintf(&b, "    input = { command = [\"sh\", \"-c\", \"echo %s >> %s; sleep 0.3\"] }\n", id, effects)
		if i > 0 {
			fmt.Fprintf(&b, "    depends_on = [%q]\n", c.nodes[r.Intn(i)])
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return writeRunFile(t, b.String())
}

// TestSimProcesses is the crash simulation with real processes: obversa
// built with failpoints, the real cmd-engine plugin, and real SIGKILLs —
// of the worker at a failpoint, of the watchdog, or of both — then the
// run is carried to its end as a person would (resume, approve,
// reconcile from the side-effect file) and its record is checked.
func TestSimProcesses(t *testing.T) {
	t.Parallel()
	for i := 0; i < *simProcs; i++ {
		seed := int64(i + 1)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			c := newProcCase(seed)
			if err := c.run(t); err != nil {
				t.Fatalf("seed %d (%s %s at %s): %v\nreproduce: go test -run 'TestSimProcesses/seed=%d$' -sim.procs=%d ./cmd/obversa/",
					seed, c.how, c.point, c.at, err, seed, seed)
			}
		})
	}
}

func (c *procCase) run(t *testing.T) error {
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.log")
	runFile := c.runFile(t, effects)
	wd := filepath.Dir(runFile)
	if r := obversa(t, wd, "plugin", "lock", runFile); r.code != 0 {
		return fmt.Errorf("lock: %s", r.stderr)
	}
	runDir := runDirOf(runFile, "s")
	switch c.how {
	case "failpoint":
		obversaEnv(t, wd, []string{failpoint.Env + "=" + c.point + ":" + c.at + ":" + filepath.Join(dir, "fired")}, "run", "--run-id", "s", runFile)
	default:
		cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--run-id", "s", runFile)
		cmd.Dir = wd
		if err := cmd.Start(); err != nil {
			return err
		}
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(readFile(effects), c.at) && time.Now().Before(deadline) {
			if _, err := os.Stat(filepath.Join(runDir, "events.jsonl")); err == nil && status(t, runDir).Phase == "paused" {
				break // an approval stands before the node: kill now
			}
			time.Sleep(20 * time.Millisecond)
		}
		if c.how == "both" {
			if pid := lastWorker(runDir); pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		waitFor(t, 10*time.Second, "the run's processes to stop", func() bool { return len(marked(t, runDir)) == 0 })
	}
	for step := 0; step < 20; step++ {
		st := status(t, runDir)
		switch st.Phase {
		case "completed":
			return c.check(t, runDir, effects)
		case "failed", "stopped":
			return fmt.Errorf("the run ended %s", st.Phase)
		case "paused":
			p := st.PauseReasons[0]
			args := []string{"resume", "--position", p.Position}
			switch p.Kind {
			case "approval":
				if r := obversa(t, wd, "approve", "--no-resume", runDir, p.Position); r.code != 0 && !strings.Contains(r.stderr, "already decided") {
					return fmt.Errorf("approve: %s", r.stderr)
				}
			case "reconcile-attempt":
				node := strings.Split(p.Position, "/")[1]
				done := "not-done"
				if strings.Contains(readFile(effects), node) {
					done = "done"
				}
				args = append(args, "--reconciled="+done)
			default:
				return fmt.Errorf("paused on %+v", p)
			}
			obversa(t, wd, append(args, runDir)...)
		default:
			obversa(t, wd, "resume", runDir)
		}
	}
	return fmt.Errorf("no end after 20 resumes: %s", strings.Join(eventLines(t, runDir), "\n"))
}

// check: the record verifies, no node that is not retry_safe took effect
// twice, every node took effect, nothing of the run is left running.
func (c *procCase) check(t *testing.T, runDir, effects string) error {
	if r := obversa(t, filepath.Dir(runDir), "verify", runDir); r.code != 0 {
		return fmt.Errorf("verify: %s %s", r.stdout, r.stderr)
	}
	count := map[string]int{}
	for _, l := range strings.Fields(readFile(effects)) {
		count[l]++
	}
	for _, n := range c.nodes {
		if count[n] == 0 || (count[n] > 1 && !c.retrySafe[n]) {
			return fmt.Errorf("node %s took effect %d times (retry_safe %v)", n, count[n], c.retrySafe[n])
		}
	}
	if ps := marked(t, runDir); len(ps) > 0 {
		return fmt.Errorf("processes carry the owner marker: %+v", ps)
	}
	return nil
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// lastWorker returns the pid of the last worker the record names, 0 if
// none yet.
func lastWorker(runDir string) int {
	b, _ := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	pid := 0
	for _, line := range strings.Split(string(b), "\n") {
		var e struct {
			Type string `json:"type"`
			Data struct {
				PID int `json:"pid"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == "run:worker-started" {
			pid = e.Data.PID
		}
	}
	return pid
}
