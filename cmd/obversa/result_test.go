package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/obversa/obversa/host/runstate"
)

// TestSummaryCutsNodeErrorsOnRunes: the line naming why a node failed is
// bounded, cut on a rune boundary and marked "…", so a long multibyte
// engine message never reaches the terminal as half a character.
func TestSummaryCutsNodeErrorsOnRunes(t *testing.T) {
	res := &runstate.Result{Kind: runstate.KindFail, Code: "DAG_NODE_FAILED", Output: &runstate.Output{
		Failed: []string{"draft"},
		Errors: map[string]runstate.NodeError{"draft": {Code: "ENGINE_FAILED", Message: strings.Repeat("日本", 200)}},
	}}
	got := summary(res, "dir")
	if !utf8.ValidString(got) {
		t.Errorf("summary is not valid UTF-8: %q", got)
	}
	line := got[strings.Index(got, "\n  draft:"):]
	if !strings.HasSuffix(line, "…") || len(line) > 300+len("…") {
		t.Errorf("failed node's line is %d bytes (%q), want at most 300 and marked with …", len(line), line)
	}
}

// TestSummaryPreflightPauseSaysWhy: a preflight pause's human result
// quotes its cause from the record (a probe's failure, a plugin's stderr
// tail), not only the command that carries the run on.
func TestSummaryPreflightPauseSaysWhy(t *testing.T) {
	res := &runstate.Result{Kind: runstate.KindPaused, Code: "PREFLIGHT_PAUSED", Output: &runstate.Output{
		PreflightEventID: "preflight-pause-1",
		Message:          `lane "writer" target python/hosted/echo/echo-1: health check failed: launcher: a.py changed`,
	}}
	got := summary(res, "dir")
	for _, want := range []string{
		`paused PREFLIGHT_PAUSED: lane "writer" target python/hosted/echo/echo-1: health check failed: launcher: a.py changed`,
		"\n  next: fix the cause, then obversa resume --preflight preflight-pause-1 dir",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary is %q, want it to hold %q", got, want)
		}
	}
}

// TestSummaryPauseSaysItsCodeOnce: a pause whose message is a typed
// error's text, starting with the same code, names the code once.
func TestSummaryPauseSaysItsCodeOnce(t *testing.T) {
	res := &runstate.Result{Kind: runstate.KindPaused, Code: "WORKSPACE_LEASE", Output: &runstate.Output{
		Message: `WORKSPACE_LEASE: workspace lease /w/.obversa/workspace.lease is held by "run-1"`,
	}}
	got := summary(res, "dir")
	if want := `paused WORKSPACE_LEASE: workspace lease /w/.obversa/workspace.lease is held by "run-1"`; got != want {
		t.Errorf("summary is %q, want %q", got, want)
	}
}

// TestSummaryFailureSaysItsCodeOnce: a failed run whose message is a typed
// error's text, starting with the same code (a cache entry that changed
// under a restarted worker), names the code once.
func TestSummaryFailureSaysItsCodeOnce(t *testing.T) {
	res := &runstate.Result{Kind: runstate.KindFail, Code: "PLUGIN_CHANGED", Output: &runstate.Output{
		Message: `PLUGIN_CHANGED: plugin "mock": cached binary /s/plugins/sha256/af80 has sha256 8f29, pinned af80`,
	}}
	got := summary(res, "dir")
	if want := `failed PLUGIN_CHANGED: plugin "mock": cached binary /s/plugins/sha256/af80 has sha256 8f29, pinned af80`; got != want {
		t.Errorf("summary is %q, want %q", got, want)
	}
}
