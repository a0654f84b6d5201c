package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// brief is the part of an Event a test compares.
type brief struct {
	Rev      int64
	ID       string
	Type     string
	Data     string
	BatchEnd int64
}

func briefs(evs []Event) []brief {
	out := make([]brief, len(evs))
	for i, e := range evs {
		out[i] = brief{e.Rev, e.ID, e.Type, string(e.Data), e.BatchEnd}
	}
	return out
}

func TestAppendAndRead(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	if got := s.Rev(); got != 0 {
		t.Fatalf("empty stream Rev = %d", got)
	}
	before := time.Now().Add(-time.Second)
	mustAppend(t, s, 0,
		NewEvent{ID: "a", Type: "run:started", Data: map[string]any{"z": 1, "a": []any{true, nil, "x"}}},
		NewEvent{ID: "b", Type: "graph:node-dispatched", Data: json.RawMessage(` { "b" : 2.50 , "a" : "\u0041" } `)})
	mustAppend(t, s, 2, NewEvent{ID: "c", Type: "graph:node-completed", Data: nil})
	rev := mustAppend(t, s, AnyRev, NewEvent{ID: "d", Type: "t", Data: "text"})
	if rev != 4 || s.Rev() != 4 {
		t.Fatalf("rev %d, Rev() %d, want 4", rev, s.Rev())
	}
	want := []brief{
		{1, "a", "run:started", `{"a":[true,null,"x"],"z":1}`, 2},
		{2, "b", "graph:node-dispatched", `{"a":"A","b":2.5}`, 2},
		{3, "c", "graph:node-completed", `null`, 3},
		{4, "d", "t", `"text"`, 4},
	}
	check := func(s *Stream) {
		t.Helper()
		evs := readAll(t, s)
		diff(t, "events", want, briefs(evs))
		for i, e := range evs {
			if i == 0 && e.Prev != "" {
				t.Errorf("rev 1 prev = %q", e.Prev)
			}
			if i > 0 && e.Prev != evs[i-1].Digest {
				t.Errorf("rev %d prev %s, want digest of rev %d %s", e.Rev, e.Prev, i, evs[i-1].Digest)
			}
			if e.TS.Before(before) || e.TS.Location() != time.UTC || e.TS.Nanosecond()%int(time.Millisecond) != 0 {
				t.Errorf("rev %d ts %v: want UTC with millisecond precision, now-ish", e.Rev, e.TS)
			}
		}
	}
	check(s)
	check(reopen(t, r, Policy{}).events)
}

func TestGeneratedIDsAreUUIDs(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	mustAppend(t, r.events, 0, NewEvent{Type: "t"}, NewEvent{Type: "t"})
	evs := readAll(t, r.events)
	if len(evs[0].ID) != 36 || evs[0].ID == evs[1].ID {
		t.Fatalf("generated ids %q %q: want two distinct UUIDs", evs[0].ID, evs[1].ID)
	}
}

func TestAppendConditional(t *testing.T) {
	t.Parallel()
	ev := func(id string, data any) NewEvent { return NewEvent{ID: id, Type: "t", Data: data} }
	tests := []struct {
		name     string
		expected int64
		events   []NewEvent
		wantRev  int64
		wantErr  error
		wantCur  int64 // for conflicts
	}{
		{"current", 4, []NewEvent{ev("n1", 1)}, 5, nil, 0},
		{"any", AnyRev, []NewEvent{ev("n1", 1)}, 5, nil, 0},
		{"stale", 3, []NewEvent{ev("n1", 1)}, 0, ErrRevisionConflict, 4},
		{"ahead", 9, []NewEvent{ev("n1", 1)}, 0, ErrRevisionConflict, 4},
		{"identical retry of last batch", 2, []NewEvent{ev("c", 3), ev("d", 4)}, 4, nil, 0},
		{"identical retry of first batch", 0, []NewEvent{ev("a", 1), ev("b", 2)}, 2, nil, 0},
		{"retry with other data", 2, []NewEvent{ev("c", 3), ev("d", 5)}, 0, ErrRevisionConflict, 4},
		{"retry with other type", 2, []NewEvent{ev("c", 3), {ID: "d", Type: "u", Data: 4}}, 0, ErrRevisionConflict, 4},
		{"retry of part of a batch", 2, []NewEvent{ev("c", 3)}, 0, ErrRevisionConflict, 4},
		{"retry starting inside a batch", 1, []NewEvent{ev("b", 2)}, 0, ErrRevisionConflict, 4},
		{"retry spanning two batches", 1, []NewEvent{ev("b", 2), ev("c", 3)}, 0, ErrRevisionConflict, 4},
		{"retry without ids", 2, []NewEvent{{Type: "t", Data: 3}, {Type: "t", Data: 4}}, 0, ErrRevisionConflict, 4},
		{"longer than the stream", 2, []NewEvent{ev("c", 3), ev("d", 4), ev("e", 5)}, 0, ErrRevisionConflict, 4},
		{"identical retry with AnyRev", AnyRev, []NewEvent{ev("a", 1), ev("b", 2)}, 2, nil, 0},
		{"identical retry with the current rev", 4, []NewEvent{ev("c", 3), ev("d", 4)}, 4, nil, 0},
		{"reused id with AnyRev", AnyRev, []NewEvent{ev("a", 9)}, 0, ErrInvalidEvent, 0},
		{"reused id at the current rev", 4, []NewEvent{ev("n1", 1), ev("c", 3)}, 0, ErrInvalidEvent, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRun(t, Policy{})
			s := r.events
			mustAppend(t, s, 0, ev("a", 1), ev("b", 2))
			mustAppend(t, s, 2, ev("c", 3), ev("d", 4))
			rev, err := s.Append(context.Background(), tt.expected, tt.events...)
			if !errors.Is(err, tt.wantErr) || rev != tt.wantRev {
				t.Fatalf("Append = %d, %v; want %d, %v", rev, err, tt.wantRev, tt.wantErr)
			}
			var ce *ConflictError
			if errors.As(err, &ce) && (ce.Current != tt.wantCur || ce.Expected != tt.expected) {
				t.Errorf("conflict %+v, want current %d expected %d", ce, tt.wantCur, tt.expected)
			}
			wantLen := int64(4)
			if tt.wantErr == nil && tt.wantRev == 5 {
				wantLen = 5
			}
			if got := int64(len(readAll(t, s))); got != wantLen {
				t.Errorf("stream has %d events, want %d", got, wantLen)
			}
		})
	}
}

func TestAppendInvalid(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 257)
	tests := []struct {
		name     string
		expected int64
		events   []NewEvent
		want     error
	}{
		{"empty batch", 1, nil, ErrInvalidEvent},
		{"negative expectedRev", -2, []NewEvent{{Type: "t"}}, ErrInvalidEvent},
		{"empty type", 1, []NewEvent{{Type: ""}}, ErrInvalidEvent},
		{"type with space", 1, []NewEvent{{Type: "a b"}}, ErrInvalidEvent},
		{"type starting with colon", 1, []NewEvent{{Type: ":a"}}, ErrInvalidEvent},
		{"id with quote", 1, []NewEvent{{ID: `a"b`, Type: "t"}}, ErrInvalidEvent},
		{"id with backslash", 1, []NewEvent{{ID: `a\b`, Type: "t"}}, ErrInvalidEvent},
		{"id with space", 1, []NewEvent{{ID: "a b", Type: "t"}}, ErrInvalidEvent},
		{"id too long", 1, []NewEvent{{ID: long, Type: "t"}}, ErrInvalidEvent},
		{"id used in the stream", 1, []NewEvent{{ID: "first", Type: "t", Data: 1}}, ErrInvalidEvent},
		{"id twice in the batch", 1, []NewEvent{{ID: "x", Type: "t"}, {ID: "x", Type: "t"}}, ErrInvalidEvent},
		{"raw data not JSON", 1, []NewEvent{{Type: "t", Data: json.RawMessage(`{"a":`)}}, ErrInvalidEvent},
		{"raw data with duplicate keys", 1, []NewEvent{{Type: "t", Data: json.RawMessage(`{"a":1,"a":2}`)}}, ErrInvalidEvent},
		{"raw data with lone surrogate", 1, []NewEvent{{Type: "t", Data: json.RawMessage(`"\ud800"`)}}, ErrInvalidEvent},
		{"integer beyond 2^53", 1, []NewEvent{{Type: "t", Data: int64(1)<<53 + 1}}, ErrInvalidEvent},
		{"unix nanoseconds", 1, []NewEvent{{Type: "t", Data: map[string]int64{"ns": 1764435600123456789}}}, ErrInvalidEvent},
		{"number out of range", 1, []NewEvent{{Type: "t", Data: json.RawMessage(`1e400`)}}, ErrInvalidEvent},
		{"number that underflows", 1, []NewEvent{{Type: "t", Data: json.RawMessage(`1e-400`)}}, ErrInvalidEvent},
		{"NaN", 1, []NewEvent{{Type: "t", Data: math.NaN()}}, ErrInvalidEvent},
		{"channel", 1, []NewEvent{{Type: "t", Data: make(chan int)}}, ErrInvalidEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRun(t, Policy{})
			mustAppend(t, r.events, 0, NewEvent{ID: "first", Type: "t"})
			before := readFile(t, eventsPath(r))
			_, err := r.events.Append(context.Background(), tt.expected, tt.events...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Append: %v, want %v", err, tt.want)
			}
			if Code(err) != "INVALID_EVENT" {
				t.Errorf("Code = %q", Code(err))
			}
			if after := readFile(t, eventsPath(r)); string(after) != string(before) {
				t.Errorf("a refused batch changed the file")
			}
		})
	}
}

func TestDataKeepsExactNumbers(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	data := json.RawMessage(`{"a":9007199254740992,"b":0.1,"c":1.0,"d":1E2,"e":-0,"f":"12345678901234567890","g":0e99999999999,"h":1.5e300}`)
	mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: data})
	got := string(readAll(t, r.events)[0].Data)
	want := `{"a":9007199254740992,"b":0.1,"c":1,"d":100,"e":0,"f":"12345678901234567890","g":0,"h":1.5e+300}`
	if got != want {
		t.Fatalf("stored data %s, want %s", got, want)
	}
}

func TestReadFrom(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	for i := 0; i < 300; i += 3 {
		mustAppend(t, s, int64(i), NewEvent{Type: "t", Data: i}, NewEvent{Type: "t", Data: i + 1}, NewEvent{Type: "t", Data: i + 2})
	}
	check := func(s *Stream) {
		for _, from := range []int64{-5, 0, 1, 2, 63, 64, 65, 66, 128, 129, 200, 299, 300, 301, 1000} {
			var revs []int64
			err := s.Read(context.Background(), from, func(e Event) error {
				if string(e.Data) != fmt.Sprint(e.Rev-1) {
					t.Errorf("rev %d data %s", e.Rev, e.Data)
				}
				revs = append(revs, e.Rev)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			first := max(from, 1)
			if first > 300 {
				if len(revs) != 0 {
					t.Errorf("Read(%d) returned %d events", from, len(revs))
				}
				continue
			}
			if len(revs) != int(300-first+1) || revs[0] != first || revs[len(revs)-1] != 300 {
				t.Errorf("Read(%d) returned %d events from %d to %d", from, len(revs), revs[0], revs[len(revs)-1])
			}
		}
	}
	check(s)
	check(reopen(t, r, Policy{}).events)
}

func TestReadStopsOnCallbackError(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	mustAppend(t, r.events, 0, NewEvent{Type: "t"}, NewEvent{Type: "t"}, NewEvent{Type: "t"})
	stop := errors.New("stop")
	n := 0
	err := r.events.Read(context.Background(), 1, func(Event) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("Read = %v after %d calls, want the callback's error after 1", err, n)
	}
}

func TestHandlesSeeEachOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newTestRun(t, Policy{})
	b, err := OpenRunDir(ctx, a.Dir(), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mustAppend(t, a.events, 0, NewEvent{ID: "1", Type: "t"})
	if got := b.events.Rev(); got != 1 {
		t.Fatalf("b.Rev() = %d after a appended, want 1", got)
	}
	mustAppend(t, b.events, 1, NewEvent{ID: "2", Type: "t"})
	if _, err := a.events.Append(ctx, 1, NewEvent{ID: "3", Type: "t"}); !errors.Is(err, ErrRevisionConflict) {
		t.Fatalf("a appending at stale rev 1: %v, want a conflict", err)
	}
	if _, err := a.events.Append(ctx, 2, NewEvent{ID: "2", Type: "t", Data: "other"}); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("a appending b's id: %v, want INVALID_EVENT", err)
	}
	mustAppend(t, a.events, AnyRev, NewEvent{ID: "3", Type: "t"})
	diff(t, "ids through b", []string{"1", "2", "3"}, ids(readAll(t, b.events)))
}

func ids(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestGroupCommit holds the first fdatasync until every other appender has
// queued, so they must share the next one, and checks every append landed
// exactly once.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	gate := holdSyncs(s, 1)
	held, release, syncs := gate.held[0], gate.release[0], &gate.count
	first := make(chan error, 1)
	go func() {
		_, err := s.Append(context.Background(), AnyRev, NewEvent{ID: "first", Type: "t"})
		first <- err
	}()
	<-held
	const G, N = 16, 20
	var wg sync.WaitGroup
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < N; i++ {
				if _, err := s.Append(context.Background(), AnyRev, NewEvent{ID: fmt.Sprintf("g%d-%d", g, i), Type: "t", Data: g}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	waitQueued(t, s, G)
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	evs := readAll(t, s)
	if len(evs) != G*N+1 {
		t.Fatalf("%d events, want %d", len(evs), G*N+1)
	}
	seen := map[string]bool{}
	for _, e := range evs {
		seen[e.ID] = true
	}
	if len(seen) != G*N+1 {
		t.Fatalf("%d distinct ids, want %d", len(seen), G*N+1)
	}
	// The G first appends shared the second fdatasync.
	if n := syncs.Load(); n > int64(G*N+1-(G-1)) {
		t.Fatalf("%d fdatasyncs for %d appends: no group commit", n, G*N+1)
	} else {
		t.Logf("%d appends, %d fdatasyncs", G*N+1, n)
	}
}

func TestFsyncFailurePoisonsHandle(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	mustAppend(t, s, 0, NewEvent{Type: "t"})
	s.ops.sync = func(*os.File) error { return syscall.EIO }
	_, err := s.Append(context.Background(), 1, NewEvent{Type: "t"}, NewEvent{Type: "t"})
	if !errors.Is(err, ErrStoreFailed) || Code(err) != "RUN_STORAGE" {
		t.Fatalf("Append with failing fsync: %v (code %q), want ErrStoreFailed", err, Code(err))
	}
	s.ops.sync = fdatasync // a later fsync "succeeding" must not help
	if _, err := s.Append(context.Background(), AnyRev, NewEvent{Type: "t"}); !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("Append after a failed fsync: %v, want ErrStoreFailed", err)
	}
	// The outcome was unknown; reopening tells.
	rev := reopen(t, r, Policy{}).events.Rev()
	if rev != 1 && rev != 3 {
		t.Fatalf("after reopen rev %d, want 1 or 3", rev)
	}
}

func TestWriteFailureIsUndone(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	mustAppend(t, s, 0, NewEvent{Type: "t"})
	size := len(readFile(t, eventsPath(r)))
	s.ops.write = func(f *os.File, b []byte) (int, error) {
		n, _ := f.Write(b[:len(b)/2])
		return n, syscall.ENOSPC
	}
	_, err := s.Append(context.Background(), 1, NewEvent{Type: "t"}, NewEvent{Type: "t"})
	if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrStoreFailed) {
		t.Fatalf("Append with a failing write: %v, want ENOSPC without poisoning", err)
	}
	if got := len(readFile(t, eventsPath(r))); got != size {
		t.Fatalf("file is %d bytes after the failed write, want %d (partial batch truncated)", got, size)
	}
	s.ops.write = defaultFileOps.write
	if rev := mustAppend(t, s, 1, NewEvent{Type: "t"}); rev != 2 {
		t.Fatalf("next append rev %d, want 2", rev)
	}
	if rev := reopen(t, r, Policy{}).events.Rev(); rev != 2 {
		t.Fatalf("after reopen rev %d, want 2", rev)
	}
}

func TestWriteAndTruncateFailurePoisons(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	s.ops.write = func(f *os.File, b []byte) (int, error) {
		n, _ := f.Write(b[:len(b)/2])
		return n, syscall.EIO
	}
	s.ops.truncate = func(*os.File, int64) error { return syscall.EIO }
	if _, err := s.Append(context.Background(), 0, NewEvent{Type: "t"}); !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("Append: %v, want ErrStoreFailed", err)
	}
	s.ops = defaultFileOps
	if _, err := s.Append(context.Background(), 0, NewEvent{Type: "t"}); !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("Append after poisoning: %v, want ErrStoreFailed", err)
	}
	// The half-written batch is a torn tail for the next open.
	if rev := reopen(t, r, Policy{}).events.Rev(); rev != 0 {
		t.Fatalf("after reopen rev %d, want 0", rev)
	}
}

func TestAppendContextDone(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.events.Append(ctx, 0, NewEvent{Type: "t"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context: %v", err)
	}
	if r.events.Rev() != 0 {
		t.Fatal("a cancelled append was written")
	}
}

// TestAppendContextDoneWhileQueued cancels an append that waits behind a
// round whose fsync is held: it returns at once and is never written.
func TestAppendContextDoneWhileQueued(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	gate := holdSyncs(s, 1)
	held, hold := gate.held[0], gate.release[0]
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(context.Background(), AnyRev, NewEvent{ID: "leader", Type: "t"})
		done <- err
	}()
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	waiter := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, AnyRev, NewEvent{ID: "cancelled", Type: "t"})
		waiter <- err
	}()
	for {
		s.mu.Lock()
		n := len(s.queue)
		s.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-waiter; !errors.Is(err, context.Canceled) {
		t.Fatalf("queued append: %v, want context.Canceled", err)
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, 1, NewEvent{ID: "after", Type: "t"})
	diff(t, "ids", []string{"leader", "after"}, ids(readAll(t, s)))
}

func TestClosed(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	if _, err := s.Append(ctx, 0, NewEvent{Type: "t"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if err := s.Read(ctx, 1, func(Event) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if _, err := r.PutArtifact(ctx, []byte("x"), "text/plain", "p"); !errors.Is(err, ErrClosed) {
		t.Errorf("PutArtifact after Close: %v", err)
	}
	if _, err := r.Lock(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Lock after Close: %v", err)
	}
}

func TestFollow(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	other, err := OpenRunDir(context.Background(), r.Dir(), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	mustAppend(t, r.events, 0, NewEvent{ID: "1", Type: "t"}, NewEvent{ID: "2", Type: "t"})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan Event, 16)
	done := make(chan error, 1)
	go func() {
		done <- r.events.Follow(ctx, 2, func(e Event) error { got <- e; return nil })
	}()
	next := func() string {
		t.Helper()
		select {
		case e := <-got:
			return e.ID
		case <-time.After(10 * time.Second):
			t.Fatal("Follow delivered nothing")
			return ""
		}
	}
	if id := next(); id != "2" {
		t.Fatalf("first followed event %s, want 2", id)
	}
	mustAppend(t, r.events, 2, NewEvent{ID: "3", Type: "t"}) // same handle: immediate
	if id := next(); id != "3" {
		t.Fatalf("followed %s, want 3", id)
	}
	mustAppend(t, other.events, 3, NewEvent{ID: "4", Type: "t"}, NewEvent{ID: "5", Type: "t"}) // other handle: polled
	if a, b := next(), next(); a != "4" || b != "5" {
		t.Fatalf("followed %s %s, want 4 5", a, b)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow returned %v, want context.Canceled", err)
	}
}

func TestEventMarshalJSONIsTheStoredLine(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: map[string]any{"k": "v"}}, NewEvent{Type: "u"})
	lines := strings.SplitAfter(string(readFile(t, eventsPath(r))), "\n")
	for i, e := range readAll(t, r.events) {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if string(b)+"\n" != lines[i] {
			t.Errorf("rev %d: MarshalJSON\n%s\nstored\n%s", e.Rev, b, lines[i])
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		diff(t, "round trip", e, back, cmpopts.EquateComparable(time.Time{}), cmp.Comparer(func(a, b json.RawMessage) bool { return string(a) == string(b) }))
	}
}

// TestLargeRoundDuplicates queues many batches into one round (the first
// fsync is held) so that the round's id index is used, with one batch
// reusing an id planned earlier in the same round.
func TestLargeRoundDuplicates(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	gate := holdSyncs(s, 1)
	held, hold := gate.held[0], gate.release[0]
	go s.Append(context.Background(), AnyRev, NewEvent{Type: "t"})
	<-held
	errs := make(chan error, 3)
	big := make([]NewEvent, 100)
	for i := range big {
		big[i] = NewEvent{ID: fmt.Sprintf("big-%d", i), Type: "t"}
	}
	go func() { _, err := s.Append(context.Background(), AnyRev, big...); errs <- err }()
	waitQueued(t, s, 1)
	go func() {
		_, err := s.Append(context.Background(), AnyRev, NewEvent{ID: "x", Type: "t"}, NewEvent{ID: "big-77", Type: "t", Data: 1})
		errs <- err
	}()
	waitQueued(t, s, 2)
	go func() { _, err := s.Append(context.Background(), AnyRev, NewEvent{ID: "y", Type: "t"}); errs <- err }()
	waitQueued(t, s, 3)
	close(hold)
	var failed, ok int
	for i := 0; i < 3; i++ {
		if err := <-errs; errors.Is(err, ErrInvalidEvent) {
			failed++
		} else if err == nil {
			ok++
		} else {
			t.Fatal(err)
		}
	}
	if failed != 1 || ok != 2 {
		t.Fatalf("%d refused, %d committed; want the batch reusing big-77 refused and the others committed", failed, ok)
	}
	if got := len(readAll(t, s)); got != 102 {
		t.Fatalf("%d events, want 102", got)
	}
}

func waitQueued(t *testing.T, s *Stream, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		q := len(s.queue)
		s.mu.Unlock()
		if q >= n {
			return
		}
	}
	t.Fatalf("fewer than %d appends queued", n)
}

// TestRoundWriteFailure drives a round directly: a batch queued first and
// one that joined late are written with one write(2), which fails half
// way. Both must fail and the file be left as it was (or, when the partial
// write cannot be undone, the handle be poisoned); the next append works.
func TestRoundWriteFailure(t *testing.T) {
	t.Parallel()
	for _, truncateFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("truncate fails %v", truncateFails), func(t *testing.T) {
			t.Parallel()
			r := newTestRun(t, Policy{})
			s := r.events
			mustAppend(t, s, 0, NewEvent{ID: "before", Type: "t"})
			size := len(readFile(t, eventsPath(r)))
			req := func(id string) *appendReq {
				evs, err := s.prepare([]NewEvent{{ID: id, Type: "t", Data: strings.Repeat("x", 100)}})
				if err != nil {
					t.Fatal(err)
				}
				return &appendReq{expected: AnyRev, events: evs, wake: make(chan struct{}, 1), taken: true}
			}
			first, late := req("first"), req("late")
			s.mu.Lock()
			s.queue = []*appendReq{late}
			s.mu.Unlock()
			writes := 0
			s.ops.write = func(f *os.File, b []byte) (int, error) {
				writes++
				n, _ := f.Write(b[:len(b)/2])
				return n, syscall.ENOSPC
			}
			if truncateFails {
				s.ops.truncate = func(*os.File, int64) error { return syscall.EIO }
			}
			syncs := 0
			s.ops.sync = func(f *os.File) error {
				syncs++
				return fdatasync(f)
			}
			all := s.commitRound([]*appendReq{first}, 2)
			s.ops = defaultFileOps
			if len(all) != 2 || writes != 1 {
				t.Fatalf("round handled %d requests with %d writes, want 2 with 1", len(all), writes)
			}
			if want := map[bool]int{false: 1, true: 0}[truncateFails]; syncs != want {
				t.Fatalf("%d fdatasyncs after the failed write, want %d (the truncation made durable)", syncs, want)
			}
			if truncateFails {
				if !errors.Is(first.err, ErrStoreFailed) || !errors.Is(late.err, ErrStoreFailed) {
					t.Fatalf("first %v, late %v: want both ErrStoreFailed", first.err, late.err)
				}
				diff(t, "ids after reopen", []string{"before"}, ids(readAll(t, reopen(t, r, Policy{}).events)))
				return
			}
			for _, q := range all {
				if !errors.Is(q.err, syscall.ENOSPC) || errors.Is(q.err, ErrStoreFailed) {
					t.Fatalf("%s: rev %d err %v, want ENOSPC without poisoning", q.events[0].id, q.rev, q.err)
				}
			}
			if got := len(readFile(t, eventsPath(r))); got != size {
				t.Fatalf("file is %d bytes after the failed write, want %d", got, size)
			}
			mustAppend(t, s, 1, NewEvent{ID: "after", Type: "t"})
			diff(t, "ids after reopen", []string{"before", "after"}, ids(readAll(t, reopen(t, r, Policy{}).events)))
		})
	}
}

// TestRoundWaitsForReturningAppender checks how a leader gathers a round:
// it waits while an acknowledged Append is still on its way back to its
// caller (who may append again at once), takes that caller's next batch,
// and stops waiting as soon as nobody is on the way.
func TestRoundWaitsForReturningAppender(t *testing.T) {
	t.Parallel()
	for _, again := range []bool{true, false} {
		t.Run(fmt.Sprintf("appends again %v", again), func(t *testing.T) {
			t.Parallel()
			s := newTestRun(t, Policy{}).events
			s.mu.Lock()
			s.returning.Store(1)
			s.mu.Unlock()
			got := make(chan []*appendReq, 1)
			go func() { got <- s.takeLate(1, 3, time.Now().Add(time.Minute)) }()
			select {
			case late := <-got:
				t.Fatalf("takeLate returned %d requests while an appender was on its way back", len(late))
			case <-time.After(50 * time.Millisecond):
			}
			next := &appendReq{expected: AnyRev, wake: make(chan struct{}, 1)}
			if again {
				// Returned and queued its next batch at once.
				s.mu.Lock()
				s.returning.Add(-1)
				s.queue = append(s.queue, next)
				s.nudgeLocked()
				s.mu.Unlock()
			} else {
				s.returned() // without mu, as Append returns
			}
			select {
			case late := <-got:
				want := 0
				if again {
					want = 1
				}
				if len(late) != want || (again && (late[0] != next || !next.taken)) {
					t.Fatalf("takeLate returned %d requests, want %d (the returning appender's next batch, taken)", len(late), want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("takeLate still waits with nobody on the way")
			}
		})
	}
}

// TestAppendContextDoneWhileWritten cancels an append whose batch another
// appender's round is syncing: it returns at once, saying the outcome is
// unknown; the batch still commits, a retry with the same id learns its
// revision, and later rounds do not count the caller that left as one
// that may append again.
func TestAppendContextDoneWhileWritten(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	gate := holdSyncs(s, 2)
	helds, holds := gate.held, gate.release
	appendAsync := func(ctx context.Context, id string) chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := s.Append(ctx, AnyRev, NewEvent{ID: id, Type: "t"})
			errc <- err
		}()
		return errc
	}
	a := appendAsync(context.Background(), "a")
	<-helds[0] // round 1 (a) is syncing
	c := appendAsync(context.Background(), "c")
	waitQueued(t, s, 1)
	ctx, cancel := context.WithCancel(context.Background())
	b := appendAsync(ctx, "b")
	waitQueued(t, s, 2)
	close(holds[0])
	<-helds[1] // round 2 (c, then b) is syncing
	cancel()
	if err := <-b; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "outcome unknown") {
		t.Fatalf("append cancelled while written: %v, want context.Canceled with outcome unknown", err)
	}
	close(holds[1])
	for _, errc := range []chan error{a, c} {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if rev := mustAppend(t, s, AnyRev, NewEvent{ID: "b", Type: "t"}); rev != 3 {
		t.Fatalf("retry of the cancelled append: rev %d, want 3 (it committed)", rev)
	}
	if returning := s.returning.Load(); returning != 0 {
		t.Fatalf("%d appends counted as on their way back after every Append returned", returning)
	}
	diff(t, "ids", []string{"a", "c", "b"}, ids(readAll(t, s)))
}

// roundReq prepares one single-event request for driving commitRound.
func roundReq(t *testing.T, s *Stream, id string, expected int64) *appendReq {
	t.Helper()
	evs, err := s.prepare([]NewEvent{{ID: id, Type: "t", Data: "payload"}})
	if err != nil {
		t.Fatal(err)
	}
	return &appendReq{expected: expected, events: evs, wake: make(chan struct{}, 1)}
}

// TestRoundWriteFailureRequeues fails the one write of a round that holds
// a batch, a repeat of it (a caller retrying with the same id before the
// round ended) and a batch expecting the revision before the round. The
// last two were checked against the unwritten batch, so they must not be
// answered with what that batch implied (the repeat's success, a
// conflict): they go back to the queue and the next round commits them.
func TestRoundWriteFailureRequeues(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	mustAppend(t, s, 0, NewEvent{ID: "before", Type: "t"})
	orig, repeat, cas := roundReq(t, s, "x", AnyRev), roundReq(t, s, "x", AnyRev), roundReq(t, s, "y", 1)
	s.mu.Lock()
	s.queue = append(s.queue, repeat, cas)
	s.mu.Unlock()
	s.ops.write = func(f *os.File, b []byte) (int, error) {
		n, _ := f.Write(b[:len(b)/2])
		return n, syscall.ENOSPC
	}
	answered := s.commitRound([]*appendReq{orig}, 3)
	s.ops = defaultFileOps
	if len(answered) != 1 || answered[0] != orig || !errors.Is(orig.err, syscall.ENOSPC) {
		t.Fatalf("round answered %d requests (orig err %v), want only orig with ENOSPC", len(answered), orig.err)
	}
	s.mu.Lock()
	queued := slices.Clone(s.queue)
	s.mu.Unlock()
	if len(queued) != 2 || queued[0] != repeat || queued[1] != cas || repeat.taken || repeat.err != nil || cas.err != nil {
		t.Fatalf("after the failed write the queue holds %d requests (repeat err %v, cas err %v), want repeat and cas, unanswered", len(queued), repeat.err, cas.err)
	}
	s.mu.Lock()
	s.queue = nil
	s.mu.Unlock()
	// Checked against the stream as it is (rev 1), both commit.
	s.commitRound([]*appendReq{cas, repeat}, 2)
	if cas.err != nil || cas.rev != 2 || repeat.err != nil || repeat.rev != 3 {
		t.Fatalf("next round: cas rev %d err %v, repeat rev %d err %v; want revs 2 and 3", cas.rev, cas.err, repeat.rev, repeat.err)
	}
	diff(t, "ids after reopen", []string{"before", "y", "x"}, ids(readAll(t, reopen(t, r, Policy{}).events)))
}

// TestRoundRepeatSharesOutcome: a batch repeated in the round that commits
// it (a caller retrying before it learnt the outcome) gets the batch's
// revision, whatever its expectedRev, and is written once; a batch reusing
// only some of its ids is refused.
func TestRoundRepeatSharesOutcome(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	orig := roundReq(t, s, "x", 0)
	repeat := roundReq(t, s, "x", 0) // stale once orig is planned; a repeat all the same
	other, err := s.prepare([]NewEvent{{ID: "x", Type: "t", Data: "other payload"}})
	if err != nil {
		t.Fatal(err)
	}
	reuse := &appendReq{expected: AnyRev, events: other, wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.queue = append(s.queue, repeat, reuse)
	s.mu.Unlock()
	s.commitRound([]*appendReq{orig}, 3)
	if orig.err != nil || orig.rev != 1 || repeat.err != nil || repeat.rev != 1 {
		t.Fatalf("orig rev %d err %v, repeat rev %d err %v; want both rev 1", orig.rev, orig.err, repeat.rev, repeat.err)
	}
	if !errors.Is(reuse.err, ErrInvalidEvent) {
		t.Fatalf("a different batch reusing id x: %v, want INVALID_EVENT", reuse.err)
	}
	diff(t, "ids", []string{"x"}, ids(readAll(t, s)))
}

// TestRoundRepeatFailsWithOriginal: when the fdatasync of a round fails,
// a repeat of a batch in it fails too (its outcome is the batch's).
func TestRoundRepeatFailsWithOriginal(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	orig, repeat := roundReq(t, s, "x", AnyRev), roundReq(t, s, "x", AnyRev)
	s.mu.Lock()
	s.queue = append(s.queue, repeat)
	s.mu.Unlock()
	s.ops.sync = func(*os.File) error { return syscall.EIO }
	s.commitRound([]*appendReq{orig}, 2)
	if !errors.Is(orig.err, ErrStoreFailed) || !errors.Is(repeat.err, ErrStoreFailed) || repeat.rev != 0 {
		t.Fatalf("orig %v, repeat rev %d err %v: want both ErrStoreFailed", orig.err, repeat.rev, repeat.err)
	}
}

// panicker is event data whose marshalling panics.
type panicker struct{}

func (panicker) MarshalJSON() ([]byte, error) { panic("marshal panics") }

// TestPanickingMarshaler: a panic while preparing an event goes on to the
// caller, and the Append is no longer counted as preparing (rounds would
// otherwise wait for it).
func TestPanickingMarshaler(t *testing.T) {
	t.Parallel()
	s := newTestRun(t, Policy{}).events
	func() {
		defer func() {
			if p := recover(); p != "marshal panics" {
				t.Fatalf("recovered %v, want the marshaller's panic", p)
			}
		}()
		s.Append(context.Background(), AnyRev, NewEvent{Type: "t", Data: panicker{}})
	}()
	s.mu.Lock()
	preparing := s.preparing
	s.mu.Unlock()
	if preparing != 0 {
		t.Fatalf("%d appends counted as preparing after the panic", preparing)
	}
	mustAppend(t, s, 0, NewEvent{Type: "t"})
}

// TestIdenticalRetrySyncs: an identical retry answered without writing is
// answered only after an fdatasync of its own (the batch may come from a
// handle whose fdatasync failed); if that fails, so does the retry.
func TestIdenticalRetrySyncs(t *testing.T) {
	t.Parallel()
	s := newTestRun(t, Policy{}).events
	mustAppend(t, s, 0, NewEvent{ID: "x", Type: "t"})
	var syncs atomic.Int64
	s.ops.sync = func(f *os.File) error {
		syncs.Add(1)
		return fdatasync(f)
	}
	if rev := mustAppend(t, s, AnyRev, NewEvent{ID: "x", Type: "t"}); rev != 1 || syncs.Load() != 1 {
		t.Fatalf("identical retry: rev %d after %d fdatasyncs, want rev 1 after 1", rev, syncs.Load())
	}
	s.ops.sync = func(*os.File) error { return syscall.EIO }
	if _, err := s.Append(context.Background(), AnyRev, NewEvent{ID: "x", Type: "t"}); !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("identical retry with a failing fdatasync: %v, want ErrStoreFailed", err)
	}
}

// TestRoundPoisonFailsDependents: when a round poisons the handle (its
// write fails and cannot be undone, or its fdatasync fails), the requests
// checked after its first accepted batch were checked against batches
// whose outcome is unknown; they fail with the handle, not with the
// conflict or duplicate id those batches implied. A request checked before
// keeps its answer.
func TestRoundPoisonFailsDependents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ops  func(*fileOps)
	}{
		{"write and truncate fail", func(o *fileOps) {
			o.write = func(*os.File, []byte) (int, error) { return 0, syscall.ENOSPC }
			o.truncate = func(*os.File, int64) error { return syscall.EIO }
		}},
		{"fdatasync fails", func(o *fileOps) {
			o.sync = func(*os.File) error { return syscall.EIO }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newTestRun(t, Policy{}).events
			mustAppend(t, s, 0, NewEvent{ID: "before", Type: "t"})
			stale := roundReq(t, s, "w", 0) // checked against the stream as it was
			orig, cas := roundReq(t, s, "x", AnyRev), roundReq(t, s, "y", 1)
			other, err := s.prepare([]NewEvent{{ID: "x", Type: "t", Data: "other"}})
			if err != nil {
				t.Fatal(err)
			}
			reuse := &appendReq{expected: AnyRev, events: other, wake: make(chan struct{}, 1)}
			s.mu.Lock()
			s.queue = append(s.queue, orig, cas, reuse)
			s.mu.Unlock()
			tc.ops(&s.ops)
			s.commitRound([]*appendReq{stale}, 4)
			s.ops = defaultFileOps
			var ce *ConflictError
			if !errors.As(stale.err, &ce) || ce.Current != 1 {
				t.Fatalf("stale: %v, want its REVISION_CONFLICT at rev 1", stale.err)
			}
			for name, r := range map[string]*appendReq{"orig": orig, "cas": cas, "reuse": reuse} {
				if !errors.Is(r.err, ErrStoreFailed) || r.rev != 0 {
					t.Errorf("%s: rev %d err %v, want ErrStoreFailed", name, r.rev, r.err)
				}
			}
		})
	}
}
