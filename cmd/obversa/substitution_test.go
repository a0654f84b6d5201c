package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCallTimeSubstitutionIsFlagged: an engine that answers as a model
// its lane neither requests nor lists in known_substitutions has its
// result kept (the work is done and recorded), and show flags the call,
// in text and as --json's "substituted"; an answer as a listed
// substitution, or as the target, is not flagged.
func TestCallTimeSubstitutionIsFlagged(t *testing.T) {
	runFile, dir := rulesRun(t, `{ responses = [
    { node = "unknown", text = "t", effective = { model = "m9" } },
    { node = "known", text = "t", effective = { model = "m2" } },
  ] }`, "", `
lane "w" {
  requested           = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
  known_substitutions = [{ adapter = "mock", provider = "local", model_family = "scripted", model = "m2", tools = [] }]
}
graph "dag" {
  node "unknown" {
    lane   = "w"
    prompt = "p"
  }
  node "known" {
    lane   = "w"
    prompt = "p"
  }
  node "plain" {
    lane   = "w"
    prompt = "p"
  }
}
`)
	if r := obversa(t, dir, "run", "--run-id", "sub", runFile); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	for node, want := range map[string]bool{"unknown": true, "known": false, "plain": false} {
		r := obversa(t, dir, "show", "--storage", dir+"/.obversa", "sub", node, "--json")
		if r.code != 0 {
			t.Fatalf("show %s --json: exit %d: %s", node, r.code, r.stderr)
		}
		var v struct {
			Status string `json:"status"`
			Calls  []struct {
				Substituted bool `json:"substituted"`
			} `json:"calls"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Calls) != 1 {
			t.Fatalf("show %s --json: %v: %s", node, err, r.stdout)
		}
		if v.Status != "passed" || v.Calls[0].Substituted != want {
			t.Errorf("%s: status %s, substituted %v; want passed, %v", node, v.Status, v.Calls[0].Substituted, want)
		}
		text := obversa(t, dir, "show", "--storage", dir+"/.obversa", "sub", node).stdout
		if got := strings.Contains(text, "(a substitution:"); got != want {
			t.Errorf("show %s says a substitution: %v, want %v:\n%s", node, got, want, text)
		}
	}
}
