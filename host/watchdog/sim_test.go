//go:build failpoints

package watchdog

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runstate/snapshottest"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
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

// errWatchdogDied is how a killed watchdog's Supervise or Resume ends.
var errWatchdogDied = errors.New("the watchdog was killed")

// simRun is one execution of a case: its record, effects, kill schedule.
type simRun struct {
	c      *simCase
	runDir string
	eff    *effects
	eng    plugin.Engine
	kills  []simKill // still to fire
	stats  *simStats
	mu     sync.Mutex
	acked  map[int64]string // rev → type, of every acknowledged worker append
	// atCompletion is each position's effect count when a worker's
	// node-completed for it was acknowledged.
	atCompletion map[string]int
	faults       []string // a worker that ended without being killed, and why
	workers      int
}

// execute carries one run of the case to its end, answering every pause
// as a person would, and checks the invariants of the record it leaves.
func (c *simCase) execute(dir string, kills []simKill, stats *simStats) (*runstate.Result, error) {
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o755); err != nil {
		return nil, err
	}
	s := &simRun{c: c, eff: newEffects(dir), stats: stats, acked: map[int64]string{}, atCompletion: map[string]int{}, kills: slices.Clone(kills)}
	eng, err := s.eff.engine(c)
	if err != nil {
		return nil, err
	}
	s.eng = eng
	st, err := store.Open(dir, "default")
	if err != nil {
		return nil, err
	}
	run, err := st.CreateRun(ctx, "r", store.Policy{})
	if err != nil {
		return nil, err
	}
	s.runDir = st.RunDir("r")
	owner, err := run.Lock(ctx)
	if err != nil {
		return nil, err
	}
	rs, err := plan.NewRunStarted("run.hcl", c.def, c.plan(dir, "r"), time.Now())
	if err != nil {
		return nil, err
	}
	if _, err := run.Append(ctx, 0, store.NewEvent{Type: graph.EventRunStarted, Data: rs}); err != nil {
		return nil, err
	}
	res, err := s.watchdog(func(ctx context.Context) (*runstate.Result, error) {
		// The watchdog's own appends are logged as the workers' are.
		return Supervise(ctx, DirRef(run.Dir()), &mortalRecord{Record: run, dead: &atomic.Bool{}, s: s}, s.supervise(owner))
	})
	run.Close()
	for step := 0; ; step++ {
		if step > 60 {
			return nil, fmt.Errorf("no end after %d resumes (last %+v, %v)", step, res, err)
		}
		var paused []graph.PauseRequest
		switch {
		case errors.Is(err, errWatchdogDied):
			res, err = s.resume(ResumeOptions{})
			continue
		case errors.Is(err, ErrResumePosition):
			// A takeover of a run whose positions wait for a person: the
			// person answers them first.
			if paused, err = s.pausedNow(ctx); err != nil {
				return nil, err
			}
		case err != nil:
			return nil, err
		case res.Terminal():
			return res, s.check(ctx, st, res)
		case res.Output != nil:
			paused = res.Output.Paused
		}
		o, err2 := s.answer(ctx, paused)
		if err2 != nil {
			return nil, fmt.Errorf("answering %+v: %w", res, err2)
		}
		res, err = s.resume(o)
	}
}

// supervise returns the options of a simulated watchdog.
func (s *simRun) supervise(owner store.Ownership) SuperviseOptions {
	return SuperviseOptions{Exe: "/nonexistent/obversa", Owner: owner, inProcess: s.worker}
}

// resume carries the run on with a fresh (simulated) watchdog.
func (s *simRun) resume(o ResumeOptions) (*runstate.Result, error) {
	o.Supervise = s.supervise(nil)
	return s.watchdog(func(ctx context.Context) (*runstate.Result, error) {
		res, _, err := Resume(ctx, DirRef(s.runDir), o)
		return res, err
	})
}

// answer is what a person does about a pause: decide the first position
// that waits for approval as the case says, or say whether a cut-off
// attempt took effect (the side-effect log knows), and resume it.
func (s *simRun) answer(ctx context.Context, paused []graph.PauseRequest) (ResumeOptions, error) {
	if len(paused) == 0 {
		return ResumeOptions{}, errors.New("a pause with nothing to answer")
	}
	if s.stats != nil {
		s.stats.pauses.Add(1)
	}
	p := paused[0]
	switch p.Kind {
	case graph.PauseApproval:
		node := simNodeOf(p.Position)
		// Already decided means a watchdog died before it acted on the
		// decision: the decision stands, the resume is what is left to do.
		_, err := Approve(ctx, DirRef(s.runDir), p.Position, s.c.decision[node] == graph.DecisionDeny, 5*time.Second)
		if err != nil && !errors.Is(err, ErrAlreadyDecided) {
			return ResumeOptions{}, err
		}
		return ResumeOptions{Position: p.Position}, nil
	case graph.PauseReconcile:
		if s.stats != nil {
			s.stats.reconciles.Add(1)
		}
		if s.eff.count()[p.Position] > 0 {
			return ResumeOptions{Position: p.Position, Reconciled: "done", Result: s.eff.result(s.c, p.Position)}, nil
		}
		return ResumeOptions{Position: p.Position, Reconciled: "not-done"}, nil
	}
	return ResumeOptions{}, fmt.Errorf("unknown pause kind %q", p.Kind)
}

// pausedNow returns what the record's paused positions wait for.
func (s *simRun) pausedNow(ctx context.Context) ([]graph.PauseRequest, error) {
	run, err := store.OpenRunDirReadOnly(ctx, s.runDir)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	st, err := runstate.Load(ctx, run)
	if err != nil {
		return nil, err
	}
	var out []graph.PauseRequest
	for _, n := range st.Graph().Nodes() {
		if n.Status == graph.StatusPaused && n.Pause != nil {
			out = append(out, *n.Pause)
		}
	}
	return out, nil
}

// check holds the record a finished run left to the invariants: it
// verifies; every acknowledged append is in it; no node that is not
// retry_safe took effect twice at one position; no worker failed but by a
// kill; no process carries the run's owner marker.
func (s *simRun) check(ctx context.Context, st *store.Store, res *runstate.Result) error {
	var problems []string
	rep, err := st.Verify(ctx, "r")
	if err != nil || len(rep.Faults) > 0 {
		problems = append(problems, fmt.Sprintf("verify: %v %v", err, rep.Faults))
	}
	run, err := store.OpenRunDirReadOnly(ctx, s.runDir)
	if err != nil {
		return err
	}
	defer run.Close()
	types := map[int64]string{}
	steps := &simSteps{once: map[string]int{}, completed: map[string]string{}}
	if err := run.Read(ctx, 1, func(e store.Event) error {
		types[e.Rev] = e.Type
		steps.add(e)
		return nil
	}); err != nil {
		return err
	}
	problems = append(problems, steps.problems...)
	// The fold snapshot's property on a record real workers wrote, kills
	// and resumes included: restored at any revision, the fold is the
	// full fold. Each cut costs a fold of the rest of the record, so the
	// runs without kills are cut at 16 revisions and compared field by
	// field at the last, the others cut at 4 and compared byte for byte.
	cuts, deep := 4, -1
	if s.stats == nil {
		cuts, deep = 16, 0
	}
	if err := snapshottest.Check(ctx, run, filepath.Dir(s.runDir), cuts, deep); err != nil {
		problems = append(problems, "fold snapshot: "+err.Error())
	}
	if s.stats != nil {
		s.stats.rounds.Add(int64(steps.rounds))
		s.stats.reviews.Add(int64(steps.reviews))
		s.stats.instances.Add(int64(steps.instances))
	}
	for rev, typ := range s.acked {
		if types[rev] != typ {
			problems = append(problems, fmt.Sprintf("acknowledged rev %d (%s) is %q in the record", rev, typ, types[rev]))
		}
	}
	retrySafe := map[string]bool{}
	for _, n := range s.c.def.Nodes {
		retrySafe[n.ID] = n.RetrySafe
		if n.Loop != nil {
			for _, m := range n.Loop.Members {
				retrySafe[m.ID] = m.RetrySafe
			}
		}
	}
	counts := s.eff.count()
	for pos, n := range counts {
		if n > 1 && !retrySafe[simNodeOf(pos)] {
			problems = append(problems, fmt.Sprintf("%s took effect %d times and is not retry_safe", pos, n))
		}
	}
	for pos, n := range s.atCompletion {
		if counts[pos] != n {
			problems = append(problems, fmt.Sprintf("%s took effect %d times after its result was recorded", pos, counts[pos]-n))
		}
	}
	problems = append(problems, s.faults...)
	if s.c.budgeted() {
		problems = append(problems, s.checkBudget(ctx, run, res)...)
	}
	if s.stats != nil { // the run without kills (the oracle) is only compared
		if ps, err := proc.Marked(launch.OwnerEnv+"="+OwnerMarker(s.runDir), map[int]bool{os.Getpid(): true}); err != nil || len(ps) > 0 {
			problems = append(problems, fmt.Sprintf("processes carry the owner marker: %v %v", ps, err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("result %s %s:\n    %s", res.Kind, res.Code, strings.Join(problems, "\n    "))
	}
	return nil
}

// simSteps reads a finished record for the steps that must happen at most
// once — a loop's start, each round, each round's review, its end; a
// for_each node's expansion — and for units run again after they
// completed: no position of a unit (a node, an instance, a member in a
// round) is dispatched after one of its positions completed.
type simSteps struct {
	once                       map[string]int
	completed                  map[string]string // unit → the position that completed
	problems                   []string
	rounds, reviews, instances int
}

func (st *simSteps) add(e store.Event) {
	v, ok, err := graph.Decode(e.Type, e.Data)
	if err != nil || !ok {
		return
	}
	key := ""
	switch d := v.(type) {
	case graph.LoopStartedData:
		key = "start of loop " + d.Loop
	case graph.RoundStartedData:
		key = fmt.Sprintf("round %d of loop %s", d.Round, d.Loop)
		st.rounds++
	case graph.ReviewedData:
		key = fmt.Sprintf("review of round %d of loop %s", d.Round, d.Loop)
		st.reviews++
	case graph.ConditionData:
		key = fmt.Sprintf("condition of round %d of loop %s", d.Round, d.Loop)
	case graph.LoopFinishedData:
		key = "end of loop " + d.Loop
	case graph.ExpandedData:
		key = "expansion of " + d.Node
		st.instances += len(d.Keys)
	case graph.CompletedData:
		st.completed[simUnitOf(d.Position)] = d.Position
	case graph.DispatchedData:
		for _, x := range d.Dispatches {
			if done, ok := st.completed[simUnitOf(x.Position)]; ok {
				st.problems = append(st.problems, fmt.Sprintf("rev %d dispatched %s after %s completed", e.Rev, x.Position, done))
			}
		}
	}
	if key != "" {
		if st.once[key]++; st.once[key] == 2 {
			st.problems = append(st.problems, fmt.Sprintf("rev %d records the %s again", e.Rev, key))
		}
	}
}
