//go:build failpoints

package watchdog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runstate/snapshottest"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/store"
)

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
