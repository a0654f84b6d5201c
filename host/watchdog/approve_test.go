package watchdog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// TestApprovePausedRun: with no worker, approve records the decision at
// the revision it read under the run's lock; a second decision is
// refused naming the first.
func TestApprovePausedRun(t *testing.T) {
	ctx := context.Background()
	runDir := newRun(t, pausedForApproval()...)
	a, err := Approve(ctx, DirRef(runDir), "dag/a/1", false, time.Second)
	if err != nil || a.Request != "" || a.Decision != graph.DecisionAllow {
		t.Fatalf("approve: %+v %v", a, err)
	}
	if _, err := Approve(ctx, DirRef(runDir), "dag/a/1", true, time.Second); !errors.Is(err, ErrAlreadyDecided) || !strings.Contains(err.Error(), "allow by an operator command") {
		t.Fatalf("second decision: %v", err)
	}
	if _, err := Approve(ctx, DirRef(runDir), "dag/zz/1", true, time.Second); !errors.Is(err, runstate.ErrNotAwaitingApproval) {
		t.Fatalf("unknown position: %v", err)
	}
	want := []string{graph.EventNodeDispatched, graph.EventNodePaused, graph.EventRunWaiting, graph.EventApproval}
	if got := events(t, runDir); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestApproveQueued: while another process owns the run, approve queues
// its request; a worker loop that answers from its fold records it, and a
// racing request for the same position is refused. With nobody answering,
// approve gives up after its timeout and withdraws the request.
func TestApproveQueued(t *testing.T) {
	ctx := context.Background()
	runDir := newRun(t, pausedForApproval()...)
	// The "worker": owns the run and answers requests as the executor does.
	run, st := ownRun(t, runDir)

	if _, err := Approve(ctx, DirRef(runDir), "dag/a/1", false, 200*time.Millisecond); !errors.Is(err, ErrNotAnswered) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("approve with nobody answering: %v", err)
	}
	q := newRequestQueue(runDir)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			reqs, _ := q.Pending()
			for _, r := range reqs {
				if _, err := st.CheckApproval(r.Position); err != nil {
					q.Answer(r.ID, err)
					continue
				}
				err := appendFolded(ctx, run, st, store.NewEvent{Type: graph.EventApproval,
					Data: graph.ApprovalData{Position: r.Position, Decision: r.Decision, Request: r.ID}})
				q.Answer(r.ID, err)
			}
		}
	}()
	results := make([]error, 2)
	var cw sync.WaitGroup
	for i, deny := range []bool{false, true} {
		cw.Add(1)
		go func() {
			defer cw.Done()
			_, results[i] = Approve(ctx, DirRef(runDir), "dag/a/1", deny, 5*time.Second)
		}()
	}
	cw.Wait()
	close(stop)
	wg.Wait()
	ok, refused := 0, 0
	for _, err := range results {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrAlreadyDecided):
			refused++
		default:
			t.Errorf("approve: %v", err)
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("%d recorded, %d refused: %v", ok, refused, results)
	}
	if n := strings.Count(strings.Join(events(t, runDir), " "), graph.EventApproval); n != 1 {
		t.Fatalf("%d decisions recorded", n)
	}
	left, _ := os.ReadDir(filepath.Join(runDir, requestsDir))
	for _, e := range left {
		if !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left in the queue: %s", e.Name())
		}
	}
}

// TestApproveQueuedDecidedMeanwhile: a request queued while another
// process owns the run, whose position is then decided in the record by
// other means (a worker that recorded another operator's request and,
// with no position waiting any more, takes no further requests), is
// withdrawn and refused with the recorded decision — it is not left
// waiting for an answer that never comes.
func TestApproveQueuedDecidedMeanwhile(t *testing.T) {
	ctx := context.Background()
	runDir := newRun(t, pausedForApproval()...)
	run, st := ownRun(t, runDir)
	done := make(chan error, 1)
	go func() {
		_, err := Approve(ctx, DirRef(runDir), "dag/a/1", true, time.Minute)
		done <- err
	}()
	queued := func() bool {
		ents, _ := os.ReadDir(filepath.Join(runDir, requestsDir))
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
				return true
			}
		}
		return false
	}
	for !queued() {
		select {
		case err := <-done:
			t.Fatalf("approve returned before it queued its request: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := appendFolded(ctx, run, st, store.NewEvent{Type: graph.EventApproval,
		Data: graph.ApprovalData{Position: "dag/a/1", Decision: graph.DecisionAllow, Request: "req-other"}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrAlreadyDecided) || !strings.Contains(err.Error(), "allow") {
		t.Fatalf("approve after the position was decided: %v, want ALREADY_DECIDED naming allow", err)
	}
	if queued() {
		t.Fatal("the refused request was left in the queue")
	}
}

// TestApproveEndedRun: a run that ended (here STOPPED while a position
// waited for approval) takes no decision: approve is refused naming how
// the run ended, and nothing is appended after its result.
func TestApproveEndedRun(t *testing.T) {
	ctx := context.Background()
	evs := append(pausedForApproval(), graph.EventRunFinished, runstate.Message("r", runstate.KindFail, CodeStopped, "stopped by obversa stop"))
	runDir := newRun(t, evs...)
	_, err := Approve(ctx, DirRef(runDir), "dag/a/1", false, time.Second)
	if !errors.Is(err, runstate.ErrNotAwaitingApproval) || !strings.Contains(err.Error(), "the run already ended (fail STOPPED)") {
		t.Fatalf("approve of an ended run: %v", err)
	}
	want := []string{graph.EventNodeDispatched, graph.EventNodePaused, graph.EventRunWaiting, graph.EventRunFinished}
	if got := events(t, runDir); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
