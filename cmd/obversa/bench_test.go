package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// graphRunFile writes a run file of n mock-engine nodes; parent(i) names
// node i's dependency (-1 for none). guarded asks the guard policy
// (examples/plugins/guard, with its default patterns) before every
// attempt.
func graphRunFile(b testing.TB, n, concurrency int, parent func(i int) int, guarded bool) string {
	b.Helper()
	var s strings.Builder
	fmt.Fprintf(&s, `
limits {
  max_dispatches = %d
}
plugin "mock" {
  type = "engine"
  path = "%s/mock-engine"
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  global_concurrency = %d
`, n+10, binDir, concurrency)
	if guarded {
		s.WriteString("  policy = [\"guard\"]\n")
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&s, "  node \"n%d\" {\n    lane = \"w\"\n    prompt = \"p%d\"\n", i, i)
		if p := parent(i); p >= 0 {
			fmt.Fprintf(&s, "    depends_on = [\"n%d\"]\n", p)
		}
		s.WriteString("  }\n")
	}
	s.WriteString("}\n")
	if guarded {
		fmt.Fprintf(&s, "plugin \"guard\" {\n  type = \"policy\"\n  path = \"%s/guard\"\n}\n", binDir)
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "run.hcl")
	if err := os.WriteFile(path, []byte(s.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// recordSpan returns the time of the first dispatch, the time from it to
// the result, read from the record's timestamps, and the number of events.
func recordSpan(b *testing.B, dir string) (time.Time, time.Duration, int) {
	b.Helper()
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var first, last time.Time
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e struct {
			Type string    `json:"type"`
			TS   time.Time `json:"ts"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			b.Fatal(err)
		}
		n++
		if e.Type == "graph:node-dispatched" && first.IsZero() {
			first = e.TS
		}
		if e.Type == "graph:run-finished" {
			last = e.TS
		}
	}
	return first, last.Sub(first), n
}

// graphRun is what one benchmarked `obversa run` shows.
type graphRun struct {
	wall, span, toDispatch, fold time.Duration
	events                       int
	peakRSS                      int64 // bytes
}

// runGraph runs runFile once as run id in dir and measures it: the wall
// time of the process, the span from the first dispatch to the result and
// the time from the process start to the first dispatch (both from the
// record's millisecond timestamps), the fold time of the record, and the
// peak resident set of the largest process of the run (the worker, its
// watchdog or a plugin: wait4 reports the maximum over the process and the
// descendants it waited for).
// storage is --storage: "" for the default storage directory, or a
// postgres:// URL.
func runGraph(b *testing.B, dir, runFile, id, storage string) graphRun {
	b.Helper()
	args := []string{"run", "--run-id", id, runFile}
	if storage != "" {
		args = append([]string{"--storage", storage}, args...)
	}
	cmd := exec.Command(filepath.Join(binDir, "obversa"), args...)
	cmd.Dir = dir
	var errb strings.Builder
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("run: %v: %s", err, errb.String())
	}
	r := graphRun{wall: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.peakRSS = ru.Maxrss * 1024
	}
	var first time.Time
	if storage == "" {
		runDir := runDirOf(runFile, id)
		first, r.span, r.events = recordSpan(b, runDir)
		r.fold = foldTime(b, runDir)
	} else {
		first, r.span, r.events, r.fold = readBackDB(b, storage, id)
	}
	r.toDispatch = first.Sub(start.Truncate(time.Millisecond))
	return r
}

// readBackDB finds a finished run in the database storage names as the
// CLI does and returns what recordSpan does, and how long opening and
// folding its whole record took, as a restarted worker does.
func readBackDB(b *testing.B, storage, id string) (first time.Time, span time.Duration, events int, fold time.Duration) {
	b.Helper()
	ctx := b.Context()
	g := &globals{storageFlag: storage, namespace: defaultNamespace}
	ref, err := g.findRun(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	defer ref.Close()
	start := time.Now()
	run, err := ref.OpenReadOnly(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer run.Close()
	st, err := runstate.Load(ctx, run)
	if err != nil {
		b.Fatal(err)
	}
	if st.Finished() == nil {
		b.Fatal("the folded record has no result")
	}
	fold = time.Since(start)
	var last time.Time
	err = run.Read(ctx, 1, func(e store.Event) error {
		events++
		if e.Type == "graph:node-dispatched" && first.IsZero() {
			first = e.TS
		}
		if e.Type == "graph:run-finished" {
			last = e.TS
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return first, last.Sub(first), events, fold
}

// pgCommit measures a bare INSERT of one 512-byte row committed on its
// own, on one connection to db's database, the floor a durable append to
// PostgreSQL pays (one round trip, one WAL flush); it returns ms per op.
func pgCommit(b *testing.B, db pgDB, ops int) float64 {
	b.Helper()
	ctx := b.Context()
	c := db.connect(b, ctx)
	defer c.Close(ctx)
	table := pgx.Identifier{db.schema, "bench_floor"}.Sanitize()
	if _, err := c.Exec(ctx, "CREATE TABLE "+table+" (id bigint PRIMARY KEY, data text NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	line := strings.Repeat("x", 512)
	start := time.Now()
	for i := 0; i < ops; i++ {
		if _, err := c.Exec(ctx, "INSERT INTO "+table+" (id, data) VALUES ($1, $2)", i, line); err != nil {
			b.Fatal(err)
		}
	}
	return float64(time.Since(start).Microseconds()) / 1000 / float64(ops)
}

// benchGraph runs the graph b.N times; db is nil for the default storage
// directory, else the database the runs are kept in (--storage), whose
// one-row commit floor is measured after the runs (commit-ms).
func benchGraph(b *testing.B, n, concurrency int, parent func(int) int, guarded bool, db *pgDB) {
	benchRunFile(b, graphRunFile(b, n, concurrency, parent, guarded), n, db)
}

// benchRunFile runs runFile, whose graph has n units of work, b.N times
// and reports its times per unit against raw fdatasync, and its fold; db
// as for benchGraph.
func benchRunFile(b *testing.B, runFile string, n int, db *pgDB) {
	storage := ""
	if db != nil {
		storage = db.url
	}
	dir := filepath.Dir(runFile)
	if r := obversa(b, dir, "plugin", "lock", runFile); r.code != 0 {
		b.Fatalf("lock: %s", r.stderr)
	}
	var sum graphRun
	for i := 0; i < b.N; i++ {
		r := runGraph(b, dir, runFile, fmt.Sprintf("b%d", i), storage)
		sum.wall += r.wall
		sum.span += r.span
		sum.toDispatch += r.toDispatch
		sum.fold += r.fold
		sum.events = r.events
		sum.peakRSS = max(sum.peakRSS, r.peakRSS)
	}
	per := float64(b.N * n)
	b.ReportMetric(ms(sum.span)/per, "ms/node")
	b.ReportMetric(ms(sum.wall)/per, "wall-ms/node")
	b.ReportMetric(ms(sum.toDispatch)/float64(b.N), "start-ms")
	b.ReportMetric(ms(sum.fold)/float64(b.N), "fold-ms")
	b.ReportMetric(float64(sum.events), "events")
	b.ReportMetric(float64(sum.peakRSS)/(1<<20), "peak-rss-MiB")
	if db != nil {
		commit := pgCommit(b, *db, 200)
		b.ReportMetric(commit, "commit-ms")
		// A node needs two durable appends at most (its start, its
		// result), fewer when the executor batches them.
		b.ReportMetric(ms(sum.span)/per/(2*commit), "x-2commit")
	}
}

// foldTime opens a finished run and folds its whole record, as a
// restarted worker does.
func foldTime(b *testing.B, runDir string) time.Duration {
	b.Helper()
	start := time.Now()
	run, err := store.OpenRunDir(b.Context(), runDir, store.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	defer run.Close()
	st, err := runstate.Load(b.Context(), run)
	if err != nil {
		b.Fatal(err)
	}
	if st.Finished() == nil {
		b.Fatal("the folded record has no result")
	}
	return time.Since(start)
}

// BenchmarkChain200 runs a 200-node chain on the mock engine: each node
// costs at least one fdatasync and one plugin call.
func BenchmarkChain200(b *testing.B) {
	benchGraph(b, 200, 4, func(i int) int { return i - 1 }, false, nil)
}

// BenchmarkPGChain200Run is BenchmarkChain200 with the record in
// PostgreSQL (--storage postgres://…, a fresh schema of the test
// database); skipped without OBVERSA_TEST_POSTGRES.
func BenchmarkPGChain200Run(b *testing.B) {
	db := pgStorage(b, "")
	benchGraph(b, 200, 4, func(i int) int { return i - 1 }, false, &db)
}

// BenchmarkPGDAG1000FanOut32 is BenchmarkDAG1000FanOut32 with the record
// in PostgreSQL; skipped without OBVERSA_TEST_POSTGRES.
func BenchmarkPGDAG1000FanOut32(b *testing.B) {
	db := pgStorage(b, "")
	benchGraph(b, 1000, 32, func(i int) int {
		if i == 0 {
			return -1
		}
		return (i - 1) / 32
	}, false, &db)
}

// BenchmarkChain200Guarded is BenchmarkChain200 with the guard policy
// asked before every attempt: the gate's cost per node is the difference.
func BenchmarkChain200Guarded(b *testing.B) {
	benchGraph(b, 200, 4, func(i int) int { return i - 1 }, true, nil)
}

// BenchmarkFanOut200 runs one root and 199 dependents of it, 32 at a time.
func BenchmarkFanOut200(b *testing.B) {
	benchGraph(b, 200, 32, func(i int) int {
		if i == 0 {
			return -1
		}
		return 0
	}, false, nil)
}

// BenchmarkDAG1000FanOut32 runs a 1 000-node tree in which every node has
// up to 32 children, 32 at a time.
func BenchmarkDAG1000FanOut32(b *testing.B) {
	benchGraph(b, 1000, 32, func(i int) int {
		if i == 0 {
			return -1
		}
		return (i - 1) / 32
	}, false, nil)
}

// BenchmarkQuickstart runs examples/quickstart (two plugins: the mock
// engine and cmd-engine; the plugin cache warm after two runs, the
// second with its entries settled):
// start-ms is `obversa run` to the first dispatch, wall-ms the whole
// process.
func BenchmarkQuickstart(b *testing.B) {
	runFile := example(b, "quickstart")
	dir := filepath.Dir(runFile)
	if r := obversa(b, dir, "plugin", "lock", runFile); r.code != 0 {
		b.Fatalf("lock: %s", r.stderr)
	}
	runGraph(b, dir, runFile, "warm", "")
	// A warm cache is one earlier runs filled and read: its entries have
	// settled (plugin.StampSettle), so a worker takes the host's stamps
	// instead of hashing them (docs/decisions.md, "A verified cache entry
	// is not hashed twice"), and the first run that found them settled
	// left hash receipts, so later runs read neither source nor entry
	// ("An unchanged plugin source is not hashed again").
	time.Sleep(plugin.StampSettle)
	runGraph(b, dir, runFile, "settled", "")
	var wall, toDispatch time.Duration
	for i := 0; i < b.N; i++ {
		r := runGraph(b, dir, runFile, fmt.Sprintf("q%d", i), "")
		wall += r.wall
		toDispatch += r.toDispatch
	}
	b.ReportMetric(ms(toDispatch)/float64(b.N), "start-ms")
	b.ReportMetric(ms(wall)/float64(b.N), "wall-ms")
}

// BenchmarkScale runs, once each, a 10 000-node DAG and a 33 400-node DAG
// (fan-out 32), whose record holds over 100 000 events, and measures what
// reads their records cost: the fold, `obversa status` and `obversa
// events` (whole processes, the median of three; wall and CPU time), and
// the peak resident set of the largest process of the run. make bench runs
// it with -benchtime 1x.
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{10_000, 33_400} {
		b.Run(fmt.Sprintf("DAG%d", n), func(b *testing.B) {
			benchScale(b, n)
		})
	}
}

func benchScale(b *testing.B, n int) {
	runFile := graphRunFile(b, n, 32, func(i int) int {
		if i == 0 {
			return -1
		}
		return (i - 1) / 32
	}, false)
	dir := filepath.Dir(runFile)
	if r := obversa(b, dir, "plugin", "lock", runFile); r.code != 0 {
		b.Fatalf("lock: %s", r.stderr)
	}
	var last graphRun
	var span, status, statusCPU, events, eventsCPU time.Duration
	var peak int64
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("s%d", i)
		last = runGraph(b, dir, runFile, id, "")
		span += last.span
		peak = max(peak, last.peakRSS)
		w, c := medianCLI(b, dir, "status", id)
		status, statusCPU = status+w, statusCPU+c
		w, c = medianCLI(b, dir, "events", id)
		events, eventsCPU = events+w, eventsCPU+c
	}
	b.ReportMetric(ms(span)/float64(b.N*n), "ms/node")
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
	b.ReportMetric(float64(last.events), "events")
	b.ReportMetric(ms(last.fold), "fold-ms")
	b.ReportMetric(ms(status)/float64(b.N), "status-ms")
	b.ReportMetric(ms(statusCPU)/float64(b.N), "status-cpu-ms")
	b.ReportMetric(ms(events)/float64(b.N), "events-ms")
	b.ReportMetric(ms(eventsCPU)/float64(b.N), "events-cpu-ms")
}

// medianCLI runs `obversa <verb> <run>` three times, output discarded, and
// returns the median wall time and the median CPU time (user + system: on
// a busy machine the wall time mostly measures the others).
func medianCLI(b *testing.B, dir, verb, id string) (wall, cpu time.Duration) {
	b.Helper()
	var w, c []time.Duration
	for range 3 {
		cmd := exec.Command(filepath.Join(binDir, "obversa"), verb, id)
		cmd.Dir = dir
		var errb strings.Builder
		cmd.Stderr = &errb
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s: %v: %s", verb, err, errb.String())
		}
		w = append(w, time.Since(start))
		c = append(c, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	slices.Sort(w)
	slices.Sort(c)
	return w[1], c[1]
}

// BenchmarkForEach1000 runs a planning node whose result lists 1 000 keys
// and a for_each node with one instance per key, 32 at a time: the fan-out
// of BenchmarkDAG1000FanOut32, decided at run time.
func BenchmarkForEach1000(b *testing.B) {
	const n = 1000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%q", fmt.Sprintf("f%d.go", i))
	}
	text := fmt.Sprintf(`
limits {
  max_dispatches = %d
}
plugin "mock" {
  type   = "engine"
  path   = "%s/mock-engine"
  config = { responses = [{ node = "plan", json = [%s] }] }
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  global_concurrency = 32
  node "plan" {
    lane   = "w"
    prompt = "list the files"
  }
  node "lint" {
    depends_on = ["plan"]
    for_each   = "${input.results.plan}"
    lane       = "w"
    prompt     = "lint ${each.key}"
  }
}
`, n+10, binDir, strings.Join(keys, ", "))
	path := filepath.Join(b.TempDir(), "run.hcl")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	benchRunFile(b, path, n+1, nil)
}
