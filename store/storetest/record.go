package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/store"
)

var recordCases = []testCase{
	{"HashChain", testHashChain},
	{"ConditionalAppend", testConditionalAppend},
	{"BatchAllOrNothing", testBatchAllOrNothing},
	{"ReadOnly", testReadOnly},
	{"FollowSeesOtherHandle", testFollow},
	{"Runs", testRuns},
	{"Closed", testClosed},
	{"EditedEventFound", testEditedEvent},
}

// testHashChain: revisions are contiguous from 1, batch_end marks each
// batch's last event, prev links each event to the digest of the one
// before, each digest is the SHA-256 of the event's canonical envelope
// (what Verify checks for any backend), and the record reads back the same
// through a second handle and verifies.
func testHashChain(t *testing.T, s *suite) {
	ctx := context.Background()
	b, r := s.owned(t, "chain", store.Policy{})
	if r.ID() != "chain" || r.Rev() != 0 {
		t.Fatalf("new run: id %q rev %d", r.ID(), r.Rev())
	}
	mustAppend(t, r, 0, ev("a", map[string]any{"z": 1, "a": []any{true, nil}}), ev("b", json.RawMessage(` {"b": 2.50, "a": "\u0041"} `)))
	mustAppend(t, r, 2, store.NewEvent{Type: "u"})
	if rev := mustAppend(t, r, 3, ev("d", "x"), ev("e", nil), ev("f", 7)); rev != 6 || r.Rev() != 6 {
		t.Fatalf("last rev %d, Rev %d; want 6", rev, r.Rev())
	}
	evs := readAll(t, r)
	wantEnds := []int64{2, 2, 3, 6, 6, 6}
	for i, e := range evs {
		if e.Rev != int64(i+1) || e.BatchEnd != wantEnds[i] {
			t.Fatalf("event %d: rev %d batch_end %d, want %d %d", i, e.Rev, e.BatchEnd, i+1, wantEnds[i])
		}
		if i == 0 && e.Prev != "" || i > 0 && e.Prev != evs[i-1].Digest {
			t.Fatalf("rev %d: prev %q does not link to rev %d's digest", e.Rev, e.Prev, i)
		}
		checkDigest(t, e)
		if e.TS.Location() != time.UTC || e.TS.Nanosecond()%int(time.Millisecond) != 0 {
			t.Errorf("rev %d: ts %v is not UTC with millisecond precision", e.Rev, e.TS)
		}
	}
	if got := string(evs[1].Data); got != `{"a":"A","b":2.5}` {
		t.Errorf("data stored as %s, want its RFC 8785 form", got)
	}
	if len(evs[2].ID) != 36 {
		t.Errorf("an event without id got %q, want a UUID", evs[2].ID)
	}
	other := open(t, b, "chain", store.Policy{})
	if got := readAll(t, other); !slices.EqualFunc(got, evs, sameEvent) {
		t.Fatal("a second handle reads another record")
	}
	var from []int64
	if err := other.Read(ctx, 5, func(e store.Event) error { from = append(from, e.Rev); return nil }); err != nil || !slices.Equal(from, []int64{5, 6}) {
		t.Fatalf("Read from rev 5: %v, %v", from, err)
	}
	rep, err := b.Verify(ctx, "chain")
	if err != nil || rep.Events != 6 || len(rep.Faults) != 0 {
		t.Fatalf("Verify: %v %+v", err, rep)
	}
	if _, err := b.Verify(ctx, "missing"); !errors.Is(err, store.ErrRunNotFound) {
		t.Fatalf("Verify of a missing run: %v", err)
	}
}

func sameEvent(a, b store.Event) bool {
	return a.Rev == b.Rev && a.ID == b.ID && a.Type == b.Type && a.TS.Equal(b.TS) && bytes.Equal(a.Data, b.Data) &&
		a.Prev == b.Prev && a.Digest == b.Digest && a.BatchEnd == b.BatchEnd
}

// checkDigest recomputes an event's digest from its canonical envelope:
// the stored line (Event.MarshalJSON) up to the member "digest", closed.
func checkDigest(t *testing.T, e store.Event) {
	t.Helper()
	line, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("rev %d: %v", e.Rev, err)
	}
	k := bytes.LastIndex(line, []byte(`,"digest":"`))
	if k < 0 {
		t.Fatalf("rev %d: no digest member in %s", e.Rev, line)
	}
	sum := sha256.Sum256(append(bytes.Clone(line[:k]), '}'))
	if want := "sha256:" + hex.EncodeToString(sum[:]); e.Digest != want {
		t.Fatalf("rev %d: digest %s, the canonical envelope hashes to %s", e.Rev, e.Digest, want)
	}
}

// testConditionalAppend: an append is refused unless expectedRev is the
// record's last revision; the conflict names the current one; a repeated
// batch is not taken for a retry.
func testConditionalAppend(t *testing.T, s *suite) {
	ctx := context.Background()
	_, r := s.owned(t, "cond", store.Policy{})
	mustAppend(t, r, 0, ev("a", 1), ev("b", 2))
	for _, exp := range []int64{0, 1, 3, 9} {
		_, err := r.Append(ctx, exp, ev("c", 3))
		var ce *store.ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, store.ErrRevisionConflict) || ce.Current != 2 || ce.Expected != exp || store.Code(err) != "REVISION_CONFLICT" {
			t.Fatalf("Append at %d on a record at 2: %v, want a *ConflictError with current 2", exp, err)
		}
	}
	if _, err := r.Append(ctx, -1, ev("c", 3)); !errors.Is(err, store.ErrInvalidEvent) {
		t.Fatalf("Append at -1: %v, want INVALID_EVENT", err)
	}
	mustAppend(t, r, 2, ev("c", 3))
	// One writer: a batch repeated is not answered as a retry whose
	// acknowledgement was lost. At its old revision it conflicts; at the
	// current one its ids are taken.
	if _, err := r.Append(ctx, 2, ev("c", 3)); !errors.Is(err, store.ErrRevisionConflict) {
		t.Fatalf("repeating the last batch at its revision: %v, want REVISION_CONFLICT", err)
	}
	if _, err := r.Append(ctx, 3, ev("c", 3)); !errors.Is(err, store.ErrInvalidEvent) {
		t.Fatalf("repeating the last batch at the current revision: %v, want INVALID_EVENT (id reused)", err)
	}
	if got := len(readAll(t, r)); got != 3 {
		t.Fatalf("record holds %d events, want 3", got)
	}
}

// testBatchAllOrNothing: a batch refused for any one of its events — a
// reused id, invalid data, a limit, a known secret — writes nothing.
func testBatchAllOrNothing(t *testing.T, s *suite) {
	ctx := context.Background()
	pol := store.Policy{MaxEventPayloadBytes: 100, MaxBatchBytes: 4000, KnownSecrets: []string{"sk-conformance-secret"}}
	_, r := s.owned(t, "batch", pol)
	mustAppend(t, r, 0, ev("first", 1))
	tests := []struct {
		name string
		bad  store.NewEvent
		want error
	}{
		{"id already in the record", ev("first", 2), store.ErrInvalidEvent},
		{"id twice in the batch", ev("ok-0", 2), store.ErrInvalidEvent},
		{"data that is not JSON", ev("x", json.RawMessage(`{"a":`)), store.ErrInvalidEvent},
		{"bad type", store.NewEvent{Type: "a b"}, store.ErrInvalidEvent},
		{"event over max_event_payload_bytes", ev("x", strings.Repeat("x", 200)), store.ErrStorageLimitExceeded},
		{"known secret", ev("x", map[string]string{"k": "sk-conformance-secret"}), store.ErrKnownSecret},
	}
	for _, tt := range tests {
		_, err := r.Append(ctx, 1, ev("ok-0", 1), ev("ok-1", 2), tt.bad)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Append = %v, want %v", tt.name, err, tt.want)
		}
	}
	var many []store.NewEvent
	for i := range 60 {
		many = append(many, ev(fmt.Sprintf("m%d", i), i))
	}
	_, err := r.Append(ctx, 1, many...)
	var le *store.LimitError
	if !errors.As(err, &le) || le.Limit != "max_batch_bytes" {
		t.Errorf("batch over max_batch_bytes: %v", err)
	}
	if r.Rev() != 1 || len(readAll(t, r)) != 1 {
		t.Fatalf("refused batches wrote something: rev %d", r.Rev())
	}
	mustAppend(t, r, 1, ev("ok-0", 1), ev("ok-1", 2))
}

// testReadOnly: a read-only handle reads the record and refuses every
// write and ownership.
func testReadOnly(t *testing.T, s *suite) {
	ctx := context.Background()
	b, r := s.owned(t, "ro", store.Policy{})
	mustAppend(t, r, 0, ev("a", 1), ev("b", 2))
	ro, err := b.OpenRunReadOnly(ctx, "ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := readAll(t, ro); len(got) != 2 || ro.Rev() != 2 {
		t.Fatalf("read-only handle reads %d events, rev %d", len(got), ro.Rev())
	}
	if _, err := ro.Append(ctx, 2, ev("c", 3)); !errors.Is(err, store.ErrReadOnly) && !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("Append through a read-only handle: %v", err)
	}
	if _, err := ro.PutArtifact(ctx, []byte("x"), "text/plain", "p"); !errors.Is(err, store.ErrReadOnly) && !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("PutArtifact through a read-only handle: %v", err)
	}
	if own, err := ro.Lock(ctx); !errors.Is(err, store.ErrReadOnly) {
		if own != nil {
			own.Release()
		}
		t.Errorf("Lock through a read-only handle: %v, want ErrReadOnly", err)
	}
	if _, err := b.OpenRunReadOnly(ctx, "missing"); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("read-only open of a missing run: %v", err)
	}
	if r.Rev() != 2 {
		t.Fatalf("rev %d after refused writes", r.Rev())
	}
}

// testFollow: Follow passes on what the owner appends through another
// handle, in order, and ends with its context.
func testFollow(t *testing.T, s *suite) {
	b, r := s.owned(t, "follow", store.Policy{})
	mustAppend(t, r, 0, ev("1", nil), ev("2", nil))
	reader, err := b.OpenRunReadOnly(context.Background(), "follow")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() { done <- reader.Follow(ctx, 2, func(e store.Event) error { got <- e.ID; return nil }) }()
	next := func() string {
		t.Helper()
		select {
		case id := <-got:
			return id
		case <-time.After(10 * time.Second):
			t.Fatal("Follow passed nothing on within 10 s")
			return ""
		}
	}
	if id := next(); id != "2" {
		t.Fatalf("first followed event %s, want 2", id)
	}
	mustAppend(t, r, 2, ev("3", nil), ev("4", nil))
	if a, b := next(), next(); a != "3" || b != "4" {
		t.Fatalf("followed %s %s, want 3 4", a, b)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow returned %v, want context.Canceled", err)
	}
}

// testRuns: runs are listed sorted; an id exists once; missing and
// malformed ids are refused with their codes.
func testRuns(t *testing.T, s *suite) {
	ctx := context.Background()
	b := s.backend(t)
	if b.Namespace() == "" {
		t.Error("Namespace is empty")
	}
	if ids, err := b.ListRuns(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("ListRuns of an empty backend: %v, %v", ids, err)
	}
	for _, id := range []string{"run-b", "run-a", "run-c"} {
		r, err := b.CreateRun(ctx, id, store.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	if ids, err := b.ListRuns(ctx); err != nil || !slices.Equal(ids, []string{"run-a", "run-b", "run-c"}) {
		t.Fatalf("ListRuns = %v, %v", ids, err)
	}
	if _, err := b.CreateRun(ctx, "run-a", store.Policy{}); !errors.Is(err, store.ErrRunExists) || store.Code(err) != "RUN_EXISTS" {
		t.Fatalf("CreateRun twice: %v", err)
	}
	if _, err := b.OpenRun(ctx, "run-z", store.Policy{}); !errors.Is(err, store.ErrRunNotFound) {
		t.Fatalf("OpenRun of a missing run: %v", err)
	}
	for _, id := range []string{"", "../x", "a/b", ".hidden", strings.Repeat("x", 129)} {
		if _, err := b.CreateRun(ctx, id, store.Policy{}); !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("CreateRun(%q): %v, want INVALID_ID", id, err)
		}
	}
	if _, err := b.CreateRun(ctx, "neg", store.Policy{MaxBatchBytes: -1}); !errors.Is(err, store.ErrInvalidPolicy) {
		t.Errorf("CreateRun with a negative limit: %v", err)
	}
}

// testClosed: a closed handle refuses everything with ErrClosed.
func testClosed(t *testing.T, s *suite) {
	ctx := context.Background()
	_, r := s.owned(t, "closed", store.Policy{})
	mustAppend(t, r, 0, ev("a", 1))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := r.Append(ctx, 1, ev("b", 2)); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if err := r.Read(ctx, 1, func(store.Event) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if _, err := r.PutArtifact(ctx, []byte("x"), "text/plain", "p"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("PutArtifact after Close: %v", err)
	}
}

// testEditedEvent: an event edited in storage (its digest left alone) is
// a CORRUPT_EVENT_STREAM fault at its revision for Verify, and a fresh
// handle refuses to read past it.
func testEditedEvent(t *testing.T, s *suite) {
	if s.editEvent == nil {
		t.Skip("the backend gave no EditEventFunc (storetest.WithEventEdit)")
	}
	ctx := context.Background()
	b, r := s.owned(t, "edited", store.Policy{})
	mustAppend(t, r, 0, ev("a", map[string]int{"n": 1}))
	mustAppend(t, r, 1, ev("b", map[string]int{"n": 2}), ev("c", map[string]int{"n": 3}))
	s.editEvent(t, b, "edited", 2, `"n":2`, `"n":7`)
	rep, err := b.Verify(ctx, "edited")
	if !errors.Is(err, store.ErrCorruptEventStream) || len(rep.Faults) == 0 || rep.Faults[0].Rev != 2 {
		t.Fatalf("Verify of an edited event: %v %+v, want CORRUPT_EVENT_STREAM at rev 2", err, rep)
	}
	ro, err := b.OpenRunReadOnly(ctx, "edited")
	if err == nil {
		defer ro.Close()
		err = ro.Read(ctx, 1, func(store.Event) error { return nil })
	}
	if !errors.Is(err, store.ErrCorruptEventStream) {
		t.Fatalf("opening and reading an edited record: %v, want CORRUPT_EVENT_STREAM", err)
	}
}
