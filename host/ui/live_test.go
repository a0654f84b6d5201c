package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/stream"
)

// jsApplier runs the page's change decoder (assets/change.js) in node,
// one process for a test (testdata/applychange.js).
type jsApplier struct {
	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Scanner
}

// newJSApplier starts node; it skips the test where node is missing,
// except in CI, which installs it.
func newJSApplier(tb testing.TB) *jsApplier {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("no node on PATH; CI installs node (.ci/run)")
		}
		tb.Skip("no node on PATH: the page's change decoder is checked in node")
	}
	cmd := exec.Command(node, "testdata/applychange.js", "assets")
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return &jsApplier{in: in, out: sc}
}

// apply returns the view the page's applyChange makes of view and change
// (JSON), "null" when it refuses it; an error for an exception.
func (a *jsApplier) apply(view, change []byte) ([]byte, error) {
	return a.call(map[string]json.RawMessage{"view": view, "change": change})
}

// timeline returns the entries the page's timelineEntries makes of a
// "timeline" message (JSON), "null" when it refuses it; an error for an
// exception.
func (a *jsApplier) timeline(msg []byte) ([]byte, error) {
	return a.call(map[string]json.RawMessage{"timeline": msg})
}

// call sends one request to node and returns its answer.
func (a *jsApplier) call(req map[string]json.RawMessage) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := a.in.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	if !a.out.Scan() {
		return nil, fmt.Errorf("node ended: %v", a.out.Err())
	}
	var r struct {
		View  json.RawMessage `json:"view"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal(a.out.Bytes(), &r); err != nil {
		return nil, err
	}
	if r.Error != "" {
		return nil, fmt.Errorf("the decoder threw: %s", r.Error)
	}
	return r.View, nil
}

// sameJSON fails the test unless a and b hold the same JSON value.
func sameJSON(tb testing.TB, what string, got, want []byte) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("%s: %v: %.300s", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		tb.Fatalf("%s: %v: %.300s", what, err, want)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Fatalf("%s: the page's view differs from the snapshot\n got: %.2000s\nwant: %.2000s", what, got, want)
	}
}

// TestLiveChangesRebuildTheView: a page that holds the first snapshot of
// a run and applies every change it is sent, through the page's own
// decoder, holds what a page opened at the end is sent whole; the
// changes are smaller than the view.
func TestLiveChangesRebuildTheView(t *testing.T) {
	t.Parallel()
	js := newJSApplier(t)
	storage := t.TempDir()
	r := newTestRun(t, storage, "r1")
	_, hs := newTestServer(t, storage, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := openSSE(t, ctx, hs.URL+"/api/live/runs/r1")
	deadline := time.AfterFunc(30*time.Second, func() { p.body.Close() })
	defer deadline.Stop()
	name, view := p.next(t)
	if name != "run" {
		t.Fatalf("first event %s", name)
	}
	changes := 0
	// follow applies changes until ok says the view is what the test
	// waits for.
	follow := func(ok func(view []byte) bool) {
		for !ok(view) {
			n, d := p.next(t)
			switch n {
			case "run":
				t.Fatalf("a snapshot in the middle of the stream: %.300s", d)
			case "change":
				next, err := js.apply(view, d)
				if err != nil || string(next) == "null" {
					t.Fatalf("the page cannot apply change %.300s: %v", d, err)
				}
				if len(d) >= len(view) {
					t.Errorf("a change of %d bytes for a view of %d", len(d), len(view))
				}
				view, changes = next, changes+1
			}
		}
	}
	status := func(node, want string) func([]byte) bool {
		return func(v []byte) bool { return nodeStatus(t, v, node) == want }
	}
	r.append(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "c", Position: "dag/c/1"}}})
	follow(status("a", "dispatched"))
	r.append(graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"})
	follow(status("a", "started"))
	r.append(graph.EventNodePaused, graph.PausedData{Node: "c", Position: "dag/c/1", Request: graph.PauseRequest{Kind: graph.PauseApproval, Position: "dag/c/1", Policy: graph.PolicyApproval}})
	follow(status("c", "paused"))
	r.append(graph.EventNodeCompleted, graph.CompletedData{Node: "a", Position: "dag/a/1", Result: []byte(`"done"`)})
	follow(status("a", "passed"))
	// A page opened now is sent the view whole: the same, at the same
	// version, as the first page holds once it is there.
	mid := openSSE(t, ctx, hs.URL+"/api/live/runs/r1")
	_, snap := mid.next(t)
	mid.body.Close()
	follow(func(v []byte) bool { return version(t, v) >= version(t, snap) })
	sameJSON(t, "a page opened while the run runs", view, snap)
	r.append(graph.EventRunFinished, runstate.Message("r1", runstate.KindFail, runstate.CodeStopped, "stopped"))
	r.append(runstate.EventCleanup, runstate.NewCleanup(nil, nil))
	r.release()
	goneHolder(t, filepath.Join(storage, "default", "runs", "r1"))
	follow(func(v []byte) bool { return phaseOf(t, "run", v) == string(runstate.PhaseStopped) })
	// The follower goes on to "end"; its last view is what a new page
	// is sent.
	for n := ""; n != "end"; {
		var d []byte
		n, d = p.next(t)
		if n == "change" {
			next, err := js.apply(view, d)
			if err != nil || string(next) == "null" {
				t.Fatalf("the page cannot apply change %.300s: %v", d, err)
			}
			view, changes = next, changes+1
		}
	}
	// A page opened after the end has a follower of its own, which folds
	// the record afresh: its epoch and version are its own.
	late := openSSE(t, ctx, hs.URL+"/api/live/runs/r1")
	defer late.body.Close()
	if n, want := late.next(t); n != "run" {
		t.Fatalf("a late page's first event is %s", n)
	} else {
		sameJSON(t, "a page opened after the run ended", unversioned(t, view), unversioned(t, want))
	}
	if changes < 5 {
		t.Errorf("%d changes, want one at least for each step", changes)
	}
}

// version is a view's version.
func version(t *testing.T, view []byte) int64 {
	t.Helper()
	var v struct{ V int64 }
	if err := json.Unmarshal(view, &v); err != nil {
		t.Fatal(err)
	}
	return v.V
}

// unversioned is a view without its epoch and version.
func unversioned(t *testing.T, view []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(view, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "epoch")
	delete(m, "v")
	b, _ := json.Marshal(m)
	return b
}

// TestLaggingPageIsResynced: a page whose queue is full is sent nothing
// more, then a snapshot with everything kept instead of what it missed,
// and changes after that.
func TestLaggingPageIsResynced(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	newTestRun(t, storage, "r1")
	s, _ := newTestServer(t, storage, Options{})
	f, sub, initial, err := s.subscribe(context.Background(), "r1", s.st.st.RunDir("r1"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.unsubscribe(f, sub)
	if initial[0].event != "run" {
		t.Fatalf("initial messages start with %s", initial[0].event)
	}
	f.mu.Lock()
	for i := range subBuffer + 10 {
		f.publish([]message{{"output", []byte(fmt.Sprintf("[%d]", i))}})
	}
	queued, lagging := len(sub.ch), sub.lagging
	f.mu.Unlock()
	if queued != subBuffer || !lagging {
		t.Fatalf("a full page: %d queued, lagging %v; want %d and true", queued, lagging, subBuffer)
	}
	select {
	case <-sub.behind:
	default:
		t.Fatal("the page's stream was not woken")
	}
	again := sub.resync()
	var names []string
	for _, m := range again {
		names = append(names, m.event)
	}
	if strings.Join(names, ",") != "run,timeline,output" || len(sub.ch) != 0 || sub.lagging {
		t.Fatalf("resync sent %v, left %d queued, lagging %v", names, len(sub.ch), sub.lagging)
	}
	f.mu.Lock()
	f.publish([]message{{"output", []byte("[]")}})
	f.mu.Unlock()
	if len(sub.ch) != 1 {
		t.Fatalf("after the resync the page is sent %d messages, want 1", len(sub.ch))
	}
}

// TestNewPageGetsPendingLinesOnce: a page that opens between a tick and
// the next gets what was read meanwhile once, from the next tick, not
// also in the messages it starts with.
func TestNewPageGetsPendingLinesOnce(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	newTestRun(t, storage, "r1")
	s, _ := newTestServer(t, storage, Options{})
	f, first, _, err := s.subscribe(context.Background(), "r1", s.st.st.RunDir("r1"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.unsubscribe(f, first)
	// A line read, and a page subscribing (as subscribe does), before
	// the next tick.
	f.mu.Lock()
	if err := f.streamLine(stream.Line{Node: "a", Position: "dag/a/1", Kind: stream.KindText, Text: "pending-line\n"}); err != nil {
		t.Fatal(err)
	}
	sub := newSubscriber()
	f.subs[sub] = struct{}{}
	initial := f.initial()
	f.mu.Unlock()
	defer s.unsubscribe(f, sub)
	lines := 0
	count := func(m message) {
		if m.event == "output" {
			lines += strings.Count(string(m.data), "pending-line")
		}
	}
	for _, m := range initial {
		count(m)
	}
	deadline := time.After(10 * time.Second)
	for lines == 0 {
		select {
		case m := <-sub.ch:
			count(m)
		case <-deadline:
			t.Fatal("the page was not sent the line")
		}
	}
	time.Sleep(2 * tick) // nothing more comes
	for len(sub.ch) > 0 {
		count(<-sub.ch)
	}
	if lines != 1 {
		t.Errorf("the page got the output line %d times, want once", lines)
	}
}
