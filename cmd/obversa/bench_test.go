package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// graphRunFile writes a run file of n mock-engine nodes; parent(i) names
// node i's dependency (-1 for none). guarded asks the guard policy
// (examples/plugins/guard, with its default patterns) before every
// attempt.
func graphRunFile(b *testing.B, n, concurrency int, parent func(i int) int, guarded bool) string {
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

// recordSpan returns the time from the first dispatch to the result, read
// from the record's timestamps, and the number of events.
func recordSpan(b *testing.B, dir string) (time.Duration, int) {
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
	return last.Sub(first), n
}

func benchGraph(b *testing.B, n, concurrency int, parent func(int) int, guarded bool) {
	runFile := graphRunFile(b, n, concurrency, parent, guarded)
	dir := filepath.Dir(runFile)
	if r := obversa(b, dir, "plugin", "lock", runFile); r.code != 0 {
		b.Fatalf("lock: %s", r.stderr)
	}
	var span, wall, fold time.Duration
	events := 0 // events in the last run's record
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("b%d", i)
		start := time.Now()
		r := obversa(b, dir, "run", "--run-id", id, runFile)
		wall += time.Since(start)
		if r.code != 0 {
			b.Fatalf("run: exit %d: %s", r.code, r.stderr)
		}
		s, n := recordSpan(b, runDirOf(runFile, id))
		span += s
		events = n
		fold += foldTime(b, runDirOf(runFile, id))
	}
	per := float64(b.N * n)
	b.ReportMetric(float64(span.Microseconds())/1000/per, "ms/node")
	b.ReportMetric(float64(wall.Microseconds())/1000/per, "wall-ms/node")
	b.ReportMetric(per/span.Seconds(), "nodes/s")
	fsync := rawFdatasync(b, dir, 200)
	b.ReportMetric(fsync, "fdatasync-ms")
	// A node needs two durable appends at most (its start, its result),
	// fewer when the executor batches them.
	b.ReportMetric(float64(span.Microseconds())/1000/per/(2*fsync), "x-2fdatasync")
	b.ReportMetric(float64(fold.Microseconds())/1000/float64(b.N), "fold-ms")
	b.ReportMetric(float64(events), "events")
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

// rawFdatasync measures write+fdatasync of one 512-byte line on the same
// file system, the floor a durable append pays; it returns ms per op.
func rawFdatasync(b *testing.B, dir string, ops int) float64 {
	f, err := os.OpenFile(filepath.Join(dir, "raw.bin"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := []byte(strings.Repeat("x", 511) + "\n")
	start := time.Now()
	for i := 0; i < ops; i++ {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
	}
	return float64(time.Since(start).Microseconds()) / 1000 / float64(ops)
}

// BenchmarkChain200 runs a 200-node chain on the mock engine: each node
// costs at least one fdatasync and one plugin call.
func BenchmarkChain200(b *testing.B) {
	benchGraph(b, 200, 4, func(i int) int { return i - 1 }, false)
}

// BenchmarkChain200Guarded is BenchmarkChain200 with the guard policy
// asked before every attempt: the gate's cost per node is the difference.
func BenchmarkChain200Guarded(b *testing.B) {
	benchGraph(b, 200, 4, func(i int) int { return i - 1 }, true)
}

// BenchmarkFanOut200 runs one root and 199 dependents of it, 32 at a time.
func BenchmarkFanOut200(b *testing.B) {
	benchGraph(b, 200, 32, func(i int) int {
		if i == 0 {
			return -1
		}
		return 0
	}, false)
}

// BenchmarkDAG1000FanOut32 runs a 1 000-node tree in which every node has
// up to 32 children, 32 at a time.
func BenchmarkDAG1000FanOut32(b *testing.B) {
	benchGraph(b, 1000, 32, func(i int) int {
		if i == 0 {
			return -1
		}
		return (i - 1) / 32
	}, false)
}
