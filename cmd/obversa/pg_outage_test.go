package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/internal/testutil"
)

// pgCluster is a private PostgreSQL cluster of one test, made by
// scripts/pg-test-cluster.sh in a directory and on a port of its own, so
// that the test can stop and start it without disturbing the tests that
// share the cluster OBVERSA_TEST_POSTGRES names.
type pgCluster struct {
	env []string // OBVERSA_PG_DIR and OBVERSA_PG_PORT for the script
	url string   // the test URL it printed
}

// pgClusterScript is the script that makes, starts and stops test clusters.
const pgClusterScript = "../../scripts/pg-test-cluster.sh"

// newPGCluster creates and starts a private cluster, destroyed when the
// test ends. Without PostgreSQL installed the test skips (fails under
// OBVERSA_REQUIRE_POSTGRES=1).
func newPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil {
		if _, lerr := exec.LookPath("pg_ctl"); lerr != nil {
			msg := "this test needs PostgreSQL installed (Debian's postgresql package)"
			if os.Getenv(pgRequireEnv) == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	// The server may run as the postgres user, which must reach the
	// directory: not under the test's own 0700 temporary directory.
	dir, err := os.MkdirTemp("", "obversa-pg-outage-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	c := &pgCluster{env: []string{"OBVERSA_PG_DIR=" + filepath.Join(dir, "pg"), fmt.Sprintf("OBVERSA_PG_PORT=%d", port)}}
	t.Cleanup(func() {
		c.script(t, "destroy")
		_ = os.RemoveAll(dir)
	})
	out := c.script(t, "start")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	c.url = lines[len(lines)-1]
	if !strings.HasPrefix(c.url, "postgres://") {
		t.Fatalf("pg-test-cluster.sh start printed no URL:\n%s", out)
	}
	return c
}

// script runs pg-test-cluster.sh verb on the cluster and returns its
// standard output.
func (c *pgCluster) script(t *testing.T, verb string) string {
	t.Helper()
	cmd := exec.Command("bash", pgClusterScript, verb)
	cmd.Env = append(os.Environ(), c.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg-test-cluster.sh %s: %v\n%s%s", verb, err, out, stderr.String())
	}
	return string(out)
}

// pgRow is one event as the database holds it.
type pgRow struct {
	Rev        int64
	ID, Digest string
	Type, Prev string
	Data       string
}

// recordOf reads every event of run id in schema, in order.
func (c *pgCluster) recordOf(t *testing.T, schema, id string) []pgRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT rev, id, digest, type, prev, data FROM `+pgx.Identifier{schema, "events"}.Sanitize()+
		` WHERE run_id = $1 ORDER BY rev`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []pgRow
	for rows.Next() {
		var e pgRow
		if err := rows.Scan(&e.Rev, &e.ID, &e.Digest, &e.Type, &e.Prev, &e.Data); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pgGatedRunFile is a three-node chain whose middle node "gate" waits
// until the file GATE exists; every node is retry-safe.
const pgGatedRunFile = `
restart {
  max_restarts    = 2
  initial_backoff = "50ms"
}
teardown_grace = "1s"
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
graph "dag" {
  node "first" {
    binding    = "shell"
    input      = { command = ["true"] }
    retry_safe = true
  }
  node "gate" {
    binding    = "shell"
    depends_on = ["first"]
    input      = { command = ["sh", "-c", "while [ ! -e GATE ]; do sleep 0.05; done"] }
    retry_safe = true
  }
  node "last" {
    binding    = "shell"
    depends_on = ["gate"]
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`

// TestPGOutageMidRunPauses: the database of a run stops while a node runs
// (a private cluster, stopped for real); the worker's next append fails,
// and `obversa run` pauses the run — exit 3, RUN_STORAGE, a hint naming
// the database and the `obversa resume` command — as the file store does
// when its storage fails, instead of ending exit 1 with the driver's
// error. Nothing recorded before the outage is lost or rewritten, and once
// the database is back, `obversa resume` finishes the run, which
// verifies.
func TestPGOutageMidRunPauses(t *testing.T) {
	t.Parallel()
	c := newPGCluster(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate.file")
	text := strings.NewReplacer("BIN/", binDir+"/", "GATE", gate).Replace(pgGatedRunFile)
	runFile := filepath.Join(dir, "run.hcl")
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	const schema = "outage"
	url := c.url + "&schema=" + schema
	run, out := startObversa(t, dir, nil, "run", "--storage", url, "--run-id", "t", runFile)
	db := pgDB{url: url, schema: schema, conn: c.url}
	waitFor(t, 60*time.Second, "the gate node to start", func() bool {
		for _, e := range db.events(t, "t", "graph:node-attempt-started") {
			if e["node"] == "gate" {
				return true
			}
		}
		return false
	})
	// A follower of the record (events --follow) waits the outage out.
	follower, followed := startObversa(t, dir, nil, "events", "--follow", "--storage", url, "t")
	waitFor(t, 30*time.Second, "events --follow to print the gate's start", func() bool {
		return strings.Contains(followed.String(), "graph:node-attempt-started")
	})
	before := c.recordOf(t, schema, "t")
	c.script(t, "stop")
	// The node ends while the database is down: its result is the
	// worker's next append.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitOutagePause(t, run, out, c, url, schema)

	const unreachable = "events: the record cannot be read: "
	waitFor(t, 30*time.Second, "events --follow to say the database is unreachable", func() bool {
		return strings.Contains(followed.String(), unreachable)
	})
	if follower.ProcessState != nil {
		t.Fatalf("events --follow ended during the outage:\n%s", followed)
	}
	c.script(t, "start")
	waitFor(t, 60*time.Second, "events --follow to read the record again", func() bool {
		return strings.Contains(followed.String(), "events: the record can be read again")
	})
	after := c.recordOf(t, schema, "t")
	samePrefix(t, "after the outage", before, after)
	r := obversa(t, dir, "resume", "--storage", url, "t")
	if r.code != 0 || !strings.Contains(r.stdout, "complete: 3 nodes passed") {
		t.Fatalf("resume once the database is back: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	samePrefix(t, "after the resume", after, c.recordOf(t, schema, "t"))
	if code := exitCode(follower.Wait()); code != 0 || strings.Count(followed.String(), unreachable) != 1 ||
		!strings.Contains(followed.String(), "graph:run-finished") || !strings.Contains(followed.String(), "storage unavailable") {
		t.Fatalf("events --follow through the outage: exit %d, want 0, the outage said once and the run's end:\n%s", code, followed)
	}
	if v := obversa(t, dir, "verify", "--storage", url, "t"); v.code != 0 {
		t.Errorf("verify: exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
}

// samePrefix fails unless every event of before is in after, unchanged
// and at the same revision.
func samePrefix(t *testing.T, when string, before, after []pgRow) {
	t.Helper()
	if len(after) < len(before) {
		t.Fatalf("%s: the record holds %d events, %d before", when, len(after), len(before))
	}
	for i, e := range before {
		if after[i] != e {
			t.Errorf("%s: event rev %d was rewritten: %+v, was %+v", when, e.Rev, after[i], e)
		}
	}
}

// waitOutagePause waits for `obversa run` to end once the database stopped
// under it and checks that it paused: exit 3, RUN_STORAGE, no "Error:", and
// a hint naming the record and the `obversa resume` command.
func waitOutagePause(t *testing.T, run *exec.Cmd, out *testutil.SyncBuffer, c *pgCluster, url, schema string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	var code int
	select {
	case err := <-done:
		code = exitCode(err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("obversa run still runs 2 minutes after the database stopped:\n%s", out)
	}
	text := out.String()
	label := strings.TrimPrefix(strings.SplitN(c.url, "?", 2)[0], "postgres://obversa@")
	if code != 3 || !strings.Contains(text, "paused RUN_STORAGE") || strings.Contains(text, "Error:") {
		t.Fatalf("run with the database down: exit %d, want 3 and a RUN_STORAGE pause:\n%s", code, text)
	}
	for _, want := range []string{"postgres://" + label + "/" + schema + "/default/t", "storage unavailable",
		"once the database is back, carry the run on with `obversa resume --storage '" + url + "' t`"} {
		if !strings.Contains(text, want) {
			t.Errorf("the pause does not say %q:\n%s", want, text)
		}
	}
}
