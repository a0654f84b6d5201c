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
		{&LimitError{Limit: "max_artifact_bytes", Max: 10, Size: 11, What: "an artifact"}, ErrStorageLimitExceeded, "an artifact is 11 bytes, max_artifact_bytes is 10"},
		{&LockedError{Dir: "/r", Holder: Holder{PID: 42, Host: "h"}, Known: true}, ErrProcessLocked, "locked by pid 42 on host \"h\""},
		{&LockedError{Dir: "/r"}, ErrProcessLocked, "has not yet recorded who it is"},
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
