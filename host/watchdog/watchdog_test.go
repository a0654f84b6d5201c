package watchdog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

func TestLimitWriter(t *testing.T) {
	var buf bytes.Buffer
	w := &limitWriter{w: &buf, limit: 10, over: make(chan struct{})}
	for _, s := range []string{"12345", "6789", "abc", "def"} {
		if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	select {
	case <-w.over:
	default:
		t.Fatal("over not closed past the limit")
	}
	if buf.String() != "123456789" {
		t.Errorf("passed through %q, want what fit the limit", buf.String())
	}
}

// TestRequestQueue: requests are claimed oldest first, once; an answer
// is read once; a request is either withdrawn or claimed, never both; a
// claimed request a worker did not answer is offered to the next.
func TestRequestQueue(t *testing.T) {
	q := newRequestQueue(t.TempDir())
	first, err := q.put("dag/a/1", graph.DecisionAllow)
	if err != nil {
		t.Fatal(err)
	}
	second, err := q.put("dag/b/1", graph.DecisionDeny)
	if err != nil {
		t.Fatal(err)
	}
	third, err := q.put("dag/c/1", graph.DecisionAllow)
	if err != nil {
		t.Fatal(err)
	}
	if !q.withdraw(third) || q.withdraw(third) {
		t.Fatal("an unclaimed request is withdrawn exactly once")
	}
	reqs, err := q.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[0].ID != first || reqs[1].ID != second || reqs[1].Decision != graph.DecisionDeny {
		t.Fatalf("pending %+v", reqs)
	}
	if q.withdraw(first) {
		t.Fatal("a claimed request was withdrawn")
	}
	q.Answer(first, nil)
	q.Answer(second, runstate.ErrAlreadyDecided)
	if a, ok := q.answer(first); !ok || a.err() != nil {
		t.Fatalf("answer of %s: %+v %v", first, a, ok)
	}
	if _, ok := q.answer(first); ok {
		t.Fatal("an answer was read twice")
	}
	if a, ok := q.answer(second); !ok || !errors.Is(a.err(), runstate.ErrAlreadyDecided) {
		t.Fatalf("refusal of %s: %+v", second, a)
	}
	// A claim whose worker died before answering is offered again.
	fourth, _ := q.put("dag/d/1", graph.DecisionAllow)
	if reqs, _ := q.Pending(); len(reqs) != 1 || reqs[0].ID != fourth {
		t.Fatalf("pending %+v", reqs)
	}
	if reqs, _ := q.Pending(); len(reqs) != 1 || reqs[0].ID != fourth {
		t.Fatalf("an unanswered claim is not offered again: %+v", reqs)
	}
	q.drop(fourth)
	if reqs, _ := q.Pending(); len(reqs) != 0 {
		t.Fatalf("pending after drop %+v", reqs)
	}
}

// TestAppendFoldedConflict: an append at a revision the record has moved
// past is refused and writes nothing.
func TestAppendFoldedConflict(t *testing.T) {
	ctx := context.Background()
	runDir := newRun(t)
	run, st, err := openRun(ctx, DirRef(runDir))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	other, err := store.OpenRunDir(ctx, runDir, store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	owner, err := other.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Append(ctx, other.Rev(), store.NewEvent{Type: runstate.EventTakeover, Data: runstate.TakeoverData{PID: 1}}); err != nil {
		t.Fatal(err)
	}
	owner.Release()
	own, err := run.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Release()
	err = appendFolded(ctx, run, st, store.NewEvent{Type: graph.EventRunFinished, Data: runstate.Message("r", runstate.KindFail, CodeStopped, "x")})
	if !errors.Is(err, store.ErrRevisionConflict) {
		t.Fatalf("append from a stale fold: %v, want REVISION_CONFLICT", err)
	}
	if got := events(t, runDir); !slices.Equal(got, []string{runstate.EventTakeover}) {
		t.Fatalf("events %v", got)
	}
}

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
	run, st, err := openRun(ctx, DirRef(runDir))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Release()

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
	run, st, err := openRun(ctx, DirRef(runDir))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Release()
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

// TestStopIdle: a paused run with no watchdog is ended STOPPED at the
// revision read under its lock; an ended run is left alone.
func TestStopIdle(t *testing.T) {
	ctx := context.Background()
	runDir := newRun(t, pausedForApproval()...)
	res, err := StopIdle(ctx, DirRef(runDir))
	if err != nil || res.Code != CodeStopped || res.Kind != runstate.KindFail {
		t.Fatalf("StopIdle: %+v %v", res, err)
	}
	if res, err := StopIdle(ctx, DirRef(runDir)); !errors.Is(err, ErrAlreadyEnded) || res.Code != CodeStopped {
		t.Fatalf("second StopIdle: %+v %v", res, err)
	}
	r, err := Status(ctx, DirRef(runDir))
	if err != nil || r.Phase != PhaseStopped {
		t.Fatalf("status %+v %v", r, err)
	}
}

// TestStatusView: a record whose worker is gone while its lock holder
// (this test, standing for the watchdog) lives reads recovering, with the
// worker's pid and the preflight phase; a record that paused lists what it
// waits for.
func TestStatusView(t *testing.T) {
	ctx := context.Background()
	runDir := newRun(t, runstate.EventWorkerStarted, runstate.WorkerStartedData{PID: 999999, StartTime: 1, Restart: 1},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}})
	r, err := Status(ctx, DirRef(runDir))
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != PhaseRecovering || r.Worker == nil || r.Worker.PID != 999999 || r.Worker.Alive || r.RestartCount != 1 ||
		r.Events != 3 || r.Preflight == nil || r.Preflight.Phase != runstate.PreflightDisabled || r.Result != nil {
		t.Fatalf("report %+v", r)
	}
	paused := newRun(t, pausedForApproval()...)
	r, err = Status(ctx, DirRef(paused))
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != PhasePaused || len(r.PauseReasons) != 1 || r.PauseReasons[0].Position != "dag/a/1" || len(r.Active) != 0 {
		t.Fatalf("paused report %+v", r)
	}
	// Carried on without an answer for a/1 (a resume of another
	// position), then its worker died: nothing recorded since says the
	// run waits, but a/1 still does, and a bare resume is refused until
	// it is answered.
	carried := newRun(t, append(pausedForApproval(),
		graph.EventRunResumed, runstate.RunResumedData{},
		runstate.EventWorkerStarted, runstate.WorkerStartedData{PID: 999999, StartTime: 1})...)
	r, err = Status(ctx, DirRef(carried))
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != PhaseRecovering || r.Result != nil || len(r.PauseReasons) != 1 || r.PauseReasons[0].Position != "dag/a/1" ||
		r.PauseReasons[0].Kind != graph.PauseApproval {
		t.Fatalf("report of a carried-on run with a/1 still paused: phase %s, result %+v, pause reasons %+v", r.Phase, r.Result, r.PauseReasons)
	}
	if hint := AnswerHints(r.PauseReasons, "R"); hint != "decide dag/a/1 with `obversa approve R dag/a/1`" {
		t.Errorf("AnswerHints = %q", hint)
	}
	// The same, then paused by an operator: the pause recorded names no
	// position, but a/1 still waits.
	operator := newRun(t, append(pausedForApproval(),
		graph.EventRunResumed, runstate.RunResumedData{},
		graph.EventRunWaiting, json.RawMessage(`{"run_id":"r","kind":"paused","code":"OPERATOR_PAUSE","output":{"message":"paused by an operator"}}`))...)
	r, err = Status(ctx, DirRef(operator))
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != PhasePaused || len(r.PauseReasons) != 2 || r.PauseReasons[0].Kind != "OPERATOR_PAUSE" || r.PauseReasons[1].Position != "dag/a/1" {
		t.Fatalf("report of a run paused by an operator with a/1 still paused: phase %s, pause reasons %+v", r.Phase, r.PauseReasons)
	}
}

// TestOperatorEventsRefuse: resume --position refuses a run with no
// paused position (RUN_NOT_PAUSED) and a position that is not the open
// one (RESUME_POSITION), naming what is open; the open one is offered
// again.
func TestOperatorEventsRefuse(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		events   []any
		position string
		want     error
	}{
		{"nothing paused", nil, "dag/a/1", ErrRunNotPaused},
		{"another position", pausedForApproval(), "dag/a/2", ErrResumePosition},
		{"the paused position", pausedForApproval(), "dag/a/1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, st, err := openRun(ctx, DirRef(newRun(t, tt.events...)))
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			ev, err := operatorEvents(st, ResumeOptions{Position: tt.position})
			switch {
			case tt.want != nil && (!errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.position)):
				t.Errorf("operatorEvents = %v, %v; want %v naming %s", ev, err, tt.want, tt.position)
			case tt.want == nil && (err != nil || len(ev) != 1 || ev[0].Type != graph.EventNodeResumed):
				t.Errorf("operatorEvents = %v, %v; want node-resumed", ev, err)
			}
		})
	}
}

// TestWatchdogMessages: a message the watchdog records has the run's
// known secrets redacted and is cut to maxMessageBytes on a rune
// boundary, so no cause it quotes can make its event refused.
func TestWatchdogMessages(t *testing.T) {
	t.Setenv("OBVERSA_WATCHDOG_TEST_SECRET", "hunter2hunter2")
	s := &supervisor{plan: &plan.Plan{Storage: plan.Storage{KnownSecretsFromEnv: []string{"OBVERSA_WATCHDOG_TEST_SECRET"}}}}
	if got := s.message("the plugin said hunter2hunter2"); strings.Contains(got, "hunter2") || !strings.Contains(got, "[REDACTED]") {
		t.Errorf("message kept the secret: %q", got)
	}
	long := strings.Repeat("é", maxMessageBytes)
	got := s.message(long)
	if len(got) > maxMessageBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "(cut)") {
		t.Errorf("a message of %d bytes became %d bytes (valid UTF-8 %v): …%q", len(long), len(got), utf8.ValidString(got), got[max(0, len(got)-20):])
	}
	if got := s.message("short"); got != "short" {
		t.Errorf("message(short) = %q", got)
	}
}
