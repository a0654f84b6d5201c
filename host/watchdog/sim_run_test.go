//go:build failpoints

package watchdog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// next returns the next kill if it is for who.
func (s *simRun) next(who ...string) *simKill {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.kills) == 0 || !slices.Contains(who, s.kills[0].who) {
		return nil
	}
	k := s.kills[0]
	return &k
}

// fired drops the kill that fired and counts it.
func (s *simRun) fired(k *simKill) {
	s.mu.Lock()
	s.kills = s.kills[1:]
	s.mu.Unlock()
	if s.stats == nil {
		return
	}
	s.stats.kills.Add(1)
	switch k.who {
	case killWorker:
		s.stats.workerKills.Add(1)
	case killWatchdog:
		s.stats.watchdogKills.Add(1)
	default:
		s.stats.bothKills.Add(1)
	}
}

// watchdog runs fn (Supervise or Resume) as a watchdog process that its
// kill stops at a failpoint: the goroutine ends there, with what the
// kernel would do (its run lock released by the deferred Release), and
// nothing after it is written.
func (s *simRun) watchdog(fn func(ctx context.Context) (*runstate.Result, error)) (*runstate.Result, error) {
	k := s.next(killWatchdog)
	var hits atomic.Int64
	died := false
	h := func(point, key string) {
		if k != nil && hits.Add(1) == int64(k.hit) {
			died = true
			s.fired(k)
			runtime.Goexit()
		}
	}
	ctx := failpoint.WithHandler(context.Background(), h)
	var res *runstate.Result
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = fn(ctx)
	}()
	<-done
	if died {
		return nil, errWatchdogDied
	}
	return res, err
}

// worker is the in-process worker: what `obversa worker` does once it
// owns the run, with the case's plugins served in this process. Its kill
// stops it at a failpoint: its storage handle refuses every write from
// then on, its context ends, its plugins do nothing more.
func (s *simRun) worker(ctx context.Context, run store.Record, restart int) (*exit, error) {
	s.mu.Lock()
	s.workers++
	s.mu.Unlock()
	k := s.next(killWorker, killBoth)
	dead := &atomic.Bool{}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var hits atomic.Int64
	h := func(point, key string) {
		if k != nil && hits.Add(1) == int64(k.hit) && !dead.Swap(true) {
			s.fired(k)
			cancel()
			runtime.Goexit()
		}
	}
	wctx = failpoint.WithHandler(wctx, h)
	rec := &mortalRecord{Record: run, dead: dead, s: s}
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		state, err := runstate.Load(wctx, rec)
		if err != nil {
			werr = err
			return
		}
		if state.Finished() != nil {
			return
		}
		if werr = recordWorkerStarted(wctx, rec, state, restart); werr != nil {
			return
		}
		x, err := executor.New(executor.Options{Run: rec, State: state, Requests: newRequestQueue(s.runDir)})
		if err != nil {
			werr = err
			return
		}
		x.SetPlugins(map[string]plugin.Engine{"mock": s.eng}, map[string]plugin.NodeBinding{"sim": &simBinding{c: s.c, e: s.eff, dead: dead}})
		x.SetPolicies(map[string]plugin.Policy{simPolicyName: &simPolicy{c: s.c, dead: dead}})
		_, werr = x.Execute(wctx)
	}()
	<-done
	ex := &exit{pid: os.Getpid()}
	switch {
	case dead.Load() && k.who == killBoth:
		return nil, errWatchdogDied
	case dead.Load():
		ex.code, ex.signal = -1, "killed"
	case werr != nil:
		// Only a kill may stop a worker here: anything else (a conflict, a
		// record that does not replay) is a fault of the product.
		s.mu.Lock()
		s.faults = append(s.faults, fmt.Sprintf("worker %d: %v", restart, werr))
		s.mu.Unlock()
		ex.code = 1
	}
	return ex, nil
}

// mortalRecord is a worker's handle on the run: once the worker is dead
// it writes nothing more (its process is gone). It logs every append the
// store acknowledged.
type mortalRecord struct {
	store.Record
	dead *atomic.Bool
	s    *simRun
}

var errDead = errors.New("the process is dead")

func (m *mortalRecord) Append(ctx context.Context, expectedRev int64, events ...store.NewEvent) (int64, error) {
	if m.dead.Load() {
		return 0, errDead
	}
	rev, err := m.Record.Append(ctx, expectedRev, events...)
	if err == nil {
		counts := m.s.eff.count()
		m.s.mu.Lock()
		for i, e := range events {
			m.s.acked[rev-int64(len(events)-1-i)] = e.Type
			var d graph.CompletedData
			if raw, ok := e.Data.(json.RawMessage); ok && e.Type == graph.EventNodeCompleted && json.Unmarshal(raw, &d) == nil {
				m.s.atCompletion[d.Position] = counts[d.Position]
			}
		}
		m.s.mu.Unlock()
	}
	return rev, err
}

func (m *mortalRecord) PutArtifact(ctx context.Context, data []byte, mediaType, purpose string) (store.ArtifactRef, error) {
	if m.dead.Load() {
		return store.ArtifactRef{}, errDead
	}
	return m.Record.PutArtifact(ctx, data, mediaType, purpose)
}
