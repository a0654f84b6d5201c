package main

import (
	"strings"
	"testing"
)

// TestResumeReconciledFlag: --reconciled takes done or not-done and
// answers a position; anything else is refused before the run is read,
// naming the value and the choices.
func TestResumeReconciledFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--position", "dag/a/1", "--reconciled=maybe"}, `--reconciled="maybe": want done`},
		{[]string{"--position", "dag/a/1", "--reconciled=yes"}, "or not-done"},
		{[]string{"--reconciled=done"}, "add --position POS"},
	}
	for _, tt := range tests {
		r := obversa(t, dir, append(append([]string{"resume"}, tt.args...), "no-such-run")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stderr, "RUN_NOT_FOUND") {
			t.Errorf("resume %v: exit %d, stderr %q; want exit %d naming %q", tt.args, r.code, r.stderr, exitUsage, tt.want)
		}
	}
}
