package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTornTailMovedAsideIsSaid: a command that opens a finished run's
// record for writing (resume, stop, approve) moves a torn tail of
// events.jsonl aside to events.jsonl.torn-<time>, and says so — its size
// and where it is — instead of "nothing was changed"; the record's
// committed events are unchanged and the torn bytes are kept whole. A
// second resume, with nothing torn, says nothing was changed.
func TestTornTailMovedAsideIsSaid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args func(runDir string) []string
		want string // also said, "" for nothing more
	}{
		{"resume", func(d string) []string { return []string{"resume", d} }, "the run already ended; nothing else was changed"},
		{"stop", func(d string) []string { return []string{"stop", d} }, ""},
		{"approve", func(d string) []string { return []string{"approve", d, "dag/a/1"} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
			if r := obversa(t, dir, "run", "--run-id", "f", runFile); r.code != 0 {
				t.Fatalf("run: exit %d: %s", r.code, r.stderr)
			}
			runDir := runDirOf(runFile, "f")
			events := filepath.Join(runDir, "events.jsonl")
			committed, err := os.ReadFile(events)
			if err != nil {
				t.Fatal(err)
			}
			torn := []byte(`{"batch`)
			if err := os.WriteFile(events, append(append([]byte{}, committed...), torn...), 0o644); err != nil {
				t.Fatal(err)
			}
			r := obversa(t, dir, tt.args(runDir)...)
			moved, _ := filepath.Glob(filepath.Join(runDir, "events.jsonl.torn-*"))
			if len(moved) != 1 {
				t.Fatalf("%d torn tails moved aside, want 1: exit %d: %s", len(moved), r.code, r.stderr)
			}
			if b, err := os.ReadFile(moved[0]); err != nil || !bytes.Equal(b, torn) {
				t.Errorf("moved tail %q (%v), want %q", b, err, torn)
			}
			if b, err := os.ReadFile(events); err != nil || !bytes.Equal(bytes.TrimRight(b, "\x00"), committed) {
				t.Errorf("events.jsonl changed beyond its torn tail (%v)", err)
			}
			say := "events.jsonl ended in a torn write (7 bytes after the last committed event, an append cut off before it was committed): moved them to " + moved[0] + "; nothing recorded was lost"
			if !strings.Contains(r.stderr, say) || (tt.want != "" && !strings.Contains(r.stderr, tt.want)) || strings.Contains(r.stderr, "nothing was changed") {
				t.Errorf("%s: stderr %q; want %q and %q", tt.name, r.stderr, say, tt.want)
			}
			if tt.name != "resume" {
				return
			}
			if r := obversa(t, dir, "resume", runDir); !strings.Contains(r.stderr, "the run already ended; nothing was changed") || strings.Contains(r.stderr, "torn write") {
				t.Errorf("second resume: stderr %q; want nothing was changed", r.stderr)
			}
		})
	}
}
