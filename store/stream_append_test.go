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
