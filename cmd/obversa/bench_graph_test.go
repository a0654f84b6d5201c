package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/plugin"
)

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

// BenchmarkFloorAfter takes BenchmarkFloor's samples again, after the
// graph benchmarks: go test runs a package's benchmarks in file-name, then
// source order, so it is declared last in the last file that holds graph
// benchmarks (BenchmarkScale, in a later file, has its own make bench
// step). The disk's fdatasync drifts from minute to minute, and
// internal/benchtable divides by the mean of the samples before and after
// (docs/decisions.md, "Benchmarks").
func BenchmarkFloorAfter(b *testing.B) { floorSuite(b) }
