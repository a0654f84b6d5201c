package pgstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/store"
)

// TestSameLinesAsFileBackend: a run's events read from PostgreSQL, laid
// out as lines, are a valid events.jsonl: the file backend opens and
// verifies them, and reads the same events back.
func TestSameLinesAsFileBackend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, _ := newBackend(t)
	r, _ := lockedRun(t, b, "run-1")
	ref, err := r.PutArtifact(ctx, []byte(`{"answer":42}`), "application/json", "result")
	if err != nil {
		t.Fatal(err)
	}
	batches := [][]store.NewEvent{
		{ev("a", map[string]any{"z": 1, "a": "é<>&"})},
		{ev("b", []int{1, 2}), ev("c", map[string]any{"ref": ref}), ev("d", nil)},
		{ev("e", 1.5e300)},
	}
	var rev int64
	for _, bt := range batches {
		if rev, err = r.Append(ctx, rev, bt...); err != nil {
			t.Fatal(err)
		}
	}
	if rev != 5 {
		t.Fatalf("rev %d after 5 events", rev)
	}
	var lines []byte
	var got []store.Event
	if err := r.Read(ctx, 1, func(e store.Event) error {
		got = append(got, e)
		lines = store.AppendLine(lines, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if rep, err := b.Verify(ctx, "run-1"); err != nil || rep.Events != 5 || rep.Artifacts != 1 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}

	// The same lines and blob in a file backend's run directory.
	fs, err := store.Open(t.TempDir(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	dir := fs.RunDir("run-1")
	blobs := filepath.Join(dir, "artifacts", "sha256")
	must(t, os.MkdirAll(blobs, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "events.jsonl"), lines, 0o644))
	blob, _ := r.ReadArtifact(ctx, ref)
	must(t, os.WriteFile(filepath.Join(blobs, ref.Digest[len("sha256:"):]), blob, 0o644))
	if rep, err := fs.Verify(ctx, "run-1"); err != nil || rep.Events != 5 || rep.Artifacts != 1 {
		t.Fatalf("file backend Verify of the lines = %+v, %v", rep, err)
	}
	fr, err := fs.OpenRunReadOnly(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var fileLines []byte
	must(t, fr.Read(ctx, 1, func(e store.Event) error { fileLines = store.AppendLine(fileLines, e); return nil }))
	if !bytes.Equal(fileLines, lines) {
		t.Fatalf("the file backend reads back\n%s\nwant\n%s", fileLines, lines)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestConditionalAppend: a stale expectedRev conflicts with the current
// rev; a repeated batch is not taken for a retry; a reused id is refused;
// a negative expectedRev is refused.
func TestConditionalAppend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, _ := newBackend(t)
	r, _ := lockedRun(t, b, "r")
	if _, err := r.Append(ctx, 0, ev("a", 1), ev("b", 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(ctx, 2, ev("c", 3)); err != nil {
		t.Fatal(err)
	}
	var ce *store.ConflictError
	if _, err := r.Append(ctx, 1, ev("d", 4)); !errors.As(err, &ce) || ce.Current != 3 || ce.Expected != 1 {
		t.Fatalf("stale append: %v, want REVISION_CONFLICT at rev 3", err)
	}
	// One writer: a repeated batch is not answered as a retry.
	if _, err := r.Append(ctx, 0, ev("a", 1), ev("b", 2)); !errors.As(err, &ce) {
		t.Fatalf("repeating a batch at its old revision: %v, want REVISION_CONFLICT", err)
	}
	for name, batch := range map[string][]store.NewEvent{
		"repeated batch": {ev("c", 3)},
		"reused id":      {ev("x", 0), ev("c", 3)},
		"inside a batch": {ev("b", 2)},
	} {
		if _, err := r.Append(ctx, 3, batch...); !errors.Is(err, store.ErrInvalidEvent) || !strings.Contains(err.Error(), "already used by rev") {
			t.Errorf("%s: %v, want INVALID_EVENT naming the rev", name, err)
		}
	}
	if _, err := r.Append(ctx, -1, ev("e", 5)); !errors.Is(err, store.ErrInvalidEvent) {
		t.Fatalf("negative expectedRev: %v, want INVALID_EVENT", err)
	}
	if got := r.Rev(); got != 3 {
		t.Fatalf("Rev() = %d, want 3", got)
	}
}

// TestWritesNeedTheLease: appends and artifact writes without a lease fail
// NOT_OWNER; through a read-only handle they fail ErrReadOnly; after
// Release they fail NOT_OWNER again.
func TestWritesNeedTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, _ := newBackend(t)
	rec, err := b.CreateRun(ctx, "r", store.Policy{})
	must(t, err)
	defer rec.Close()
	if _, err := rec.Append(ctx, 0, ev("a", 1)); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("append without a lease: %v", err)
	}
	if _, err := rec.PutArtifact(ctx, []byte("x"), "text/plain", ""); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("artifact without a lease: %v", err)
	}
	ro, err := b.OpenRunReadOnly(ctx, "r")
	must(t, err)
	defer ro.Close()
	if _, err := ro.Lock(ctx); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("Lock on a read-only handle: %v", err)
	}
	own, err := rec.Lock(ctx)
	must(t, err)
	if _, err := rec.Append(ctx, 0, ev("a", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Append(ctx, 1, ev("b", 1)); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("append through a read-only handle: %v", err)
	}
	must(t, own.Release())
	if _, err := rec.Append(ctx, 1, ev("b", 1)); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("append after Release: %v", err)
	}
	if _, err := b.OpenRun(ctx, "nope", store.Policy{}); !errors.Is(err, store.ErrRunNotFound) {
		t.Fatalf("OpenRun of a missing run: %v", err)
	}
	if _, err := b.CreateRun(ctx, "r", store.Policy{}); !errors.Is(err, store.ErrRunExists) {
		t.Fatalf("CreateRun twice: %v", err)
	}
	ids, err := b.ListRuns(ctx)
	if err != nil || len(ids) != 1 || ids[0] != "r" {
		t.Fatalf("ListRuns = %v, %v", ids, err)
	}
}

// TestSessionsCommitSynchronously: the backend's sessions wait for the
// commit to be flushed even when the connection's defaults say otherwise
// (PGOPTIONS here); a URL that sets synchronous_commit is obeyed.
func TestSessionsCommitSynchronously(t *testing.T) {
	t.Setenv("PGOPTIONS", "-c synchronous_commit=off")
	c := testConfig(t, testURL(t), testSchema(t))
	c.LocalDir = t.TempDir()
	for _, tt := range []struct{ param, want string }{{"", "on"}, {"&synchronous_commit=local", "local"}} {
		cc := c
		cc.URL += tt.param
		b := openBackend(t, cc, "ns")
		var v string
		must(t, b.pool.QueryRow(context.Background(), `SHOW synchronous_commit`).Scan(&v))
		if v != tt.want {
			t.Errorf("URL %s: synchronous_commit = %s, want %s", cc.URL, v, tt.want)
		}
	}
}

// TestOpenURL: a storage setting is told apart from a directory, and
// OpenURL opens the database it names.
func TestOpenURL(t *testing.T) {
	for s, want := range map[string]bool{"postgres://h/d": true, "postgresql://h/d": true, ".obversa": false, "/var/obversa": false, "postgres:x": false} {
		if IsURL(s) != want {
			t.Errorf("IsURL(%q) = %v", s, !want)
		}
	}
	u := testURL(t) + "&schema=" + testSchema(t)
	b, err := OpenURL(context.Background(), u, t.TempDir(), "ns")
	must(t, err)
	defer b.Close()
	if _, err := b.CreateRun(context.Background(), "r", store.Policy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenURL(context.Background(), "postgres://u:pw@h/d", t.TempDir(), "ns"); !errors.Is(err, ErrConfig) {
		t.Fatalf("OpenURL with a password: %v", err)
	}
}
