package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/obversa/obversa/store"
)

var artifactCases = []testCase{
	{"ArtifactRoundTrip", testArtifactRoundTrip},
	{"ArtifactIntegrity", testArtifactIntegrity},
	{"ArtifactRehashedOnRead", testArtifactRehash},
	{"ArtifactInvalid", testArtifactInvalid},
}

// testArtifactRoundTrip: an artifact is addressed by the SHA-256 of its
// bytes, reads back the same through any handle, and the same bytes stored
// twice are one artifact.
func testArtifactRoundTrip(t *testing.T, s *suite) {
	ctx := context.Background()
	b, r := s.owned(t, "art", store.Policy{})
	data := []byte("artifact bytes\x00\xff")
	ref, err := r.PutArtifact(ctx, data, "application/octet-stream", "test")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := store.ArtifactRef{Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data)), MediaType: "application/octet-stream", Purpose: "test"}
	if ref != want {
		t.Fatalf("ref %+v, want %+v", ref, want)
	}
	again, err := r.PutArtifact(ctx, data, "application/octet-stream", "test")
	if err != nil || again != ref {
		t.Fatalf("storing the same bytes again: %+v, %v", again, err)
	}
	empty, err := r.PutArtifact(ctx, nil, "text/plain", "empty")
	if err != nil || empty.Size != 0 {
		t.Fatalf("empty artifact: %+v, %v", empty, err)
	}
	mustAppend(t, r, 0, ev("uses", map[string]any{"result": ref, "log": empty}))
	other := open(t, b, "art", store.Policy{})
	for _, c := range []struct {
		ref  store.ArtifactRef
		want []byte
	}{{ref, data}, {empty, nil}} {
		got, err := other.ReadArtifact(ctx, c.ref)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Fatalf("ReadArtifact(%s) through another handle: %q, %v", c.ref.Digest, got, err)
		}
	}
	rep, err := b.Verify(ctx, "art")
	if err != nil || rep.Artifacts != 2 || len(rep.Faults) != 0 {
		t.Fatalf("Verify: %v %+v", err, rep)
	}
}

// testArtifactIntegrity: a reference whose digest is not stored is
// ARTIFACT_NOT_FOUND; one whose size or digest is malformed, or whose
// size does not match what is stored, is ARTIFACT_INTEGRITY.
func testArtifactIntegrity(t *testing.T, s *suite) {
	ctx := context.Background()
	b, r := s.owned(t, "integ", store.Policy{})
	ref, err := r.PutArtifact(ctx, []byte("stored"), "text/plain", "t")
	if err != nil {
		t.Fatal(err)
	}
	missing := sha256.Sum256([]byte("never stored"))
	tests := []struct {
		name string
		ref  store.ArtifactRef
		want error
	}{
		{"not stored", store.ArtifactRef{Digest: "sha256:" + hex.EncodeToString(missing[:]), Size: 12}, store.ErrArtifactNotFound},
		{"wrong size", store.ArtifactRef{Digest: ref.Digest, Size: ref.Size + 1}, store.ErrArtifactIntegrity},
		{"negative size", store.ArtifactRef{Digest: ref.Digest, Size: -1}, store.ErrArtifactIntegrity},
		{"malformed digest", store.ArtifactRef{Digest: "sha256:XYZ", Size: 6}, store.ErrArtifactIntegrity},
		{"other algorithm", store.ArtifactRef{Digest: "md5:" + ref.Digest[7:], Size: 6}, store.ErrArtifactIntegrity},
	}
	for _, tt := range tests {
		if _, err := r.ReadArtifact(ctx, tt.ref); !errors.Is(err, tt.want) {
			t.Errorf("%s: ReadArtifact = %v, want %v", tt.name, err, tt.want)
		}
	}
	// A reference to a missing artifact in the record is a Verify fault.
	mustAppend(t, r, 0, ev("ref", map[string]any{"x": tests[0].ref}))
	rep, err := b.Verify(ctx, "integ")
	if !errors.Is(err, store.ErrArtifactNotFound) || len(rep.Faults) != 1 || rep.Faults[0].Code != "ARTIFACT_NOT_FOUND" || rep.Faults[0].Rev != 1 {
		t.Fatalf("Verify with a missing artifact: %v %+v", err, rep)
	}
}

// testArtifactRehash: stored bytes changed behind the backend's back are
// found on every read (ARTIFACT_INTEGRITY) and by Verify.
func testArtifactRehash(t *testing.T, s *suite) {
	if s.damage == nil {
		t.Skip("the backend gave no DamageFunc (storetest.WithDamage)")
	}
	ctx := context.Background()
	b, r := s.owned(t, "rehash", store.Policy{})
	ref, err := r.PutArtifact(ctx, []byte("original"), "text/plain", "t")
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, r, 0, ev("ref", map[string]any{"x": ref}))
	s.damage(t, b, "rehash", ref)
	if _, err := r.ReadArtifact(ctx, ref); !errors.Is(err, store.ErrArtifactIntegrity) || store.Code(err) != "ARTIFACT_INTEGRITY" {
		t.Fatalf("ReadArtifact of damaged bytes: %v", err)
	}
	rep, err := b.Verify(ctx, "rehash")
	if !errors.Is(err, store.ErrArtifactIntegrity) || len(rep.Faults) != 1 || rep.Faults[0].Artifact != ref.Digest {
		t.Fatalf("Verify with a damaged artifact: %v %+v", err, rep)
	}
}

// testArtifactInvalid: a malformed media type or purpose is refused.
func testArtifactInvalid(t *testing.T, s *suite) {
	ctx := context.Background()
	_, r := s.owned(t, "inv", store.Policy{})
	for _, c := range []struct{ media, purpose string }{
		{"not a media type", "p"},
		{"", "p"},
		{"text/plain", "line\nbreak"},
		{"text/plain", string(make([]byte, 300))},
	} {
		if _, err := r.PutArtifact(ctx, []byte("x"), c.media, c.purpose); !errors.Is(err, store.ErrInvalidArtifact) {
			t.Errorf("PutArtifact(%q, %q): %v, want INVALID_ARTIFACT", c.media, c.purpose, err)
		}
	}
}
