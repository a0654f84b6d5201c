package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestArtifactRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRun(t, Policy{})
	data := []byte(`{"answer":42}`)
	ref, err := r.PutArtifact(ctx, data, "application/json", "engine-result")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := ArtifactRef{Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data)), MediaType: "application/json", Purpose: "engine-result"}
	diff(t, "ref", want, ref)
	blob := filepath.Join(r.Dir(), artifactsDir, blobsDir, hex.EncodeToString(sum[:]))
	if got := readBytes(t, blob); string(got) != string(data) {
		t.Fatalf("blob holds %q", got)
	}
	got, err := r.ReadArtifact(ctx, ref)
	if err != nil || string(got) != string(data) {
		t.Fatalf("ReadArtifact = %q, %v", got, err)
	}
	// Storing the same bytes again (other media type) writes nothing new.
	ref2, err := r.PutArtifact(ctx, data, "text/plain", "copy")
	if err != nil || ref2.Digest != ref.Digest {
		t.Fatalf("second put: %+v, %v", ref2, err)
	}
	if tmps, _ := os.ReadDir(filepath.Join(r.Dir(), artifactsDir, tmpDir)); len(tmps) != 0 {
		t.Fatalf("temporary files left: %v", tmps)
	}
	// Through a reopened run too.
	r2 := reopen(t, r, Policy{})
	if got, err := r2.ReadArtifact(ctx, ref); err != nil || string(got) != string(data) {
		t.Fatalf("ReadArtifact after reopen = %q, %v", got, err)
	}
}

func TestArtifactIntegrity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRun(t, Policy{})
	ref, err := r.PutArtifact(ctx, []byte("hello artifact"), "text/plain", "p")
	if err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(r.Dir(), artifactsDir, blobsDir, ref.Digest[len("sha256:"):])
	other := sha256.Sum256([]byte("other"))
	tests := []struct {
		name   string
		ref    ArtifactRef
		damage func()
		want   error
	}{
		{"intact", ref, nil, nil},
		{"wrong size in the reference", ArtifactRef{Digest: ref.Digest, Size: ref.Size + 1}, nil, ErrArtifactIntegrity},
		{"malformed digest", ArtifactRef{Digest: "md5:abc", Size: 1}, nil, ErrArtifactIntegrity},
		{"upper-case digest", ArtifactRef{Digest: "sha256:" + hex.EncodeToString(other[:])[:63] + "A", Size: 1}, nil, ErrArtifactIntegrity},
		{"negative size", ArtifactRef{Digest: ref.Digest, Size: -1}, nil, ErrArtifactIntegrity},
		{"not stored", ArtifactRef{Digest: "sha256:" + hex.EncodeToString(other[:]), Size: 5}, nil, ErrArtifactNotFound},
		{"bytes changed", ref, func() { writeFile(t, blob, []byte("hello artifacT")) }, ErrArtifactIntegrity},
		{"bytes cut", ref, func() { writeFile(t, blob, []byte("hello")) }, ErrArtifactIntegrity},
		{"blob removed", ref, func() { os.Remove(blob) }, ErrArtifactNotFound},
	}
	for _, tt := range tests { // in order: the damage accumulates
		if tt.damage != nil {
			tt.damage()
		}
		_, err := r.ReadArtifact(ctx, tt.ref)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: ReadArtifact = %v, want %v", tt.name, err, tt.want)
		}
	}
	// Putting the right bytes again repairs the blob.
	if _, err := r.PutArtifact(ctx, []byte("hello artifact"), "text/plain", "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadArtifact(ctx, ref); err != nil {
		t.Fatalf("after re-put: %v", err)
	}
	writeFile(t, blob, []byte("hello artifacT"))
	if _, err := r.PutArtifact(ctx, []byte("hello artifact"), "text/plain", "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadArtifact(ctx, ref); err != nil {
		t.Fatalf("a damaged blob of the right size was not replaced: %v", err)
	}
}

func TestArtifactInvalid(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	for _, tt := range []struct{ media, purpose string }{
		{"", "p"}, {"not a media type", "p"}, {"text/plain", "line\nbreak"},
		{"text/plain", string(make([]byte, 300))},
	} {
		if _, err := r.PutArtifact(context.Background(), []byte("x"), tt.media, tt.purpose); !errors.Is(err, ErrInvalidArtifact) || Code(err) != "INVALID_ARTIFACT" {
			t.Errorf("PutArtifact(media %q, purpose %q) = %v, want INVALID_ARTIFACT", tt.media, tt.purpose, err)
		}
	}
}

// TestArtifactTempLeftovers leaves a temporary file as a crashed writer
// would; the next writer removes it.
func TestArtifactTempLeftovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRun(t, Policy{})
	if _, err := r.PutArtifact(ctx, []byte("a"), "text/plain", "p"); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(r.Dir(), artifactsDir, tmpDir, "blob-crashed")
	writeFile(t, left, []byte("partial"))
	if _, err := r.PutArtifact(ctx, []byte("b"), "text/plain", "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("leftover temporary file still there: %v", err)
	}
}
