package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
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
	rev := mustAppend(t, s, 3, NewEvent{ID: "d", Type: "t", Data: "text"})
	if rev != 4 || s.Rev() != 4 {
		t.Fatalf("rev %d, Rev() %d, want 4", rev, s.Rev())
	}
	want := []brief{
		{1, "a", "run:started", `{"a":[true,null,"x"],"z":1}`, 2},
		{2, "b", "graph:node-dispatched", `{"a":"A","b":2.5}`, 2},
		{3, "c", "graph:node-completed", `null`, 3},
		{4, "d", "t", `"text"`, 4},
	}
	check := func(s *stream) {
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
		{"stale", 3, []NewEvent{ev("n1", 1)}, 0, ErrRevisionConflict, 4},
		{"ahead", 9, []NewEvent{ev("n1", 1)}, 0, ErrRevisionConflict, 4},
		{"retry of the last batch", 2, []NewEvent{ev("c", 3), ev("d", 4)}, 0, ErrRevisionConflict, 4},
		{"retry of the last batch at the current rev", 4, []NewEvent{ev("c", 3), ev("d", 4)}, 0, ErrInvalidEvent, 0},
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
		{"negative expectedRev", -1, []NewEvent{{Type: "t"}}, ErrInvalidEvent},
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
			before := readEvents(t, eventsPath(r))
			_, err := r.events.Append(context.Background(), tt.expected, tt.events...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Append: %v, want %v", err, tt.want)
			}
			if Code(err) != "INVALID_EVENT" {
				t.Errorf("Code = %q", Code(err))
			}
			if after := readEvents(t, eventsPath(r)); string(after) != string(before) {
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
	check := func(s *stream) {
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
	mustAppend(t, a.events, 2, NewEvent{ID: "3", Type: "t"})
	diff(t, "ids through b", []string{"1", "2", "3"}, ids(readAll(t, b.events)))
}

func ids(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
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

// TestAppendContextDoneWhileWaiting cancels an append that waits for the
// stream while another holds it: it returns at once and is never written.
func TestAppendContextDoneWhileWaiting(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	s.mu <- struct{}{} // another append holds the stream
	ctx, cancel := context.WithCancel(context.Background())
	waiter := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, 0, NewEvent{ID: "cancelled", Type: "t"})
		waiter <- err
	}()
	select {
	case err := <-waiter:
		t.Fatalf("Append returned %v while the stream was held", err)
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	if err := <-waiter; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting append: %v, want context.Canceled", err)
	}
	s.unlock()
	mustAppend(t, s, 0, NewEvent{ID: "after", Type: "t"})
	diff(t, "ids", []string{"after"}, ids(readAll(t, s)))
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
	lines := strings.SplitAfter(string(readEvents(t, eventsPath(r))), "\n")
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

// panicker is event data whose marshalling panics.
type panicker struct{}

func (panicker) MarshalJSON() ([]byte, error) { panic("marshal panics") }

// TestPanickingMarshaler: a panic while preparing an event goes on to the
// caller before the stream is locked; the stream stays usable.
func TestPanickingMarshaler(t *testing.T) {
	t.Parallel()
	s := newTestRun(t, Policy{}).events
	func() {
		defer func() {
			if p := recover(); p != "marshal panics" {
				t.Fatalf("recovered %v, want the marshaller's panic", p)
			}
		}()
		s.Append(context.Background(), 0, NewEvent{Type: "t", Data: panicker{}})
	}()
	mustAppend(t, s, 0, NewEvent{Type: "t"})
}

// TestLargeBatchDuplicates: an id repeated far apart in one batch, or
// repeating one committed many events before, is refused.
func TestLargeBatchDuplicates(t *testing.T) {
	t.Parallel()
	s := newTestRun(t, Policy{}).events
	var evs []NewEvent
	for i := range 300 {
		evs = append(evs, NewEvent{ID: fmt.Sprintf("e%d", i), Type: "t"})
	}
	mustAppend(t, s, 0, evs...)
	again := []NewEvent{{ID: "new-0", Type: "t"}, {ID: "e7", Type: "t"}}
	if _, err := s.Append(context.Background(), 300, again...); !errors.Is(err, ErrInvalidEvent) || !strings.Contains(err.Error(), "rev 8") {
		t.Fatalf("reusing a committed id: %v", err)
	}
	evs = evs[:0]
	for i := range 200 {
		evs = append(evs, NewEvent{ID: fmt.Sprintf("n%d", i), Type: "t"})
	}
	evs = append(evs, NewEvent{ID: "n3", Type: "t"})
	if _, err := s.Append(context.Background(), 300, evs...); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("an id twice in one batch: %v", err)
	}
	if got := s.Rev(); got != 300 {
		t.Fatalf("rev %d after refused batches", got)
	}
}
