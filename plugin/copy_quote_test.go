package plugin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheChangedQuotesThePath checks that the rm a changed cache entry
// is told to run reads back as the entry's path in a shell, whatever the
// storage directory's name holds.
func TestCacheChangedQuotesThePath(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "sp ace", "it's $x")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.Repeat("0", 64))
	if err := os.WriteFile(path, []byte("other bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	msg := cacheChanged(&Copied{Path: path, SHA256: strings.Repeat("0", 64)}).Error()
	_, after, ok := strings.Cut(msg, "(rm ")
	if !ok {
		t.Fatalf("cacheChanged = %q; want an rm it advises", msg)
	}
	word, _, _ := strings.Cut(after, ") and the next run")
	out, err := exec.Command("sh", "-c", "printf %s "+word).Output()
	if err != nil || string(out) != path {
		t.Errorf("sh reads the advised path %s as %q (%v); want %q", word, out, err, path)
	}
}
