package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The CLI on a record kept in PostgreSQL, with the real binaries: the
// quickstart and an approval run with --storage postgres://…, the
// storage URL from the environment and from the run file, and nothing
// showing the database password.

// TestPGQuickstart runs the quickstart with --storage postgres://…: it
// completes, status, events, verify and show read it from the database,
// and the password from the password file shows nowhere — not in any
// output, log or event.
func TestPGQuickstart(t *testing.T) {
	t.Parallel()
	db := pgStorage(t, "")
	runFile := example(t, "quickstart")
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	var outputs []string
	r := obversa(t, dir, "run", "--storage", db.url, "--run-id", "qs", runFile)
	outputs = append(outputs, r.stdout, r.stderr)
	if r.code != 0 || !strings.Contains(r.stdout, "complete: 3 nodes passed") {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "obversa show --storage ") || !strings.Contains(r.stdout, " qs") {
		t.Errorf("the run's hints do not name it by storage and id:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, ".obversa", "default", "runs", "qs", "events.jsonl")); err == nil {
		t.Error("a run kept in the database also has an events.jsonl")
	}
	if _, err := os.Stat(filepath.Join(dir, ".obversa", "default", "runs", "qs", "worker.log")); err != nil {
		t.Errorf("the worker's log is not in the run's local directory: %v", err)
	}
	st := pgStatus(t, dir, db, "", "qs")
	if st.Phase != "completed" {
		t.Errorf("status phase %q, want completed", st.Phase)
	}
	for _, args := range [][]string{
		{"verify", "--storage", db.url, "qs"},
		{"events", "--json", "--storage", db.url, "qs"},
		{"status", "--storage", db.url, "qs"},
	} {
		r := obversa(t, dir, args...)
		outputs = append(outputs, r.stdout, r.stderr)
		if r.code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args[0], r.code, r.stdout, r.stderr)
		}
	}
	// verify checks every event that events prints: the whole run, from
	// its start to the cleanup after its end.
	ev := outputs[4]
	n := strings.Count(ev, "\n")
	if !strings.Contains(ev, `"type":"graph:run-started"`) || !strings.Contains(ev, `"type":"graph:run-finished"`) || !strings.Contains(ev, `"type":"run:cleanup"`) {
		t.Errorf("events --json printed %d lines:\n%s", n, ev)
	}
	if v := outputs[2]; !strings.HasPrefix(v, fmt.Sprintf("ok: %d events", n)) {
		t.Errorf("verify: %s; events printed %d", v, n)
	}
	// The environment names the storage for every command.
	env := []string{storageURLEnv + "=" + db.url}
	if r := obversaEnv(t, dir, env, "run", "--run-id", "qs2", runFile); r.code != 0 {
		t.Fatalf("run with %s: exit %d\n%s%s", storageURLEnv, r.code, r.stdout, r.stderr)
	}
	if r := obversaEnv(t, dir, env, "verify", "qs2"); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: ") {
		t.Errorf("verify with %s: exit %d\n%s%s", storageURLEnv, r.code, r.stdout, r.stderr)
	}
	if r := obversaEnv(t, dir, env, "status", "qs2"); !strings.Contains(r.stdout, "phase:    completed") {
		t.Errorf("status with %s: exit %d\n%s%s", storageURLEnv, r.code, r.stdout, r.stderr)
	}
	// So does the run file's storage block.
	text, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	withURL := strings.Replace(string(text), "storage {", "storage {\n  url = \""+db.url+"\"", 1)
	if withURL == string(text) {
		t.Fatal("the quickstart has no storage block")
	}
	if err := os.WriteFile(runFile, []byte(withURL), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, dir, "run", "--run-id", "qs3", runFile); r.code != 0 {
		t.Fatalf("run with storage.url: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := len(db.events(t, "qs3", "graph:run-finished")); n != 1 {
		t.Errorf("the run file's storage.url: %d run-finished events in the database, want 1", n)
	}
	// A run directory is not a database run's name.
	if r := obversa(t, dir, "status", "--storage", db.url, filepath.Join(dir, ".obversa", "default", "runs", "qs")); r.code != exitUsage {
		t.Errorf("status of a directory in a database storage: exit %d, want %d: %s", r.code, exitUsage, r.stderr)
	}
	if r := obversa(t, dir, "status", "--storage", db.url, "nope"); r.code != exitUsage || !strings.Contains(r.stderr, `no run "nope" in namespace "default"`) {
		t.Errorf("status of a missing run: exit %d: %s", r.code, r.stderr)
	}
	pw := db.password(t)
	for _, o := range outputs {
		if strings.Contains(o, pw) {
			t.Errorf("a command printed the database password:\n%s", o)
		}
	}
	noSecretUnder(t, dir, pw)
	for _, e := range db.events(t, "qs", "graph:run-started") {
		if b, _ := json.Marshal(e); strings.Contains(string(b), pw) || strings.Contains(string(b), "postgres://") {
			t.Error("the plan in graph:run-started records the storage URL or the password")
		}
	}
}

// TestPGApproval: a run kept in the database pauses for approval (exit
// 3); approve records the decision and resume carries the run on to its
// end, each command naming the run by id.
func TestPGApproval(t *testing.T) {
	t.Parallel()
	db := pgStorage(t, "")
	runFile, dir := rulesRun(t, "", "", `graph "dag" {
  approval = ["gate"]
  node "gate" {
    binding    = "shell"
    input      = { command = ["echo", "gated"] }
    retry_safe = true
  }
  node "after" {
    binding    = "shell"
    depends_on = ["gate"]
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`)
	if r := obversa(t, dir, "run", "--storage", db.url, "--run-id", "ap", runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d (paused)\n%s%s", r.code, exitPaused, r.stdout, r.stderr)
	}
	if st := pgStatus(t, dir, db, "", "ap"); st.Phase != "paused" || len(st.PauseReasons) != 1 || st.PauseReasons[0].Position != "dag/gate/1" {
		t.Fatalf("status %+v, want paused at dag/gate/1", st)
	}
	if r := obversa(t, dir, "approve", "--storage", db.url, "ap", "dag/gate/1"); r.code != 0 {
		t.Fatalf("approve: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := obversa(t, dir, "resume", "--storage", db.url, "--position", "dag/gate/1", "ap")
	if r.code != 0 || !strings.Contains(r.stdout, "complete: 2 nodes passed") {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v := obversa(t, dir, "verify", "--storage", db.url, "ap"); v.code != 0 {
		t.Errorf("verify: exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
}

// TestPGEventsFollow: `events --follow` on a run kept in the database
// prints each event as it is appended (LISTEN/NOTIFY) and the run's end.
func TestPGEventsFollow(t *testing.T) {
	t.Parallel()
	db := pgStorage(t, "")
	runFile, dir := rulesRun(t, "", "", `graph "dag" {
  node "wait" {
    binding    = "shell"
    input      = { command = ["sleep", "1"] }
    retry_safe = true
  }
}
`)
	run, _ := startObversa(t, dir, nil, "run", "--storage", db.url, "--run-id", "f", runFile)
	waitFor(t, 30*time.Second, "the run's first event", func() bool { return len(db.events(t, "f", "graph:run-started")) == 1 })
	follow, out := startObversa(t, dir, nil, "events", "--follow", "--storage", db.url, "f")
	if err := run.Wait(); err != nil {
		t.Fatalf("run: %v", err)
	}
	waitFor(t, 10*time.Second, "events --follow to print the run's end", func() bool {
		return strings.Contains(out.String(), "graph:run-finished")
	})
	_ = follow.Process.Signal(os.Interrupt)
	_ = follow.Wait()
	if n := strings.Count(out.String(), "graph:node-completed"); n != 1 {
		t.Errorf("events --follow printed %d node-completed, want 1:\n%s", n, out)
	}
}

// TestPGReviewLoop: the review-loop example runs on PostgreSQL as on
// files: the loop passes in round 2, the record says so, verify passes.
func TestPGReviewLoop(t *testing.T) {
	t.Parallel()
	db := pgStorage(t, "")
	runFile := example(t, "review-loop")
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	r := obversa(t, dir, "run", "--json", "--storage", db.url, "--run-id", "rl", runFile)
	if r.code != 0 || !strings.Contains(r.stdout, `"kind":"complete"`) {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ev := obversa(t, dir, "events", "--storage", db.url, "rl")
	for _, want := range []string{"graph:loop-started", "review says fail", "review says pass", "config: passed in round 2"} {
		if !strings.Contains(ev.stdout, want) {
			t.Errorf("events lack %q:\n%s", want, ev.stdout)
		}
	}
	if v := obversa(t, dir, "verify", "--storage", db.url, "rl"); v.code != 0 {
		t.Errorf("verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}
