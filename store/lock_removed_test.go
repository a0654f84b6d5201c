//go:build unix

package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockLostWhenRunRemoved: a held run lock says it is lost once the
// run's directory is removed or moved, or its events file unlinked, and
// why.
func TestLockLostWhenRunRemoved(t *testing.T) {
	for _, c := range []struct {
		name   string
		remove func(dir string) error
	}{
		{"directory", os.RemoveAll},
		{"events file", func(dir string) error { return os.Remove(filepath.Join(dir, eventsFile)) }},
		{"moved directory", func(dir string) error { return os.Rename(dir, dir+".moved") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newUnownedRun(t, Policy{})
			own, err := r.Lock(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer own.Release()
			l := own.(*runLock)
			lost := l.Lost()
			select {
			case <-lost:
				t.Fatalf("lost before anything was removed: %v", l.LostCause())
			default:
			}
			if err := c.remove(r.Dir()); err != nil {
				t.Fatal(err)
			}
			select {
			case <-lost:
			case <-time.After(time.Minute):
				t.Fatal("the lock did not notice the removal")
			}
			if err := l.LostCause(); !errors.Is(err, ErrRunRemoved) || !strings.Contains(err.Error(), "removed or moved") {
				t.Errorf("cause %v, want ErrRunRemoved saying removed or moved", err)
			}
		})
	}
}
