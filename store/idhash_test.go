package store

import (
	"hash/fnv"
	"testing"
)

// TestIDHashIsFNV1a pins the id hash: the cache file stores it (doc.go).
func TestIDHashIsFNV1a(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "a", "0b7e2c4e-8a53-4e0c-9f5e-2b8d6f1a9c3d"} {
		h := fnv.New64a()
		h.Write([]byte(id))
		if got := idHash([]byte(id)); got != h.Sum64() {
			t.Errorf("idHash(%q) = %x, FNV-1a says %x", id, got, h.Sum64())
		}
	}
}
