package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sealBatches are appended through the file backend and sealed again with
// a Sealer; both must give the same bytes.
var sealBatches = [][]NewEvent{
	{{ID: "a", Type: "graph:run-started", Data: map[string]any{"b": 1, "a": "x<y>"}}},
	{{ID: "b", Type: "t:x", Data: struct {
		Z int    `json:"z"`
		A string `json:"a"`
	}{1, "é\n"}}, {ID: "c", Type: "t:y", Data: []any{1.5, nil, true}}},
	{{ID: "d", Type: "t:z", Data: nil}},
}

// TestSealMatchesFileBackend: events sealed by a Sealer and laid out by
// AppendLine are byte for byte the lines the file backend writes.
func TestSealMatchesFileBackend(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRun(ctx, "run", Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var rev int64
	for _, b := range sealBatches {
		if rev, err = r.Append(ctx, rev, b...); err != nil {
			t.Fatal(err)
		}
	}
	file := readEvents(t, filepath.Join(r.Dir(), eventsFile))
	var stored []Event
	if err := r.Read(ctx, 1, func(e Event) error { stored = append(stored, e); return nil }); err != nil {
		t.Fatal(err)
	}
	sl, err := NewSealer(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []byte
	after, prev := int64(0), ""
	for _, b := range sealBatches {
		prep, err := sl.Prepare(b)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := sl.Seal(after, prev, stored[after].TS, prep)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			lines = AppendLine(lines, e)
		}
		after, prev = evs[len(evs)-1].Rev, evs[len(evs)-1].Digest
	}
	if !bytes.Equal(lines, file) {
		t.Fatalf("sealed lines differ from events.jsonl:\n%s\nwant:\n%s", lines, file)
	}
	for _, l := range bytes.SplitAfter(file, newline) {
		if len(l) == 0 {
			continue
		}
		e, err := ParseLine(bytes.Clone(l))
		if err != nil {
			t.Fatalf("ParseLine(%s): %v", l, err)
		}
		if got := AppendLine(nil, e); !bytes.Equal(got, l) {
			t.Fatalf("ParseLine then AppendLine: %s, want %s", got, l)
		}
	}
}

func TestSealChecks(t *testing.T) {
	sl, err := NewSealer(Policy{MaxBatchBytes: 400, KnownSecrets: []string{"sk-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.UTC)
	for _, tt := range []struct {
		name   string
		events []NewEvent
		want   error
		// canonical says the refusal is of the data itself: it also
		// matches ErrNotCanonical.
		canonical bool
	}{
		{"empty batch", nil, ErrInvalidEvent, false},
		{"bad type", []NewEvent{{Type: "no spaces"}}, ErrInvalidEvent, false},
		{"repeated id", []NewEvent{{ID: "x", Type: "t"}, {ID: "x", Type: "t"}}, ErrInvalidEvent, false},
		{"secret", []NewEvent{{Type: "t", Data: map[string]string{"k": "sk-secret"}}}, ErrKnownSecret, false},
		{"inexact number", []NewEvent{{Type: "t", Data: uint64(1) << 60}}, ErrInvalidEvent, true},
		{"inexact number in JSON text", []NewEvent{{Type: "t", Data: json.RawMessage(`{"id":123456789012345678901234567890}`)}}, ErrInvalidEvent, true},
		{"number out of a double's range", []NewEvent{{Type: "t", Data: json.RawMessage(`[1e400]`)}}, ErrInvalidEvent, true},
		{"duplicate member", []NewEvent{{Type: "t", Data: json.RawMessage(`{"a":1,"a":2}`)}}, ErrInvalidEvent, true},
		{"lone surrogate", []NewEvent{{Type: "t", Data: json.RawMessage(`{"a":"\ud800"}`)}}, ErrInvalidEvent, true},
		{"not JSON", []NewEvent{{Type: "t", Data: json.RawMessage(`{"a":`)}}, ErrInvalidEvent, true},
	} {
		_, err := sl.Prepare(tt.events)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Prepare error %v, want %v", tt.name, err, tt.want)
		}
		if errors.Is(err, ErrNotCanonical) != tt.canonical {
			t.Errorf("%s: Prepare error %v matches ErrNotCanonical: %v, want %v", tt.name, err, !tt.canonical, tt.canonical)
		}
		var ce *CanonicalError
		if tt.canonical && (Code(err) != "INVALID_EVENT" || !errors.As(err, &ce) || strings.Contains(Problem(err), "INVALID_EVENT")) {
			t.Errorf("%s: code %s, %T, problem %q; want INVALID_EVENT from a *CanonicalError", tt.name, Code(err), err, Problem(err))
		}
	}
	prep, err := sl.Prepare([]NewEvent{{Type: "t", Data: strings.Repeat("x", 300)}, {Type: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	var le *LimitError
	if _, err := sl.Seal(0, "", ts, prep); !errors.As(err, &le) || le.Limit != "max_batch_bytes" {
		t.Errorf("Seal of an oversize batch: %v, want max_batch_bytes", err)
	}
	evs, err := sl.Seal(0, "", ts, prep[1:])
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[0].TS; !got.Equal(ts.Truncate(time.Millisecond)) {
		t.Errorf("ts %v not truncated to milliseconds", got)
	}
	if _, err := sl.Seal(3, "", ts, prep); err == nil {
		t.Error("Seal after rev 3 without a prev digest succeeded")
	}
}

// TestParseLineRefuses: a line whose members were edited (digest kept)
// fails with a *CorruptError naming the problem and the rev.
func TestParseLineRefuses(t *testing.T) {
	sl, _ := NewSealer(Policy{})
	prep, _ := sl.Prepare([]NewEvent{{ID: "a", Type: "t", Data: map[string]int{"n": 1}}})
	evs, _ := sl.Seal(0, "", time.Now(), prep)
	for name, edit := range map[string]func(*Event){
		"data":       func(e *Event) { e.Data = []byte(`{"n":2}`) },
		"non-canon":  func(e *Event) { e.Data = []byte(`{ "n":1}`) },
		"type":       func(e *Event) { e.Type = "u" },
		"ts":         func(e *Event) { e.TS = e.TS.Add(time.Millisecond) },
		"empty data": func(e *Event) { e.Data = nil },
		"digest":     func(e *Event) { e.Digest = "sha256:xyz" },
	} {
		e := evs[0]
		edit(&e)
		_, err := ParseLine(AppendLine(nil, e))
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Problem == "" {
			t.Errorf("%s edited: ParseLine error %v, want a *CorruptError", name, err)
		}
	}
}

// TestVerifyLines: VerifyLines over the lines of events.jsonl reports what
// Verify reports, and notices a missing artifact.
func TestVerifyLines(t *testing.T) {
	ctx := context.Background()
	s, _ := Open(t.TempDir(), "ns")
	r, err := s.CreateRun(ctx, "run", Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	ref, err := r.PutArtifact(ctx, []byte("hello"), "text/plain", "p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(ctx, 0, NewEvent{ID: "a", Type: "t", Data: map[string]any{"ref": ref}}); err != nil {
		t.Fatal(err)
	}
	want, err := Verify(ctx, r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	file, _ := os.ReadFile(filepath.Join(r.Dir(), eventsFile))
	blobs := dirBlobs(OS(), filepath.Join(r.Dir(), artifactsDir, blobsDir))
	got, err := VerifyLines(ctx, "lines", bytes.NewReader(file), blobs)
	if err != nil || got.Events != 1 || got.Artifacts != 1 || want.Events != got.Events || len(got.Faults) != 0 {
		t.Fatalf("VerifyLines = %+v, %v; Verify = %+v", got, err, want)
	}
	none := func(context.Context, string) (io.ReadCloser, error) { return nil, os.ErrNotExist }
	got, err = VerifyLines(ctx, "lines", bytes.NewReader(file), none)
	if !errors.Is(err, ErrArtifactNotFound) || len(got.Faults) != 1 {
		t.Fatalf("VerifyLines without the blob = %+v, %v; want ARTIFACT_NOT_FOUND", got, err)
	}
}
