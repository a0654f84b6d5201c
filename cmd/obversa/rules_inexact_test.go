package main

import (
	"strings"
	"testing"
)

// inexactEngine is an engine on cmd-engine whose command answers by its
// prompt: "big" with a structured result holding an integer no IEEE 754
// double holds exactly (an id, as CLIs print them), "max" with usage at
// the largest count the record holds exactly (2^53 − 1), "over" with
// usage one past it.
const inexactEngine = `
plugin "cli" {
  type   = "engine"
  path   = "BIN/cmd-engine"
  config = {
    command = ["sh", "-c", "p=$(cat); case \"$p\" in big) printf '{\"s\":{\"id\":123456789012345678901234567890},\"u\":3}';; max) printf '{\"s\":\"ok\",\"u\":9007199254740991}';; over) printf '{\"s\":\"ok\",\"u\":9007199254740992}';; esac"]
    output  = "json"
    fields  = { structured = "s", usage_input = "u", usage_output = "u" }
  }
}
lane "cli" {
  requested = { adapter = "cli", provider = "local", model_family = "sh", model = "m1", tools = [] }
}
`

// TestResultTheRecordCannotHoldExactly: what an engine answers is kept
// in the record only as RFC 8785 canonical JSON, which cannot hold every
// number exactly. A result the record refuses for that fails its node,
// like a result too large or holding a secret, and the run goes on: the
// plugin answered, so the attempt is not cut off, and the worker does not
// crash on it. Usage counts beyond 2^53 − 1 are refused as the plugin's
// protocol violation, and totals of counts the record holds stop at 2^53
// − 1 instead of breaking the run's end.
func TestResultTheRecordCannotHoldExactly(t *testing.T) {
	runFile, dir := rulesRun(t, "", "", inexactEngine+`
graph "dag" {
  retry_cap_per_node = 0
  node "big" {
    lane   = "cli"
    prompt = "big"
  }
  node "over" {
    lane   = "cli"
    prompt = "over"
  }
  node "m1" {
    lane   = "cli"
    prompt = "max"
  }
  node "m2" {
    lane       = "cli"
    prompt     = "max"
    depends_on = ["m1"]
  }
  node "m3" {
    lane       = "cli"
    prompt     = "max"
    depends_on = ["m2"]
  }
}
`)
	r := obversa(t, dir, "run", "--run-id", "inexact", runFile)
	runDir := runDirOf(runFile, "inexact")
	if r.code != exitFailed {
		t.Fatalf("run: exit %d, want %d (failed): %s\n%s", r.code, exitFailed, r.stderr, strings.Join(eventLines(t, runDir), "\n"))
	}
	for _, e := range recorded(t, runDir, "run:worker-exited") {
		if e["reason"] == "crash" {
			t.Errorf("the worker crashed: %v", e)
		}
	}
	if p := recorded(t, runDir, "graph:node-paused"); len(p) != 0 {
		t.Errorf("positions paused %v: an answered call is not cut off", p)
	}
	failed := map[string]map[string]any{}
	for _, f := range recorded(t, runDir, "graph:node-failed") {
		failed[f["node"].(string)] = f
	}
	if f := failed["big"]; f == nil || f["code"] != "INVALID_EVENT" || !strings.Contains(f["message"].(string), "cannot be represented exactly") {
		t.Errorf("big failed %v, want INVALID_EVENT saying a number cannot be represented exactly", f)
	}
	if f := failed["over"]; f == nil || f["code"] != "EFFECT_FAILED" || !strings.Contains(f["message"].(string), "is 9007199254740992, out of range") {
		t.Errorf("over failed %v, want EFFECT_FAILED naming the usage count out of range", f)
	}
	if len(failed) != 2 {
		t.Errorf("failed nodes %v, want big and over", failed)
	}
	// big's line says its code once.
	if line := lineOf(r.stdout+r.stderr, "big:"); !strings.Contains(line, "INVALID_EVENT") {
		t.Errorf("no line names big's failure:\n%s%s", r.stdout, r.stderr)
	} else {
		noRepeats(t, "big's line", line)
	}
	// The refused call stays in the record with its usage, without its parts.
	var bigCall map[string]any
	for _, c := range recorded(t, runDir, "graph:engine-attempt-recorded") {
		if c["node"] == "big" {
			bigCall = c
		}
	}
	if bigCall == nil || bigCall["refused"] != "INVALID_EVENT" || bigCall["parts"] != nil || bigCall["usage"].(map[string]any)["input"] != float64(3) {
		t.Errorf("big's engine call %v, want it kept with its usage, refused INVALID_EVENT", bigCall)
	}
	// Three calls of 2^53 − 1 tokens each: the total stops there.
	fin := recorded(t, runDir, "graph:run-finished")
	if len(fin) != 1 {
		t.Fatalf("run-finished %v, want one", fin)
	}
	usage := fin[0]["usage"].(map[string]any)
	if usage["input"] != float64(1<<53-1) || usage["output"] != float64(1<<53-1) {
		t.Errorf("run-finished usage %v, want input and output 9007199254740991", usage)
	}
	if v := obversa(t, dir, "verify", runDir); v.code != 0 {
		t.Errorf("verify: %s %s", v.stdout, v.stderr)
	}
}
