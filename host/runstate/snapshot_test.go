package runstate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// deep compares two folds field by field, unexported fields included,
// with the positions a restore deferred and the graph's links built first
// (what any reader of them sees).
var deep = []cmp.Option{cmp.Exporter(func(reflect.Type) bool { return true }), cmpopts.IgnoreTypes(sync.Mutex{}, sync.Once{}),
	cmp.Transformer("loadPositions", func(s *State) *State {
		if s != nil {
			s.loadPositions()
		}
		return s
	}),
	cmp.Transformer("link", func(s *graph.State) *graph.State {
		if s != nil {
			s.Vertex("") // builds the links
		}
		return s
	})}

// storeRecord appends events (type, data), one batch each, to a new run
// of a file store and returns it open, with its directory.
func storeRecord(t *testing.T, events ...any) (*store.Run, string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(t.TempDir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.CreateRun(ctx, "r", store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	run := rec.(*store.Run)
	t.Cleanup(func() { run.Close() })
	own, err := run.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Release() })
	for i := 0; i+1 < len(events); i += 2 {
		if _, err := run.Append(ctx, int64(i/2), store.NewEvent{Type: events[i].(string), Data: mustJSON(events[i+1])}); err != nil {
			t.Fatalf("event %d: %v", i/2+1, err)
		}
	}
	return run, run.Dir()
}

// richRun is a record touching every part of the fold: workers, a crash
// and a cleanup, engine calls with usage, an approval pause, a decision,
// a resume, a workspace snapshot and the run's end.
func richRun(t testing.TB) []any {
	usage := plugin.Usage{Known: true, Input: 3, Output: 2}
	ok := true
	return []any{
		graph.EventRunStarted, started(t),
		EventWorkerStarted, WorkerStartedData{PID: 10, StartTime: 7},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 1, Outcome: "completed", Usage: mustJSON(usage),
			Requested: json.RawMessage(`{"model":"m1","tools":[]}`), Effective: json.RawMessage(`{"model":"m1","tools":null}`)},
		EventWorkerExited, WorkerExitedData{PID: 10, ExitCode: -1, Signal: "killed", Reason: ExitCrash},
		EventCleanup, NewCleanup(nil, nil),
		EventWorkerStarted, WorkerStartedData{PID: 11, StartTime: 8, Restart: 1},
		graph.EventNodeResumed, graph.ResumedData{Node: "a", Position: "dag/a/1", Reason: graph.ResumedRetrySafe},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x2"},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 2, Outcome: "completed", Usage: json.RawMessage(`{"known":false}`)},
		graph.EventNodeCompleted, graph.CompletedData{Node: "a", Position: "dag/a/1", Result: json.RawMessage(`"ok"`)},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "b", Position: "dag/b/1"}}},
		graph.EventNodePaused, graph.PausedData{Node: "b", Position: "dag/b/1", Request: graph.PauseRequest{Kind: graph.PauseApproval, Position: "dag/b/1"}},
		EventWorkspaceSnapshot, SnapshotData{Provider: "git", Digest: "sha256:00", Files: 2},
		graph.EventRunWaiting, Result{RunID: "r", Kind: KindPaused, Output: &Output{Paused: []graph.PauseRequest{{Kind: graph.PauseApproval, Position: "dag/b/1"}}}},
		graph.EventApproval, graph.ApprovalData{Position: "dag/b/1", Decision: graph.DecisionAllow, Request: "req-1"},
		graph.EventRunResumed, RunResumedData{},
		EventWorkerStarted, WorkerStartedData{PID: 12, StartTime: 9, Restart: 0},
		graph.EventNodeResumed, graph.ResumedData{Node: "b", Position: "dag/b/1", Reason: graph.ResumedApproval},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "b", Position: "dag/b/1", AttemptID: "y"},
		graph.EventNodeCompleted, graph.CompletedData{Node: "b", Position: "dag/b/1", Result: json.RawMessage(`{"done":[]}`)},
		graph.EventRunFinished, Result{RunID: "r", Kind: KindComplete, Output: &Output{FromRecord: true}},
		EventWorkerExited, WorkerExitedData{PID: 12, Reason: "done"},
		EventCleanup, CleanupData{Stopped: nil, Survivors: nil, Verified: ok},
	}
}

// foldUpTo folds the record r up to revision k.
func foldUpTo(t *testing.T, r Reader, k int64) *State {
	t.Helper()
	s := New()
	if err := r.Read(context.Background(), 1, func(e store.Event) error {
		if e.Rev > k {
			return errStop
		}
		return s.Apply(e)
	}); err != nil && !errors.Is(err, errStop) {
		t.Fatal(err)
	}
	return s
}

// TestSnapshotEveryRevision: restored from a snapshot at any revision and
// with the rest folded on top, the fold is the full fold, field by field.
func TestSnapshotEveryRevision(t *testing.T) {
	ctx := context.Background()
	run, _ := storeRecord(t, richRun(t)...)
	full, err := Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for k := int64(1); k <= full.Rev(); k++ {
		prefix := foldUpTo(t, run, k)
		if err := SaveSnapshot(dir, prefix); err != nil {
			t.Fatal(err)
		}
		got, err := fromSnapshot(ctx, run, dir)
		if err != nil {
			t.Fatalf("rev %d: %v", k, err)
		}
		if d := cmp.Diff(full, got, deep...); d != "" {
			t.Fatalf("restored at rev %d (-full +restored):\n%s", k, d)
		}
		if err := CheckSnapshot(ctx, run, dir); err != nil {
			t.Fatalf("CheckSnapshot at rev %d: %v", k, err)
		}
	}
}

// TestSnapshotOnlyOfTheRecord: the executor's own State, which folds
// events before they are recorded, is never saved.
func TestSnapshotOnlyOfTheRecord(t *testing.T) {
	run, dir := storeRecord(t, richRun(t)[:4]...)
	s, err := Load(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fold(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := SaveSnapshot(dir, s); !errors.Is(err, ErrFolded) {
		t.Errorf("save of a folded state: %v, want ErrFolded", err)
	}
	if _, err := os.Stat(filepath.Join(dir, SnapshotFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a snapshot was written: %v", err)
	}
}

// TestSnapshotUnusable: a snapshot that is damaged, cut short, of another
// record, of events the record no longer ends with, or written by another
// version changes nothing a reader sees (it folds the whole record), and
// CheckSnapshot says which it is.
func TestSnapshotUnusable(t *testing.T) {
	ctx := context.Background()
	events := richRun(t)
	run, dir := storeRecord(t, events...)
	full, err := Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	good, err := full.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Another record: the same run but for one event's data.
	other := append([]any{}, events...)
	other[len(other)-3] = RunResumedData{Position: "dag/b/1"}
	other = other[:len(other)-2]
	orun, _ := storeRecord(t, other...)
	ofull, err := Load(ctx, orun)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := ofull.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	// A snapshot one event ahead of a record: a longer record's.
	longer, _ := storeRecord(t, append(append([]any{}, events...), EventTakeover, TakeoverData{PID: 5})...)
	lfull, err := Load(ctx, longer)
	if err != nil {
		t.Fatal(err)
	}
	ahead, err := lfull.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	header, payload, _ := bytes.Cut(good, []byte("\n"))
	flip := bytes.Clone(good)
	flip[len(flip)-10] ^= 0x40
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrSnapshotInvalid},
		{"no header line", header, ErrSnapshotInvalid},
		{"header not JSON", append([]byte("{\n"), payload...), ErrSnapshotInvalid},
		{"cut short", good[:len(good)-7], ErrSnapshotInvalid},
		{"a bit flipped", flip, ErrSnapshotInvalid},
		{"bytes added", append(bytes.Clone(good), 0), ErrSnapshotInvalid},
		{"another format", bytes.Replace(good, []byte(`"format":3`), []byte(`"format":2`), 1), ErrSnapshotStale},
		{"another fold", bytes.Replace(good, []byte(`"fold":"`), []byte(`"fold":"0+`), 1), ErrSnapshotStale},
		{"another record", foreign, ErrSnapshotInvalid},
		{"ahead of the record", ahead, ErrSnapshotInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, SnapshotFile), tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadWithSnapshot(ctx, run, dir)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(full, got, deep...); d != "" {
				t.Errorf("reader's fold (-full +got):\n%s", d)
			}
			if _, err := fromSnapshot(ctx, run, dir); err == nil {
				t.Error("the snapshot was used")
			}
			if err := CheckSnapshot(ctx, run, dir); !errors.Is(err, tt.want) {
				t.Errorf("CheckSnapshot: %v, want %v", err, tt.want)
			}
		})
	}
	// A snapshot that decodes and fits, but holds another fold: only
	// verify's comparison with a full fold can tell.
	t.Run("differs from the fold", func(t *testing.T) {
		wrong, err := Load(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		wrong.crashes = 7
		if err := SaveSnapshot(dir, wrong); err != nil {
			t.Fatal(err)
		}
		if err := CheckSnapshot(ctx, run, dir); !errors.Is(err, ErrSnapshotInvalid) {
			t.Errorf("CheckSnapshot: %v, want ErrSnapshotInvalid", err)
		}
	})
	t.Run("none", func(t *testing.T) {
		os.Remove(filepath.Join(dir, SnapshotFile))
		if err := CheckSnapshot(ctx, run, dir); err != nil {
			t.Errorf("CheckSnapshot without a snapshot: %v", err)
		}
	})
}

// FuzzSnapshot feeds arbitrary bytes to the snapshot's decoders: the file
// parser, and the payload decoder past the checksum (which the fuzzer
// could not forge). Each returns an error wrapping ErrSnapshotInvalid or
// a State, never panics; a State restored from any bytes encodes to a
// payload that restores to the same State.
func FuzzSnapshot(f *testing.F) {
	full, err := record(f, richRun(f)...)
	if err != nil {
		f.Fatal(err)
	}
	good, err := full.EncodeSnapshot()
	if err != nil {
		f.Fatal(err)
	}
	header, payload, _ := bytes.Cut(good, []byte("\n"))
	f.Add(good)
	f.Add(payload)
	f.Add(header)
	f.Add(payload[:len(payload)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, p, err := parseSnapshot(data); err == nil && (h.Rev < 1 || len(p) != h.Bytes) {
			t.Fatalf("parsed a header %+v that does not fit its payload", h)
		}
		// The payload holds the run's start too: a New State is all a
		// restore needs. Restored as transient bytes (a mapped file),
		// then overwritten: nothing of the State may refer to them.
		s := New()
		transient := bytes.Clone(data)
		err := s.restorePayload(transient, true)
		for i := range transient {
			transient[i] = 0xff
		}
		if err != nil {
			if !errors.Is(err, ErrSnapshotInvalid) {
				t.Fatalf("error %v does not wrap ErrSnapshotInvalid", err)
			}
			return
		}
		if s.start == nil || s.start.Definition == nil || s.start.Plan == nil || s.graph == nil {
			t.Fatal("a restore succeeded without a start or a graph")
		}
		again, err := s.encodePayload()
		if err != nil {
			t.Fatalf("a restored state does not encode: %v", err)
		}
		s2 := New()
		if err := s2.restorePayload(again, false); err != nil {
			t.Fatalf("a restored state's payload does not restore: %v", err)
		}
		if b, err := s2.encodePayload(); err != nil || !bytes.Equal(b, again) {
			t.Fatalf("a restored state's payload restores to another state (%v)", err)
		}
	})
}
