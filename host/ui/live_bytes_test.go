package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// chainRecord records a run of a chain of n engine nodes, each
// dispatched, started and passed in turn, and returns its events.
func chainRecord(tb testing.TB, n int) (string, []store.Event) {
	tb.Helper()
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 1, RetryCapPerNode: 1, KeyedConcurrency: []graph.KeyLimit{}}
	for i := range n {
		d := graph.NodeDef{ID: fmt.Sprintf("step%03d", i), Kind: graph.KindRequired, Lane: "w", Prompt: "p", DependsOn: []string{}}
		if i > 0 {
			d.DependsOn = []string{def.Nodes[i-1].ID}
		}
		def.Nodes = append(def.Nodes, d)
	}
	storage := tb.TempDir()
	r := newTestRunOf(tb, storage, "chain", def)
	for _, d := range def.Nodes {
		pos := "dag/" + d.ID + "/1"
		r.append(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: d.ID, Position: pos}}})
		r.append(graph.EventAttemptStarted, graph.AttemptStartedData{Node: d.ID, Position: pos, AttemptID: "x" + d.ID})
		r.append(graph.EventNodeCompleted, graph.CompletedData{Node: d.ID, Position: pos, Result: []byte(`"a short answer from ` + d.ID + `"`)})
	}
	dir := filepath.Join(storage, "default", "runs", "chain")
	rec, err := store.OpenRunDirReadOnly(context.Background(), dir)
	if err != nil {
		tb.Fatal(err)
	}
	defer rec.Close()
	var events []store.Event
	if err := rec.Read(context.Background(), 1, func(e store.Event) error { events = append(events, e); return nil }); err != nil {
		tb.Fatal(err)
	}
	return dir, events
}

// liveBytes folds events as a run's follower does and, every perUpdate
// events, makes the update a live page is sent: it returns the mean
// size of the whole view (what every update was before changes) and of
// the change, in bytes.
func liveBytes(tb testing.TB, dir string, events []store.Event, perUpdate int) (whole, change float64, updates int) {
	tb.Helper()
	st := runstate.New()
	if err := st.Apply(events[0]); err != nil {
		tb.Fatal(err)
	}
	red := redactorOf(st)
	now := func(e store.Event) time.Time { return e.TS.Add(time.Millisecond) }
	l := newLiveView(buildView(st, dir, now(events[0]), true, false), red)
	var wholeSum, changeSum int
	for i, e := range events[1:] {
		if err := st.Apply(e); err != nil {
			tb.Fatal(err)
		}
		if (i+1)%perUpdate != 0 && i != len(events)-2 {
			continue
		}
		v := buildView(st, dir, now(e), true, false)
		wholeSum += len(red.Redact(marshal(v)))
		changeSum += len(l.update(v))
		updates++
	}
	return float64(wholeSum) / float64(updates), float64(changeSum) / float64(updates), updates
}

// TestLiveChangeBytes prints what a live page of a 200-node chain is sent
// per update, the whole view against the change, with an update after
// each node (three events) and after six (as a real chain's follower
// sends, four times a second); the change is a small part of the view.
func TestLiveChangeBytes(t *testing.T) {
	t.Parallel()
	dir, events := chainRecord(t, 200)
	for _, per := range []int{3, 18} {
		whole, change, n := liveBytes(t, dir, events, per)
		t.Logf("200-node chain, an update every %d events: %d updates, whole view %.0f bytes/update, change %.0f bytes/update (%.1f%%)",
			per, n, whole, change, 100*change/whole)
		if change > whole/10 {
			t.Errorf("a change of %.0f bytes per update for a view of %.0f", change, whole)
		}
	}
}

// BenchmarkLiveUpdateBytes reports the bytes per update a live page of a
// 200-node chain is sent (one update per node: three events), as the
// whole view (whole-B/update) and as the change (change-B/update).
func BenchmarkLiveUpdateBytes(b *testing.B) {
	dir, events := chainRecord(b, 200)
	b.ResetTimer()
	var whole, change float64
	for range b.N {
		whole, change, _ = liveBytes(b, dir, events, 3)
	}
	b.ReportMetric(whole, "whole-B/update")
	b.ReportMetric(change, "change-B/update")
}

// TestGraphIsTheStructure: the view's graph is the same all through a
// run, so that a page draws it once and only recolours it (no change
// carries it), and the page fills the label line the server leaves for
// each node's status.
func TestGraphIsTheStructure(t *testing.T) {
	t.Parallel()
	dir, events := chainRecord(t, 20)
	st := runstate.New()
	var l *liveView
	for _, e := range events {
		if err := st.Apply(e); err != nil {
			t.Fatal(err)
		}
		v := buildView(st, dir, e.TS, true, false)
		if l == nil {
			l = newLiveView(v, nil)
			continue
		}
		var c Change
		if b := l.update(v); b != nil {
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
		}
		if c.Graph != nil {
			t.Fatalf("after event %d (%s) a change carries the graph: %+v", e.Rev, e.Type, c.Graph)
		}
	}
	if n := strings.Count(l.cur.Graph, "<br/>"+StatusSlot+`"`); n != 20 {
		t.Errorf("%d labels end with the status slot, want 20:\n%s", n, l.cur.Graph)
	}
	js, err := os.ReadFile(filepath.Join("assets", "run.js"))
	if err != nil {
		t.Fatal(err)
	}
	if slot := "const statusSlot = " + strconv.QuoteToASCII(StatusSlot) + ";"; !bytes.Contains(js, []byte(slot)) {
		t.Errorf("assets/run.js does not fill the slot %q: it has no %s", StatusSlot, slot)
	}
}
