package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/internal/testutil"
)

// Environment of the tests against PostgreSQL (docs/storage-postgres.md).
const (
	// pgTestEnv holds the URL of a database the tests may create schemas
	// in (scripts/pg-test-cluster.sh start prints one).
	pgTestEnv = "OBVERSA_TEST_POSTGRES"
	// pgRequireEnv=1 (set by .ci/run) makes a missing pgTestEnv a failure.
	pgRequireEnv = "OBVERSA_REQUIRE_POSTGRES"
)

// pgDB is one test's schema in the test database.
type pgDB struct {
	url    string // the storage URL the CLI is given: the test database, schema, extra parameters
	schema string
	conn   string // a URL for the test's own connections (no schema parameter)
}

// pgStorage returns a storage URL on a fresh schema of the test database
// with extra URL parameters (say "lease_ttl=2s"), dropped with everything
// in it when the test ends. Without a test database the test is skipped,
// saying how to run it; under OBVERSA_REQUIRE_POSTGRES=1 (CI) that is a
// failure.
func pgStorage(t testing.TB, params string) pgDB {
	t.Helper()
	base := os.Getenv(pgTestEnv)
	if base == "" {
		msg := "this test needs PostgreSQL: run scripts/pg-test-cluster.sh start, then eval \"$(scripts/pg-test-cluster.sh env)\" (sets " + pgTestEnv + ")"
		if os.Getenv(pgRequireEnv) == "1" {
			t.Fatal(msg + "; " + pgRequireEnv + "=1 makes its absence a failure")
		}
		t.Skip(msg)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	db := pgDB{schema: "cli_" + hex.EncodeToString(b[:]), conn: base}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	db.url = base + sep + "schema=" + db.schema
	if params != "" {
		db.url += "&" + params
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := db.connect(t, ctx)
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{db.schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", db.schema, err)
		}
	})
	return db
}

// connect opens a connection of the test itself to the test database.
func (db pgDB) connect(t testing.TB, ctx context.Context) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, db.conn)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	return c
}

// events returns the data of run id's events of type typ, in order.
func (db pgDB) events(t testing.TB, id, typ string) []map[string]any {
	t.Helper()
	ctx := context.Background()
	c := db.connect(t, ctx)
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT data FROM `+pgx.Identifier{db.schema, "events"}.Sanitize()+
		` WHERE run_id = $1 AND type = $2 ORDER BY rev`, id, typ)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return nil // the schema is not there yet
		}
		t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var data string
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// lease is a run's lease row as the database holds it.
type lease struct {
	Epoch   int64
	Host    string
	PID     int
	Held    bool
	Expired bool
}

// lease reads run id's lease.
func (db pgDB) lease(t testing.TB, ctx context.Context, c *pgx.Conn, id string) lease {
	t.Helper()
	var l lease
	err := c.QueryRow(ctx, `SELECT epoch, holder_host, holder_pid, lease_held, coalesce(lease_expires_at <= now(), true) FROM `+
		pgx.Identifier{db.schema, "runs"}.Sanitize()+` WHERE run_id = $1`, id).Scan(&l.Epoch, &l.Host, &l.PID, &l.Held, &l.Expired)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// expireLease ends run id's lease now, as its TTL ends it when its holder
// is dead: a test that must see the lease held and then expired decides
// when that happens instead of racing the TTL.
func (db pgDB) expireLease(t testing.TB, id string) {
	t.Helper()
	ctx := context.Background()
	c := db.connect(t, ctx)
	defer c.Close(ctx)
	tag, err := c.Exec(ctx, `UPDATE `+pgx.Identifier{db.schema, "runs"}.Sanitize()+
		` SET lease_expires_at = now() WHERE run_id = $1 AND lease_expires_at > now()`, id)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("run %s has no lease to expire", id)
	}
}

// password returns the password the test database's password file holds
// for its role, which no output, log or event may show.
func (db pgDB) password(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(db.conn)
	if err != nil {
		t.Fatal(err)
	}
	pf := u.Query().Get("passfile")
	if pf == "" {
		pf = os.Getenv("PGPASSFILE")
	}
	if pf == "" {
		t.Fatal("the test database's URL names no passfile")
	}
	b, err := os.ReadFile(pf)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	f := strings.Split(line, ":")
	if len(f) != 5 || len(f[4]) < 8 {
		t.Fatalf("password file %s: no password of at least 8 characters on its first line", pf)
	}
	return f[4]
}

// noSecretUnder fails if any file under dir holds secret.
func noSecretUnder(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, string(filepath.Separator)+"plugins"+string(filepath.Separator)) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the database password", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// startObversa starts the CLI in dir with extra environment entries; it
// is killed when the test ends if still running.
func startObversa(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, *testutil.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd, startCmd(t, cmd)
}

// startCmd starts cmd with its output in the buffer it returns; it is
// killed when the test ends if still running.
func startCmd(t *testing.T, cmd *exec.Cmd) *testutil.SyncBuffer {
	t.Helper()
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return out
}

// hostProcs is one simulated host's processes of a run: its watchdog, and
// the marker its worker, plugins and their commands carry.
type hostProcs struct {
	watchdog int
	worker   int
	marker   string
}

// runOnHost reads the processes of the run's current worker from the
// record and /proc: its pid (run:worker-started) and owner marker (its
// environment).
func runOnHost(t *testing.T, db pgDB, id string, watchdogPID int) hostProcs {
	t.Helper()
	ws := db.events(t, id, "run:worker-started")
	if len(ws) == 0 {
		t.Fatal("no worker started")
	}
	pid := int(ws[len(ws)-1]["pid"].(float64))
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("worker pid %d: %v", pid, err)
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if m, ok := strings.CutPrefix(kv, launch.OwnerEnv+"="); ok {
			return hostProcs{watchdog: watchdogPID, worker: pid, marker: m}
		}
	}
	t.Fatalf("worker pid %d carries no owner marker", pid)
	return hostProcs{}
}

// marked lists the live processes carrying h's marker.
func (h hostProcs) marked(t *testing.T) []proc.Proc {
	t.Helper()
	ps, err := proc.Marked(launch.OwnerEnv+"="+h.marker, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// kill SIGKILLs the host's watchdog, keeper (when not 0) and every
// process carrying its marker, as when the host dies: all at once. Each
// is frozen first — FreezeTree scans again until no process is new — and
// only then are they killed, so that none acts on another's end (a shell
// whose sleep is killed first would run its next command: an effect the
// dead host never had) and none forks a process after the scan that
// would outlive the kill.
func (h hostProcs) kill(t *testing.T, keeper int) {
	t.Helper()
	top := []int{h.watchdog}
	if keeper > 0 {
		top = append(top, keeper)
	}
	for _, pid := range top {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	frozen := proc.FreezeTree(launch.OwnerEnv+"="+h.marker, nil)
	for _, pid := range top {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, p := range frozen {
		_ = proc.Signal(p, syscall.SIGKILL)
	}
	t.Cleanup(func() {
		for _, p := range h.marked(t) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	})
}

// keeperOf returns the pid of the keeper of run id in schema, 0 if none.
func keeperOf(t *testing.T, schema, id string) int {
	t.Helper()
	return keeperWith(t, "schema="+schema, "\x00"+id+"\x00")
}

// pgStatus is `obversa status --json` of a run in db, as host sees it.
func pgStatus(t *testing.T, dir string, db pgDB, host, id string) statusReport {
	t.Helper()
	r := obversaEnv(t, dir, []string{"OBVERSA_HOST=" + host}, "status", "--json", "--storage", db.url, id)
	var s statusReport
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return s
}

// otherHost runs commands as another host: OBVERSA_HOST=name, in a mount
// namespace of its own where the test's directory shows a copy of the
// run file and lock file and nothing else (view), so that the host's
// workspace, workspace lease, logs and plugin cache are its own, as on a
// machine of its own; the binaries and the database are shared. It needs
// root (mount namespaces) and util-linux's unshare.
type otherHost struct {
	name, dir, view string
}

// newOtherHost prepares host name's view of dir.
func newOtherHost(t *testing.T, name, dir string) otherHost {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("simulating a second host needs root for a mount namespace")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("simulating a second host needs util-linux's unshare")
	}
	view := t.TempDir()
	for _, f := range []string{"run.hcl", "obversa.lock.hcl"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(view, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return otherHost{name: name, dir: dir, view: view}
}

// command returns the command that runs obversa with args on h.
func (h otherHost) command(args ...string) *exec.Cmd {
	script := `mount --bind "$1" "$2" && cd "$2" && shift 2 && exec "$@"`
	full := append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", h.view, h.dir, filepath.Join(binDir, "obversa")}, args...)
	cmd := exec.Command("unshare", full...)
	cmd.Env = append(os.Environ(), "OBVERSA_HOST="+h.name)
	return cmd
}

// run runs obversa with args on h.
func (h otherHost) run(t *testing.T, args ...string) result {
	t.Helper()
	return runResult(t, h.command(args...), fmt.Sprintf("obversa %v on %s", args, h.name))
}

// start starts obversa with args on h; it is killed when the test ends if
// still running.
func (h otherHost) start(t *testing.T, args ...string) (*exec.Cmd, *testutil.SyncBuffer) {
	t.Helper()
	cmd := h.command(args...)
	return cmd, startCmd(t, cmd)
}
