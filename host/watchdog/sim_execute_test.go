//go:build failpoints

package watchdog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

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
