package executor

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// benchEngine answers every call at once the way the mock engine does:
// one final text part and a known usage.
type benchEngine struct{ fakeEngine }

func (e *benchEngine) Run(_ context.Context, req plugin.RunRequest, _ plugin.Emitter) (*plugin.RunResult, error) {
	return &plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "mock answer to: " + req.Prompt, Final: true}},
		Usage: plugin.Usage{Known: true, Input: 1, Output: 5}, Requested: req.Target, Effective: req.Target}, nil
}

// BenchmarkExecuteChain is the executor's own cost per node of a 200-node
// chain: an in-process engine that answers at once, the record on a real
// file store (on /dev/shm when there is one, so that its fdatasync costs
// next to nothing and the executor's CPU shows). cmd/obversa's
// BenchmarkChain200 is the whole run with real plugin processes.
func BenchmarkExecuteChain(b *testing.B) {
	benchExecute(b, 200, 4, func(i int) int { return i - 1 })
}

// BenchmarkExecuteDAG1000FanOut32 is BenchmarkExecuteChain for the
// 1 000-node tree of cmd/obversa's BenchmarkDAG1000FanOut32.
func BenchmarkExecuteDAG1000FanOut32(b *testing.B) {
	benchExecute(b, 1000, 32, func(i int) int {
		if i == 0 {
			return -1
		}
		return (i - 1) / 32
	})
}

// benchExecute runs an n-node graph whose node i depends on parent(i)
// (none when negative) b.N times and reports per node: wall time, heap
// bytes and allocations of the executor (the fold of run-started before
// it left out).
func benchExecute(b *testing.B, n, concurrency int, parent func(int) int) {
	ctx := context.Background()
	def := &graph.Definition{Name: "dag", GlobalConcurrency: concurrency, KeyedConcurrency: []graph.KeyLimit{}}
	for i := range n {
		d := graph.NodeDef{ID: fmt.Sprintf("n%d", i), Kind: graph.KindRequired, Lane: "w", Prompt: fmt.Sprintf("p%d", i), DependsOn: []string{}}
		if p := parent(i); p >= 0 {
			d.DependsOn = []string{fmt.Sprintf("n%d", p)}
		}
		def.Nodes = append(def.Nodes, d)
	}
	t := plugin.Identity{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{}}
	var elapsed time.Duration
	var allocs, bytes uint64
	for i := range b.N {
		b.StopTimer()
		root := os.Getenv("OBVERSA_BENCH_DIR")
		if root == "" {
			if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
				root = "/dev/shm"
			}
		}
		dir, err := os.MkdirTemp(root, "obversa-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) }) // after the run's own cleanup
		p := &plan.Plan{RunID: fmt.Sprintf("r%d", i), Namespace: "default", Storage: plan.Storage{Directory: dir},
			Plugins: []plan.PluginPlan{{Name: "mock", Type: "engine", SHA256: "sha256:00", Source: "mock", ConfigDigest: "sha256:x"}},
			Lanes:   []plan.LanePlan{{Name: "w", Requested: t, Effective: t, KnownSubstitutions: []plugin.Identity{}, Fallbacks: []plugin.Identity{}}},
			Limits:  plan.Limits{MaxDispatches: n + 10}}
		rs, err := plan.NewRunStarted("run.hcl", def, p, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		st, err := store.Open(dir, "default")
		if err != nil {
			b.Fatal(err)
		}
		run := ownedRun(b, st, p.RunID)
		if _, err := run.Append(ctx, 0, store.NewEvent{Type: graph.EventRunStarted, Data: rs}); err != nil {
			b.Fatal(err)
		}
		state, err := runstate.Load(ctx, run)
		if err != nil {
			b.Fatal(err)
		}
		x, err := New(Options{Run: run, State: state, Engines: map[string]plugin.Engine{"mock": &benchEngine{}}})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		b.StartTimer()
		res, err := x.Execute(ctx)
		b.StopTimer()
		elapsed += time.Since(start)
		runtime.ReadMemStats(&after)
		allocs += after.Mallocs - before.Mallocs
		bytes += after.TotalAlloc - before.TotalAlloc
		if err != nil || res.Kind != runstate.KindComplete {
			b.Fatalf("Execute: %+v, %v", res, err)
		}
	}
	per := float64(b.N * n)
	b.ReportMetric(float64(elapsed.Nanoseconds())/1e3/per, "us/node")
	b.ReportMetric(float64(allocs)/per, "allocs/node")
	b.ReportMetric(float64(bytes)/per, "B/node")
}
