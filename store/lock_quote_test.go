package store

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/obversa/obversa/internal/shellquote"
)

// TestLockFileErrQuotesThePath checks that the rm a lock that is not a
// file is told to run reads back as the lock's path in a shell, whatever
// the storage directory's name holds.
func TestLockFileErrQuotesThePath(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/srv/runs/r1/lock", "/tmp/sp ace/it's $x/run.lock"} {
		msg := lockFileErr("opening the run lock", path, syscall.EISDIR).Error()
		_, after, ok := strings.Cut(msg, "(rm -r ")
		if !ok {
			t.Fatalf("lockFileErr(%q) = %q; want an rm -r it advises", path, msg)
		}
		word, _, _ := strings.Cut(after, ") and the next command")
		if word != shellquote.Quote(path) {
			t.Errorf("lockFileErr(%q) advises rm -r %s; want %s", path, word, shellquote.Quote(path))
		}
		out, err := exec.Command("sh", "-c", "printf %s "+word).Output()
		if err != nil || string(out) != path {
			t.Errorf("sh reads the advised path %s as %q (%v); want %q", word, out, err, path)
		}
	}
}
