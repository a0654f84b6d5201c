package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/obversa/obversa/store"
)

var policyCases = []testCase{
	{"PolicyEventLimits", testEventLimits},
	{"PolicyArtifactLimits", testArtifactLimits},
	{"KnownSecretsInEvents", testSecretsInEvents},
	{"KnownSecretsInArtifacts", testSecretsInArtifacts},
}

// testEventLimits: max_event_payload_bytes counts an event's canonical
// data; max_batch_bytes counts one append's stored lines.
func testEventLimits(t *testing.T, s *suite) {
	ctx := context.Background()
	_, r := s.owned(t, "evlim", store.Policy{MaxEventPayloadBytes: 10})
	mustAppend(t, r, 0, ev("fits", json.RawMessage(`"12345678"`))) // 10 bytes with quotes
	_, err := r.Append(ctx, 1, ev("over", "123456789"))
	var le *store.LimitError
	if !errors.As(err, &le) || le.Limit != "max_event_payload_bytes" || le.Max != 10 || le.Size != 11 || store.Code(err) != "STORAGE_LIMIT_EXCEEDED" {
		t.Fatalf("11-byte event: %v", err)
	}
	// Canonical form is what counts: whitespace does not.
	mustAppend(t, r, 1, ev("spaced", json.RawMessage(` { "a" : 1 } `)))

	_, r2 := s.owned(t, "batchlim", store.Policy{MaxBatchBytes: 1000})
	var lineBytes int64
	mustAppend(t, r2, 0, ev("one", "x"))
	if line, err := json.Marshal(readAll(t, r2)[0]); err == nil {
		lineBytes = int64(len(line)) + 1
	}
	three := []store.NewEvent{ev("a", "x"), ev("b", "x"), ev("c", "x")}
	_, err = r2.Append(ctx, 1, append(three, ev("d", "x"), ev("e", "x"))...)
	if !errors.As(err, &le) || le.Limit != "max_batch_bytes" || le.Size <= 1000 {
		t.Fatalf("batch of five ~%d-byte lines under a 1000-byte limit: %v", lineBytes, err)
	}
	mustAppend(t, r2, 1, three...)
}

// testArtifactLimits: max_artifact_bytes counts one artifact as stored;
// max_total_artifact_bytes_per_run counts distinct artifacts once, across
// handles.
func testArtifactLimits(t *testing.T, s *suite) {
	ctx := context.Background()
	pol := store.Policy{MaxArtifactBytes: 10, MaxTotalArtifactBytesPerRun: 25}
	b := s.backend(t)
	r, own := createOwned(t, b, "artlim", pol)
	put := func(r store.Record, data string) error {
		_, err := r.PutArtifact(ctx, []byte(data), "text/plain", "t")
		return err
	}
	var le *store.LimitError
	if err := put(r, "0123456789"); err != nil {
		t.Fatal(err)
	}
	if err := put(r, "0123456789a"); !errors.As(err, &le) || le.Limit != "max_artifact_bytes" || le.Size != 11 {
		t.Fatalf("11-byte artifact: %v", err)
	}
	if err := put(r, "abcdefghij"); err != nil { // total 20
		t.Fatal(err)
	}
	if err := put(r, "0123456789"); err != nil {
		t.Fatalf("storing the same bytes again counts once: %v", err)
	}
	if err := put(r, "klmnop"); !errors.As(err, &le) || le.Limit != "max_total_artifact_bytes_per_run" || le.Size != 26 {
		t.Fatalf("total 26: %v", err)
	}
	if err := put(r, "klmno"); err != nil { // total 25
		t.Fatal(err)
	}
	// The next owner, through another handle, counts what is stored.
	if err := own.Release(); err != nil {
		t.Fatal(err)
	}
	next := open(t, b, "artlim", pol)
	own2, err := next.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer own2.Release()
	if err := put(next, "x"); !errors.As(err, &le) || le.Limit != "max_total_artifact_bytes_per_run" {
		t.Fatalf("another handle over the total: %v", err)
	}
}

// secret has characters JSON escapes, so that its escaped forms differ
// from the raw one.
const secret = "sk-conformance-4f7b\"c9\n2a<d>"

var secretPolicy = store.Policy{KnownSecrets: []string{"", secret, "plain-secret-value"}}

// noSecret fails t when b holds a secret or a recognisable part of one.
func noSecret(t *testing.T, what string, b string) {
	t.Helper()
	for _, frag := range []string{"sk-conformance-4f7b", "plain-secret"} {
		if strings.Contains(b, frag) {
			t.Errorf("%s contains a known secret (%q…)", what, frag)
		}
	}
}

// testSecretsInEvents: an event holding a known secret anywhere — raw,
// escaped, split by an escape, in a member name, its id or type — is
// refused, the batch writes nothing, and the error names where without
// quoting it.
func testSecretsInEvents(t *testing.T, s *suite) {
	ctx := context.Background()
	_, r := s.owned(t, "secev", secretPolicy)
	mustAppend(t, r, 0, ev("fine", "fine"))
	escaped, _ := json.Marshal(secret)
	tests := []struct {
		name  string
		event store.NewEvent
	}{
		{"string value", store.NewEvent{Type: "t", Data: map[string]any{"env": map[string]string{"KEY": secret}}}},
		{"inside a longer string", store.NewEvent{Type: "t", Data: map[string]any{"log": "token=plain-secret-value;"}}},
		{"member name", store.NewEvent{Type: "t", Data: map[string]any{"plain-secret-value": 1}}},
		{"array element", store.NewEvent{Type: "t", Data: map[string]any{"args": []string{"--x", secret}}}},
		{"raw JSON-escaped", store.NewEvent{Type: "t", Data: json.RawMessage(`{"k":` + string(escaped) + `}`)}},
		{"split across an escape", store.NewEvent{Type: "t", Data: json.RawMessage(`{"k":"pl\u0061in-secret-v\u0061lue"}`)}},
		{"id", store.NewEvent{ID: "x-plain-secret-value", Type: "t"}},
		{"type", store.NewEvent{Type: "plain-secret-value"}},
	}
	for _, tt := range tests {
		_, err := r.Append(ctx, 1, store.NewEvent{Type: "ok"}, tt.event)
		if !errors.Is(err, store.ErrKnownSecret) || store.Code(err) != "KNOWN_SECRET" {
			t.Errorf("%s: Append = %v, want KNOWN_SECRET", tt.name, err)
			continue
		}
		if !strings.Contains(err.Error(), "event 2 of 2") {
			t.Errorf("%s: error %q does not name event 2 of 2", tt.name, err)
		}
		noSecret(t, tt.name+": the error", err.Error())
	}
	if r.Rev() != 1 {
		t.Fatal("a batch with a secret was written")
	}
	for _, e := range readAll(t, r) {
		line, _ := json.Marshal(e)
		noSecret(t, "the record", string(line))
	}
}

// testSecretsInArtifacts: structured and binary artifacts holding a known
// secret are refused; text artifacts have it replaced by "[REDACTED]"
// before hashing.
func testSecretsInArtifacts(t *testing.T, s *suite) {
	ctx := context.Background()
	_, r := s.owned(t, "secart", secretPolicy)
	escaped, _ := json.Marshal(secret)
	refused := []struct{ name, media, content, purpose string }{
		{"JSON raw", "application/json", `{"a":"plain-secret-value"}`, "t"},
		{"JSON escaped", "application/json", `{"a":` + string(escaped) + `}`, "t"},
		{"JSON split across an escape", "application/vnd.x+json", `{"a":"plain-secr\u0065t-value"}`, "t"},
		{"JSON Lines", "application/x-ndjson", "{\"a\":1}\n{\"b\":\"pl\\u0061in-secret-value\"}\n", "t"},
		{"binary", "application/octet-stream", "\x00\x01plain-secret-value\x02", "t"},
		{"purpose", "text/plain", "fine", "for plain-secret-value"},
	}
	for _, tt := range refused {
		_, err := r.PutArtifact(ctx, []byte(tt.content), tt.media, tt.purpose)
		if !errors.Is(err, store.ErrKnownSecret) {
			t.Errorf("%s: PutArtifact = %v, want KNOWN_SECRET", tt.name, err)
			continue
		}
		noSecret(t, tt.name+": the error", err.Error())
	}
	in := "line 1 " + secret + " and " + string(escaped[1:len(escaped)-1]) + " and plain-secret-value!\nplain-secret-valueplain-secret-value"
	ref, err := r.PutArtifact(ctx, []byte(in), "text/plain; charset=utf-8", "log")
	if err != nil {
		t.Fatal(err)
	}
	want := "line 1 [REDACTED] and [REDACTED] and [REDACTED]!\n[REDACTED]"
	got, err := r.ReadArtifact(ctx, ref)
	if err != nil || string(got) != want || ref.Size != int64(len(want)) {
		t.Fatalf("text artifact stored as %q (size %d), %v; want %q", got, ref.Size, err, want)
	}
}
