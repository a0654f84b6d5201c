package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
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

// graphRun is what one benchmarked `obversa run` shows.
type graphRun struct {
	wall, span, toDispatch, fold time.Duration
	events                       int
	peakRSS                      int64 // bytes
	// cpu is the CPU time the worker and its plugins used while the
	// executor ran (watchdog.CPUTimeEnv); cpuKnown is false when the
	// worker wrote none.
	cpu      watchdog.CPUTime
	cpuKnown bool
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
	cpuFile := filepath.Join(b.TempDir(), "cputime.json")
	cmd.Env = append(os.Environ(), watchdog.CPUTimeEnv+"="+cpuFile)
	var errb strings.Builder
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("run: %v: %s", err, errb.String())
	}
	r := graphRun{wall: time.Since(start)}
	r.cpu, r.cpuKnown = readCPUTime(b, cpuFile)
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

// readCPUTime reads what the worker wrote to path (watchdog.CPUTimeEnv);
// false when it wrote nothing (a platform without the figures).
func readCPUTime(b *testing.B, path string) (watchdog.CPUTime, bool) {
	b.Helper()
	var c watchdog.CPUTime
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, false
	}
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	return c, c.WorkerNs > 0
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
	var workerCPU, pluginCPU, workerGCs, workerAlloc, workerSleeps int64 // ns, ns, collections, bytes, sleeps
	cpuRuns := 0
	for i := 0; i < b.N; i++ {
		r := runGraph(b, dir, runFile, fmt.Sprintf("b%d", i), storage)
		sum.wall += r.wall
		sum.span += r.span
		sum.toDispatch += r.toDispatch
		sum.fold += r.fold
		sum.events = r.events
		sum.peakRSS = max(sum.peakRSS, r.peakRSS)
		if r.cpuKnown {
			cpuRuns++
			workerCPU += r.cpu.WorkerNs
			workerGCs += r.cpu.WorkerGCs
			workerAlloc += r.cpu.WorkerAllocBytes
			workerSleeps += r.cpu.WorkerSleeps
			for _, ns := range r.cpu.PluginsNs {
				pluginCPU += ns
			}
		}
	}
	per := float64(b.N * n)
	b.ReportMetric(ms(sum.span)/per, "ms/node")
	if cpuRuns > 0 {
		// The executor's CPU and its plugins' per node, start-up and the
		// snapshot saved as the worker ends left out.
		b.ReportMetric(float64(workerCPU)/1e3/float64(cpuRuns*n), "worker-cpu-us/node")
		b.ReportMetric(float64(pluginCPU)/1e3/float64(cpuRuns*n), "plugin-cpu-us/node")
		b.ReportMetric(float64(workerGCs)/float64(cpuRuns), "worker-gcs")
		b.ReportMetric(float64(workerAlloc)/1e3/float64(cpuRuns*n), "worker-alloc-KB/node")
		b.ReportMetric(float64(workerSleeps)/float64(cpuRuns*n), "worker-sleeps/node")
	}
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
