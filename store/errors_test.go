package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{&ConflictError{Expected: 1, Current: 2}, "REVISION_CONFLICT"},
		{fmt.Errorf("wrapped: %w", &CorruptError{Line: 3, Rev: 3}), "CORRUPT_EVENT_STREAM"},
		{fmt.Errorf("x: %w", ErrArtifactIntegrity), "ARTIFACT_INTEGRITY"},
		{ErrArtifactNotFound, "ARTIFACT_NOT_FOUND"},
		{&LimitError{Limit: "max_batch_bytes"}, "STORAGE_LIMIT_EXCEEDED"},
		{ErrKnownSecret, "KNOWN_SECRET"},
		{&LockedError{}, "PROCESS_LOCKED"},
		{ErrRunExists, "RUN_EXISTS"},
		{ErrRunNotFound, "RUN_NOT_FOUND"},
		{ValidID(""), "INVALID_ID"},
		{ErrInvalidEvent, "INVALID_EVENT"},
		{ErrInvalidArtifact, "INVALID_ARTIFACT"},
		{ErrInvalidPolicy, "INVALID_POLICY"},
		{fmt.Errorf("%w: fsync", ErrStoreFailed), "RUN_STORAGE"},
		{ErrClosed, "RUN_STORAGE"},
		{&fs.PathError{Op: "open", Path: "x", Err: fs.ErrPermission}, "RUN_STORAGE"},
		{context.Canceled, "RUN_STORAGE"},
	}
	for _, tt := range tests {
		if got := Code(tt.err); got != tt.want {
			t.Errorf("Code(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestTypedErrors(t *testing.T) {
	t.Parallel()
	errs := []struct {
		err      error
		sentinel error
		text     string
	}{
		{&ConflictError{Expected: 4, Current: 7}, ErrRevisionConflict, "expected rev 4, stream is at rev 7"},
		{&CorruptError{Path: "/r/events.jsonl", Line: 9, Rev: 9, Offset: 100, Problem: "p"}, ErrCorruptEventStream, "/r/events.jsonl line 9 (rev 9, byte 100): p"},
		{&CorruptError{Path: "/r/events.jsonl", Line: 9, Rev: 9, Offset: 100, Problem: "p"}, ErrCorruptEventStream, "`obversa verify` lists every fault, and events.jsonl restored from a backup"},
		// A database run's stream (pgstore) has no events.jsonl to restore.
		{&CorruptError{Path: "postgres://db/obversa/default/r", Line: 9, Rev: 9, Problem: "p"}, ErrCorruptEventStream, "and the run's events restored from a backup of the database lets"},
		{&LimitError{Limit: "max_artifact_bytes", Max: 10, Size: 11, What: "an artifact"}, ErrStorageLimitExceeded, "an artifact is 11 bytes, more than max_artifact_bytes = 10; it is a setting of the run file's storage block, which can raise it"},
		{&LockedError{Dir: "/r", Holder: Holder{PID: 42, Host: "h"}, Known: true}, ErrProcessLocked, "locked by pid 42 on host \"h\""},
		{&LockedError{Dir: "/r"}, ErrProcessLocked, "has not yet recorded who it is"},
		{&CanonicalError{Problem: "event 1 of 1 (type \"t\"): data is not valid JSON"}, ErrNotCanonical, "INVALID_EVENT: event 1 of 1"},
	}
	for _, e := range errs {
		if !errors.Is(e.err, e.sentinel) || errors.Is(e.err, ErrRunExists) {
			t.Errorf("%T: errors.Is mismatch", e.err)
		}
		if got := e.err.Error(); !strings.Contains(got, e.text) {
			t.Errorf("%T.Error() = %q, want it to contain %q", e.err, got, e.text)
		}
	}
}

// TestProblemReadsTheTypedError: Problem gives what a typed store error
// says after its code, through any wrapping, from its fields — the text
// before the code (a caller's wrapping) and the code never appear — and
// an error that holds none whole.
func TestProblemReadsTheTypedError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"limit", &LimitError{Limit: "max_event_payload_bytes", Max: 10, Size: 20, What: "event 1 of 1 (type \"KNOWN_SECRET: x\")"},
			"event 1 of 1 (type \"KNOWN_SECRET: x\") is 20 bytes, more than max_event_payload_bytes = 10; it is a setting of the run file's storage block, which can raise it"},
		{"conflict", &ConflictError{Expected: 1, Current: 2}, "expected rev 1, stream is at rev 2"},
		{"corrupt", &CorruptError{Path: "p", Line: 3, Rev: 3, Offset: 9, Problem: "bad"}, "p line 3 (rev 3, byte 9): bad"},
		{"not canonical", &CanonicalError{Problem: "event 1 of 2 (type \"t\"): a number cannot be represented exactly"}, "event 1 of 2 (type \"t\"): a number cannot be represented exactly"},
		{"no typed error", errors.New("plain: text"), ""}, // the whole text
	}
	for _, tt := range tests {
		for _, err := range []error{tt.err, fmt.Errorf("append: %w", tt.err)} {
			want := tt.want
			if want == "" {
				want = err.Error()
			}
			if got := Problem(err); got != want {
				t.Errorf("%s: Problem(%q) = %q, want %q", tt.name, err, got, want)
			}
		}
	}
	sealer, err := NewSealer(Policy{KnownSecrets: []string{"sk-problem-secret-1"}, KnownSecretSources: []string{"API_KEY"}})
	if err != nil {
		t.Fatal(err)
	}
	_, secret := sealer.Prepare([]NewEvent{{Type: "t", Data: map[string]string{"k": "sk-problem-secret-1"}}})
	var se *SecretError
	if !errors.As(secret, &se) || !errors.Is(secret, ErrKnownSecret) || Code(secret) != "KNOWN_SECRET" {
		t.Fatalf("a known secret in an event: %v (%T), want a *SecretError matching ErrKnownSecret", secret, secret)
	}
	if got := Problem(fmt.Errorf("commit: %w", secret)); got != se.Problem || strings.Contains(got, "KNOWN_SECRET") || !strings.Contains(got, "API_KEY") || strings.Contains(got, "sk-problem") {
		t.Errorf("Problem of a known secret: %q", got)
	}
}
