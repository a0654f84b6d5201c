//go:build failpoints

package watchdog

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/runstate"
)

// The crash simulation (docs/decisions.md, "Crash simulation"): `make sim`
// runs 10 000 cases, `make test` the first 300. A failure names its seed;
// `make sim SEED=n` (or -sim.seed=n) runs that case alone.
var (
	simCases = flag.Int("sim.cases", 300, "crash simulation: how many cases to run (seeded graphs × kill schedules)")
	simFirst = flag.Int64("sim.first", 1, "crash simulation: the first seed")
	simSeed  = flag.Int64("sim.seed", 0, "crash simulation: run only the graph of this seed, under each of its kill schedules")
)

// simStats counts what a simulation did.
type simStats struct {
	cases, kills, workerKills, watchdogKills, bothKills, pauses, reconciles atomic.Int64
	// policyCases ask a policy plugin; budgetCases carry a token budget,
	// budgetStops of which ended BUDGET_STOP.
	policyCases, budgetCases, budgetStops atomic.Int64
	// rounds, reviews and instances count the loop rounds, reviews and
	// for_each instances the runs with kills recorded.
	rounds, reviews, instances atomic.Int64
}

func TestSim(t *testing.T) {
	seeds := []int64{*simSeed}
	if *simSeed == 0 {
		seeds = seeds[:0]
		for i := int64(0); i < int64((*simCases+simSchedules-1)/simSchedules); i++ {
			seeds = append(seeds, *simFirst+i)
		}
	}
	// The record's files live in memory when the machine has a tmpfs: the
	// simulation is about what processes write and when they die, not
	// about the disk (power loss is the store's tests' business, on
	// store/simfs), and fdatasync on a disk would make 10 000 cases slow.
	base := t.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if base, err = os.MkdirTemp("/dev/shm", "obversa-sim-"); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
	}
	var stats simStats
	var mu sync.Mutex
	var failures []string
	jobs := make(chan int64)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 2*runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range jobs {
				if err := runSimCase(base, seed, &stats); err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("seed %d: %v\n  reproduce: make sim SEED=%d", seed, err, seed))
					mu.Unlock()
				}
			}
		}()
	}
	for _, s := range seeds {
		jobs <- s
	}
	close(jobs)
	wg.Wait()
	sort.Strings(failures)
	for _, f := range failures {
		t.Error(f)
	}
	fmt.Printf("sim: %d cases (%d graphs × %d kill schedules) in %s, %d kills (worker %d, watchdog %d, both %d), %d pauses answered (%d reconciliations), %d with a policy, %d with a budget (%d BUDGET_STOP), %d loop rounds, %d reviews, %d for_each instances, %d invariant violations\n",
		stats.cases.Load(), len(seeds), simSchedules, time.Since(start).Round(time.Second), stats.kills.Load(), stats.workerKills.Load(), stats.watchdogKills.Load(),
		stats.bothKills.Load(), stats.pauses.Load(), stats.reconciles.Load(), stats.policyCases.Load(), stats.budgetCases.Load(), stats.budgetStops.Load(),
		stats.rounds.Load(), stats.reviews.Load(), stats.instances.Load(), len(failures))
}

// runSimCase runs the graph of a seed without kills (the oracle) and
// then under each of its kill schedules, and checks the invariants.
func runSimCase(base string, seed int64, stats *simStats) error {
	c := newSimCase(seed)
	dir, err := os.MkdirTemp(base, fmt.Sprintf("seed-%d-", seed))
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	oracle, err := c.execute(filepath.Join(dir, "oracle"), nil, nil)
	if err != nil {
		return fmt.Errorf("the run without kills: %w", err)
	}
	for i, kills := range c.schedules {
		stats.cases.Add(1)
		got, err := c.execute(filepath.Join(dir, fmt.Sprint("crash-", i)), kills, stats)
		if err != nil {
			return fmt.Errorf("kills %v: %w", kills, err)
		}
		if c.policy != nil {
			stats.policyCases.Add(1)
		}
		if c.budgeted() {
			stats.budgetCases.Add(1)
			if got.Code == executor.CodeBudget {
				stats.budgetStops.Add(1)
			}
			// Kills change what the record counts: the budget's own
			// invariants hold instead (checkBudget).
			continue
		}
		if got.Kind != oracle.Kind || got.Code != oracle.Code {
			return fmt.Errorf("kills %v: result %s %s, the run without kills %s %s", kills, got.Kind, got.Code, oracle.Kind, oracle.Code)
		}
		if !c.def.StopOnError {
			if g, o := outcomeNodes(got), outcomeNodes(oracle); g != o {
				return fmt.Errorf("kills %v: nodes %s, the run without kills %s", kills, g, o)
			}
		}
	}
	return nil
}

// outcomeNodes names a result's passed and failed nodes.
func outcomeNodes(r *runstate.Result) string {
	if r.Output == nil {
		return ""
	}
	var passed []string
	for n := range r.Output.Nodes {
		passed = append(passed, n)
	}
	passed = append(passed, r.Output.Passed...)
	sort.Strings(passed)
	return fmt.Sprintf("passed %v failed %v", passed, r.Output.Failed)
}
