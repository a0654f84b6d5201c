package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestChildByHand: `obversa worker` and `obversa keeper` started by a
// person (no watchdog's line on stdin, or no run named) are usage errors
// saying the watchdog starts them and what to run instead, not "EOF".
func TestChildByHand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	for _, args := range [][]string{
		{"worker", "--run-dir", runDir},
		{"worker"},
		{"keeper", "--run-dir", runDir},
		{"keeper"},
	} {
		r := obversa(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "started by the watchdog") || !strings.Contains(r.stderr, "obversa resume RUN") {
			t.Errorf("obversa %v by hand: exit %d, stderr %q; want %d saying the watchdog starts it", args, r.code, r.stderr, exitUsage)
		}
	}
}
