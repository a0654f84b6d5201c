package main

import (
	"strings"
	"testing"
)

// TestResumeReconciledFlag: --reconciled takes done or not-done and
// answers a position; anything else is refused before the run is read,
// naming the value and the choices. A --result that is not JSON is
// refused before the run is read too, quoting no more than the start of
// a long value and saying how long it was.
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
		{[]string{"--position", "dag/a/1", "--reconciled=done", "--result", "{x"}, `--result "{x" is not JSON (invalid character 'x' looking for beginning of object key string): give the node's result as JSON, text as a quoted string`},
		{[]string{"--position", "dag/a/1", "--reconciled=done", "--result", strings.Repeat("y", 40000)}, "… (40000 bytes in all) is not JSON"},
	}
	for _, tt := range tests {
		r := obversa(t, dir, append(append([]string{"resume"}, tt.args...), "no-such-run")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stderr, "RUN_NOT_FOUND") {
			t.Errorf("resume %.80v: exit %d, stderr %.300q; want exit %d naming %q", tt.args, r.code, r.stderr, exitUsage, tt.want)
		}
		if len(r.stderr) > 1000 {
			t.Errorf("resume %.80v: a %d-byte refusal; want the value's echo cut", tt.args, len(r.stderr))
		}
	}
}
