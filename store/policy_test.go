package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyValidation(t *testing.T) {
	t.Parallel()
	for _, p := range []Policy{
		{MaxEventPayloadBytes: -1}, {MaxBatchBytes: -1}, {MaxArtifactBytes: -1}, {MaxTotalArtifactBytesPerRun: -1},
	} {
		if _, err := compilePolicy(p); !errors.Is(err, ErrInvalidPolicy) || Code(err) != "INVALID_POLICY" {
			t.Errorf("compilePolicy(%+v) = %v, want INVALID_POLICY", p, err)
		}
	}
}

func TestEventLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("a", n-2) + `"`) } // n bytes canonical
	t.Run("payload", func(t *testing.T) {
		t.Parallel()
		r := newTestRun(t, Policy{MaxEventPayloadBytes: 100})
		mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: data(100)})
		_, err := r.events.Append(ctx, 1, NewEvent{Type: "t"}, NewEvent{Type: "t", Data: data(101)})
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != "max_event_payload_bytes" || le.Max != 100 || le.Size != 101 || Code(err) != "STORAGE_LIMIT_EXCEEDED" {
			t.Fatalf("101-byte payload: %v", err)
		}
		if !strings.Contains(err.Error(), "event 2 of 2") {
			t.Errorf("error %q does not say which event", err)
		}
		// The limit counts canonical bytes, not the caller's whitespace.
		mustAppend(t, r.events, 1, NewEvent{Type: "t", Data: json.RawMessage(`  ` + string(data(100)) + `  `)})
	})
	t.Run("batch", func(t *testing.T) {
		t.Parallel()
		r := newTestRun(t, Policy{MaxBatchBytes: 1000})
		line, _ := encodeLine(nil, 1, 1, "0b7e2c4e-8a53-4e0c-9f5e-2b8d6f1a9c3d", "t", nowMillis(), data(50), "")
		per := len(line) // lines after the first have a prev digest (+71 bytes)
		n := 1000 / (per + 71)
		evs := make([]NewEvent, n)
		for i := range evs {
			evs[i] = NewEvent{Type: "t", Data: data(50)}
		}
		mustAppend(t, r.events, 0, evs...)
		evs = append(evs, evs...)
		_, err := r.events.Append(ctx, int64(n), evs...)
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != "max_batch_bytes" || le.Size <= 1000 {
			t.Fatalf("oversized batch: %v", err)
		}
		if r.events.Rev() != int64(n) {
			t.Fatal("an oversized batch was written")
		}
	})
}

func TestArtifactLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRun(t, Policy{MaxArtifactBytes: 10, MaxTotalArtifactBytesPerRun: 25})
	put := func(s string) error {
		_, err := r.PutArtifact(ctx, []byte(s), "application/octet-stream", "test")
		return err
	}
	if err := put("0123456789"); err != nil {
		t.Fatal(err)
	}
	var le *LimitError
	if err := put("0123456789a"); !errors.As(err, &le) || le.Limit != "max_artifact_bytes" {
		t.Fatalf("11-byte artifact: %v", err)
	}
	_, err := r.PutArtifact(ctx, []byte(`"0123456789"`), "application/json", "test")
	if want := `an application/json artifact (purpose "test") is 12 bytes, more than max_artifact_bytes = 10; it is a setting of the run file's storage block`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("12-byte JSON artifact: %v, want %q", err, want)
	}
	if err := put("abcdefghij"); err != nil { // total 20
		t.Fatal(err)
	}
	if err := put("0123456789"); err != nil { // stored already: counts once
		t.Fatalf("storing the same bytes again: %v", err)
	}
	if err := put("klmnop"); !errors.As(err, &le) || le.Limit != "max_total_artifact_bytes_per_run" || le.Size != 26 {
		t.Fatalf("total 26: %v", err)
	}
	if err := put("klmno"); err != nil { // total 25
		t.Fatal(err)
	}
	// Another handle (another process, as far as the store knows) sees the
	// blobs on disk.
	other := reopen(t, r, Policy{MaxTotalArtifactBytesPerRun: 25})
	if _, err := other.PutArtifact(ctx, []byte("x"), "text/plain", "t"); !errors.As(err, &le) {
		t.Fatalf("other handle over the total: %v", err)
	}
}

const secret = "sk-test-4f7b\"c9\n2a<d>"

// secretPolicy has a secret with a quote, a line feed and characters
// encoding/json escapes, plus a plain one, each named by its source.
var secretPolicy = Policy{KnownSecrets: []string{"", secret, "plain-secret-value"},
	KnownSecretSources: []string{"EMPTY", "TEST_TOKEN", "PLAIN_SECRET"}}

// Names of secretPolicy's secrets, as refusals give them.
const (
	tokenName = "the known secret TEST_TOKEN"
	plainName = "the known secret PLAIN_SECRET"
)

func noSecretIn(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, s := range secretPolicy.KnownSecrets {
		if s != "" && bytes.Contains(b, []byte(s)) {
			t.Errorf("%s contains a known secret", what)
		}
	}
	for _, frag := range []string{"sk-test-4f7b", "plain-secret"} {
		if bytes.Contains(b, []byte(frag)) {
			t.Errorf("%s contains part of a known secret (%q)", what, frag)
		}
	}
}

func TestKnownSecretsInEvents(t *testing.T) {
	t.Parallel()
	escaped, _ := json.Marshal(secret)
	tests := []struct {
		name   string
		event  NewEvent
		where  string // expected in the error
		secret string // the secret's name, expected in the error
	}{
		{"string value", NewEvent{Type: "t", Data: map[string]any{"env": map[string]string{"KEY": secret}}}, "data.env.KEY", tokenName},
		{"plain secret in a longer string", NewEvent{Type: "t", Data: map[string]any{"log": "token=plain-secret-value;"}}, "data.log", plainName},
		{"member name", NewEvent{Type: "t", Data: map[string]any{"plain-secret-value": 1}}, "data (a member name)", plainName},
		{"array element", NewEvent{Type: "t", Data: map[string]any{"args": []string{"--x", secret}}}, "data.args[1]", tokenName},
		{"raw JSON-escaped", NewEvent{Type: "t", Data: json.RawMessage(`{"k":` + string(escaped) + `}`)}, "data.k", tokenName},
		{"split across an escape", NewEvent{Type: "t", Data: json.RawMessage(`{"k":"pl\u0061in-secret-v\u0061lue"}`)}, "data.k", plainName},
		{"secret's own escapes spelled out", NewEvent{Type: "t", Data: json.RawMessage(`{"k":"sk-test-4f7b\u0022c9\u000a2a\u003cd\u003e"}`)}, "data.k", tokenName},
		{"whole data", NewEvent{Type: "t", Data: "plain-secret-value"}, "data", plainName},
		{"id", NewEvent{ID: "x-plain-secret-value", Type: "t"}, "id", plainName},
		{"type", NewEvent{Type: "plain-secret-value"}, "type", plainName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRun(t, secretPolicy)
			mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: "fine"})
			_, err := r.events.Append(context.Background(), 1, NewEvent{Type: "ok"}, tt.event)
			if !errors.Is(err, ErrKnownSecret) || Code(err) != "KNOWN_SECRET" {
				t.Fatalf("Append: %v, want KNOWN_SECRET", err)
			}
			if !strings.Contains(err.Error(), tt.where) || !strings.Contains(err.Error(), "event 2 of 2") || !strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error %q should name event 2 of 2, %q and %q", err, tt.where, tt.secret)
			}
			noSecretIn(t, "the error", []byte(err.Error()))
			if r.events.Rev() != 1 {
				t.Fatal("a batch with a secret was written")
			}
			noSecretIn(t, "events.jsonl", readEvents(t, eventsPath(r)))
		})
	}
}

func TestKnownSecretsInArtifacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	escaped, _ := json.Marshal(secret)
	refused := []struct {
		name, media, content, secret string
	}{
		{"JSON raw", "application/json", `{"a":"plain-secret-value"}`, plainName},
		{"JSON escaped", "application/json", `{"a":` + string(escaped) + `}`, tokenName},
		{"JSON split across an escape", "application/vnd.x+json", `{"a":"plain-secr\u0065t-value"}`, plainName},
		{"JSON Lines split across an escape", "application/x-ndjson", "{\"a\":1}\n{\"b\":\"pl\\u0061in-secret-value\"}\n", plainName},
		{"invalid JSON with the secret", "application/json", `{"a":"plain-secret-value`, plainName},
		{"binary", "application/octet-stream", "\x00\x01" + secret + "\x02", tokenName},
		{"purpose", "text/plain", "fine", plainName},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRun(t, secretPolicy)
			purpose := "test"
			if tt.name == "purpose" {
				purpose = "for plain-secret-value"
			}
			_, err := r.PutArtifact(ctx, []byte(tt.content), tt.media, purpose)
			if !errors.Is(err, ErrKnownSecret) {
				t.Fatalf("PutArtifact: %v, want KNOWN_SECRET", err)
			}
			if !strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error %q should name %q", err, tt.secret)
			}
			noSecretIn(t, "the error", []byte(err.Error()))
			blobs, _ := filepath.Glob(filepath.Join(r.Dir(), artifactsDir, blobsDir, "*"))
			if len(blobs) != 0 {
				t.Fatalf("a refused artifact was stored: %v", blobs)
			}
		})
	}
	t.Run("text is redacted before hashing", func(t *testing.T) {
		t.Parallel()
		r := newTestRun(t, secretPolicy)
		in := "line 1 " + secret + " and " + string(escaped[1:len(escaped)-1]) + " and plain-secret-value!\nplain-secret-valueplain-secret-value"
		ref, err := r.PutArtifact(ctx, []byte(in), "text/plain; charset=utf-8", "log")
		if err != nil {
			t.Fatal(err)
		}
		want := "line 1 [REDACTED] and [REDACTED] and [REDACTED]!\n[REDACTED]"
		got, err := r.ReadArtifact(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want || ref.Size != int64(len(want)) {
			t.Fatalf("stored %q (size %d), want %q", got, ref.Size, want)
		}
		for _, p := range mustGlob(t, filepath.Join(r.Dir(), "*", "*", "*")) {
			noSecretIn(t, p, readBytes(t, p))
		}
	})
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSecretsNeverWritten runs refused and redacted writes, then checks
// that no file in the run directory holds a secret.
func TestSecretsNeverWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRun(t, secretPolicy)
	r.events.Append(ctx, 0, NewEvent{Type: "t", Data: secret})
	r.PutArtifact(ctx, []byte(secret), "application/json", "x")
	r.PutArtifact(ctx, []byte(secret), "text/plain", "x")
	mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: "ok"})
	r.Close()
	filepath.Walk(r.Dir(), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			noSecretIn(t, p, readBytes(t, p))
		}
		return nil
	})
}

// TestKnownSecretWithoutSource: a secret the policy names no source for
// (KnownSecretSources shorter than KnownSecrets) is refused as "a known
// secret".
func TestKnownSecretWithoutSource(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{KnownSecrets: []string{"plain-secret-value"}})
	_, err := r.events.Append(context.Background(), 0, NewEvent{Type: "t", Data: map[string]any{"k": "plain-secret-value"}})
	if !errors.Is(err, ErrKnownSecret) || !strings.Contains(err.Error(), "data.k contains a known secret (value withheld)") {
		t.Fatalf("Append: %v, want KNOWN_SECRET naming data.k and a known secret", err)
	}
	noSecretIn(t, "the error", []byte(err.Error()))
}
