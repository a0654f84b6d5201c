package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/obversa/obversa/store"
)

// TestArtifacts: artifacts are stored once per digest, re-hashed on read,
// held to the per-artifact and per-run limits counting distinct blobs, and
// checked for known secrets as the file backend checks them.
func TestArtifacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, _ := newBackend(t)
	rec, err := b.CreateRun(ctx, "r", store.Policy{MaxArtifactBytes: 100, MaxTotalArtifactBytesPerRun: 150, KnownSecrets: []string{"hunter2"}})
	must(t, err)
	defer rec.Close()
	own, err := rec.Lock(ctx)
	must(t, err)
	defer own.Release()
	a, err := rec.PutArtifact(ctx, []byte(strings.Repeat("a", 80)), "text/plain", "p")
	must(t, err)
	if again, err := rec.PutArtifact(ctx, []byte(strings.Repeat("a", 80)), "text/plain", "p"); err != nil || again.Digest != a.Digest {
		t.Fatalf("storing the same bytes again: %+v, %v", again, err)
	}
	var le *store.LimitError
	if _, err := rec.PutArtifact(ctx, []byte(strings.Repeat("b", 101)), "text/plain", "p"); !errors.As(err, &le) || le.Limit != "max_artifact_bytes" {
		t.Fatalf("oversize artifact: %v", err)
	}
	if _, err := rec.PutArtifact(ctx, []byte(strings.Repeat("c", 80)), "text/plain", "p"); !errors.As(err, &le) || le.Limit != "max_total_artifact_bytes_per_run" || le.Size != 160 {
		t.Fatalf("artifact past the run total: %v", err)
	}
	red, err := rec.PutArtifact(ctx, []byte("pw=hunter2"), "text/plain", "log")
	must(t, err)
	if got, err := rec.ReadArtifact(ctx, red); err != nil || string(got) != "pw=[REDACTED]" {
		t.Fatalf("redacted text artifact reads %q, %v", got, err)
	}
	if _, err := rec.PutArtifact(ctx, []byte(`{"k":"hunter2"}`), "application/json", "x"); !errors.Is(err, store.ErrKnownSecret) {
		t.Fatalf("JSON artifact with a secret: %v", err)
	}
	if _, err := rec.PutArtifact(ctx, []byte("x"), "not a type", "x"); !errors.Is(err, store.ErrInvalidArtifact) {
		t.Fatalf("bad media type: %v", err)
	}
	empty, err := rec.PutArtifact(ctx, nil, "application/octet-stream", "empty")
	must(t, err)
	if got, err := rec.ReadArtifact(ctx, empty); err != nil || len(got) != 0 || empty.Size != 0 {
		t.Fatalf("empty artifact: %+v reads %q, %v", empty, got, err)
	}
	got, err := rec.ReadArtifact(ctx, a)
	if err != nil || string(got) != strings.Repeat("a", 80) {
		t.Fatalf("ReadArtifact = %q, %v", got, err)
	}
	missing := a
	missing.Digest = "sha256:" + strings.Repeat("0", 64)
	if _, err := rec.ReadArtifact(ctx, missing); !errors.Is(err, store.ErrArtifactNotFound) {
		t.Fatalf("missing artifact: %v", err)
	}
	bad := a
	bad.Size = 3
	if _, err := rec.ReadArtifact(ctx, bad); !errors.Is(err, store.ErrArtifactIntegrity) {
		t.Fatalf("wrong size: %v", err)
	}
	// A damaged stored copy is caught on read and replaced by a new put.
	sqlExec(t, b, `UPDATE artifacts SET data = 'xx' WHERE digest = $1`, a.Digest)
	if _, err := rec.ReadArtifact(ctx, a); !errors.Is(err, store.ErrArtifactIntegrity) {
		t.Fatalf("damaged artifact: %v", err)
	}
	if _, err := rec.PutArtifact(ctx, []byte(strings.Repeat("a", 80)), "text/plain", "p"); err != nil {
		t.Fatalf("re-storing a damaged artifact: %v", err)
	}
	if _, err := rec.ReadArtifact(ctx, a); err != nil {
		t.Fatalf("repaired artifact: %v", err)
	}
}

// TestVerifyFindsDamage: edits made in the tables — a changed event, a
// removed last event, a removed artifact — are faults, as the same edits
// of events.jsonl are for the file backend.
func TestVerifyFindsDamage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, _ := newBackend(t)
	for _, tt := range []struct {
		name, sql, code, problem string
	}{
		{"edited data", `UPDATE events SET data = '{"n":9}' WHERE run_id = $1 AND rev = 2`, "CORRUPT_EVENT_STREAM", "digest"},
		{"edited digest", `UPDATE events SET digest = 'sha256:' || repeat('0', 64) WHERE run_id = $1 AND rev = 2`, "CORRUPT_EVENT_STREAM", "digest"},
		{"removed last batch", `DELETE FROM events WHERE run_id = $1 AND rev >= 3`, "CORRUPT_EVENT_STREAM", "head is rev 4"},
		{"removed last", `DELETE FROM events WHERE run_id = $1 AND rev = 4`, "CORRUPT_EVENT_STREAM", "last batch is incomplete"},
		{"removed middle", `DELETE FROM events WHERE run_id = $1 AND rev = 2`, "CORRUPT_EVENT_STREAM", "rev is 3, want 2"},
		{"removed artifact", `DELETE FROM artifacts WHERE run_id = $1`, "ARTIFACT_NOT_FOUND", ""},
		{"damaged artifact", `UPDATE artifacts SET data = 'x' WHERE run_id = $1`, "ARTIFACT_INTEGRITY", ""},
	} {
		id := strings.ReplaceAll(tt.name, " ", "-")
		r, _ := lockedRun(t, b, id)
		ref, err := r.PutArtifact(ctx, []byte("blob"), "application/octet-stream", "p")
		must(t, err)
		_, err = r.Append(ctx, 0, ev("a", map[string]int{"n": 1}), ev("b", map[string]int{"n": 2}))
		must(t, err)
		_, err = r.Append(ctx, 2, ev("c", map[string]any{"ref": ref}), ev("d", 4))
		must(t, err)
		if _, err := b.Verify(ctx, id); err != nil {
			t.Fatalf("%s: Verify before the edit: %v", tt.name, err)
		}
		sqlExec(t, b, tt.sql, id)
		rep, err := b.Verify(ctx, id)
		if err == nil || len(rep.Faults) == 0 || rep.Faults[0].Code != tt.code || !strings.Contains(rep.Faults[0].Problem, tt.problem) {
			t.Errorf("%s: Verify = %+v, %v; want a %s fault about %q", tt.name, rep, err, tt.code, tt.problem)
		}
		if tt.code == "CORRUPT_EVENT_STREAM" {
			if err := r.Read(ctx, 1, func(store.Event) error { return nil }); !errors.Is(err, store.ErrCorruptEventStream) {
				t.Errorf("%s: Read: %v, want CORRUPT_EVENT_STREAM", tt.name, err)
			}
		}
	}
	if _, err := b.Verify(ctx, "missing"); !errors.Is(err, store.ErrRunNotFound) {
		t.Fatalf("Verify of a missing run: %v", err)
	}
}
