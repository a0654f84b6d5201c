package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	build := func(t *testing.T) (*Run, ArtifactRef, ArtifactRef) {
		r := newTestRun(t, Policy{})
		a, err := r.PutArtifact(ctx, []byte("result text"), "text/plain", "result")
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.PutArtifact(ctx, []byte(`{"parts":[1,2]}`), "application/json", "parts")
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, r.events, 0,
			NewEvent{Type: "graph:node-completed", Data: map[string]any{"node": "a", "result": a}},
			NewEvent{Type: "graph:engine-attempt-recorded", Data: map[string]any{"parts_artifact": b, "nested": []any{map[string]any{"again": a}}}})
		mustAppend(t, r.events, 2, NewEvent{Type: "note", Data: map[string]any{"digest": "not a reference"}})
		r.Close()
		return r, a, b
	}
	blobPath := func(r *Run, ref ArtifactRef) string {
		return filepath.Join(r.Dir(), artifactsDir, blobsDir, ref.Digest[len("sha256:"):])
	}
	t.Run("clean", func(t *testing.T) {
		t.Parallel()
		r, _, _ := build(t)
		rep, err := Verify(ctx, r.Dir())
		if err != nil {
			t.Fatal(err)
		}
		diff(t, "report", Report{Events: 3, Artifacts: 2}, rep)
	})
	t.Run("missing artifact", func(t *testing.T) {
		t.Parallel()
		r, a, _ := build(t)
		os.Remove(blobPath(r, a))
		rep, err := Verify(ctx, r.Dir())
		if !errors.Is(err, ErrArtifactNotFound) {
			t.Fatalf("Verify: %v", err)
		}
		diff(t, "faults", []Fault{{Code: "ARTIFACT_NOT_FOUND", Rev: 1, Artifact: a.Digest, Problem: "no blob is stored under this digest"}}, rep.Faults)
	})
	t.Run("damaged artifact", func(t *testing.T) {
		t.Parallel()
		r, _, b := build(t)
		writeFile(t, blobPath(r, b), []byte(`{"parts":[1,3]}`))
		rep, err := Verify(ctx, r.Dir())
		if !errors.Is(err, ErrArtifactIntegrity) || len(rep.Faults) != 1 || rep.Faults[0].Rev != 2 || rep.Faults[0].Artifact != b.Digest {
			t.Fatalf("Verify: %v, %+v", err, rep)
		}
	})
	t.Run("torn tail is not a fault", func(t *testing.T) {
		t.Parallel()
		r, _, _ := build(t)
		f, _ := os.OpenFile(eventsPath(r), os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString(`{"batch_end":4,"da`)
		f.Close()
		before := readEvents(t, eventsPath(r))
		rep, err := Verify(ctx, r.Dir())
		if err != nil || rep.TornBytes != 18 || rep.Events != 3 || rep.TornReason != "last line is not terminated" {
			t.Fatalf("Verify: %v, %+v", err, rep)
		}
		if string(readEvents(t, eventsPath(r))) != string(before) {
			t.Fatal("Verify changed events.jsonl")
		}
	})
	t.Run("missing run", func(t *testing.T) {
		t.Parallel()
		if _, err := Verify(ctx, filepath.Join(t.TempDir(), "nope")); !errors.Is(err, ErrRunNotFound) {
			t.Fatalf("Verify: %v", err)
		}
	})
}
