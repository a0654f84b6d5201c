package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestRefusedIntermediateRecord: an engine target fails auth with a
// message holding a known secret (made by its command, so the run file
// does not hold it), so the record refuses the intermediate append of the
// failed call and the target's retirement (KNOWN_SECRET). Whether the
// attempt runs alone on the executor's loop (runOwn: a one-node graph) or
// on an attempt goroutine (two nodes at once), the node then fails as one
// whose result the record refused: KNOWN_SECRET, with one line saying the
// record refused the engine attempt and why, the call is kept with its refusal and without what
// was refused, no fallback is tried, and the run ends failed without its
// worker stopping.
func TestRefusedIntermediateRecord(t *testing.T) {
	t.Parallel()
	const secret = "hunter2hunter2"
	node := func(id string) string {
		return `  node "` + id + `" {
    lane       = "w"
    prompt     = "hello"
    retry_safe = true
  }
`
	}
	for _, tc := range []struct {
		name, nodes string
		failed      int
	}{
		{"lone attempt", node("a"), 1},
		{"attempt goroutines", node("a") + node("b"), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runFile, dir := rulesRun(t, "", "auth", `plugin "leaky" {
  type   = "engine"
  path   = "BIN/cmd-engine"
  config = {
    command  = ["sh", "-c", "printf 'key hunter2%s refused' hunter2 >&2; exit 7"]
    failures = [{ exit_code = 7, kind = "auth" }]
  }
}
storage {
  known_secrets_from_env = ["OBVERSA_TEST_SECRET"]
}
lane "w" {
  requested = { adapter = "leaky", provider = "p1", model_family = "f", model = "m", tools = [] }
  fallbacks = [{ adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }]
}
graph "dag" {
  retry_cap_per_node = 0
`+tc.nodes+`}
`)
			r := obversaEnv(t, dir, []string{"OBVERSA_TEST_SECRET=" + secret}, "run", "--run-id", "ref", runFile)
			runDir := runDirOf(runFile, "ref")
			if _, err := os.Stat(runDir); err != nil {
				t.Fatalf("run: exit %d, no run (%v): %s", r.code, err, r.stderr)
			}
			failed := recorded(t, runDir, "graph:node-failed")
			if r.code != exitFailed || len(failed) != tc.failed {
				t.Fatalf("exit %d, node-failed %v; want exit %d and %d failed nodes: %s", r.code, failed, exitFailed, tc.failed, r.stderr)
			}
			const want = `the record refused the engine attempt: event 1 of 2 (type "graph:engine-attempt-recorded"): field data.message contains the known secret OBVERSA_TEST_SECRET (value withheld)`
			for _, f := range failed {
				if f["code"] != "KNOWN_SECRET" || f["message"] != want {
					t.Errorf("node-failed %v; want KNOWN_SECRET with the one line %q", f, want)
				}
			}
			if n := len(recorded(t, runDir, "run:worker-exited")); n != 0 {
				t.Errorf("%d worker exits: the refusal stopped the worker", n)
			}
			if n := len(recorded(t, runDir, "graph:model-unavailable")); n != 0 {
				t.Errorf("%d model-unavailable events, want none: the record refused the retirement", n)
			}
			calls := recorded(t, runDir, "graph:engine-attempt-recorded")
			if len(calls) != tc.failed {
				t.Fatalf("engine attempts %v, want %d", calls, tc.failed)
			}
			for _, c := range calls {
				if c["refused"] != "KNOWN_SECRET" || c["outcome"] != "failed" || c["message"] != nil {
					t.Errorf("engine attempt %v, want the failed call kept without its message, refused KNOWN_SECRET", c)
				}
			}
			b, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(secret)) {
				t.Fatal("the secret reached the record")
			}
		})
	}
}
