package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// limitedStorage is the storage block of the result-size tests: an event
// payload of 2 KiB, an artifact of 8 KiB.
const limitedStorage = `
storage {
  max_event_payload_bytes = 2048
  max_batch_bytes         = 65536
  max_artifact_bytes      = 8192
}
`

func TestNodeResultRules(t *testing.T) {
	long := strings.Repeat("x", 3000)
	runFile, dir := rulesRun(t, `{ responses = [{ node = "big", text = "`+long+`" }, { node = "quiet", text = "q", usage = "unknown" }] }`, "", simpleLane+limitedStorage+`
graph "dag" {
  retry_cap_per_node = 0
  node "big" {
    lane   = "w"
    prompt = "a long answer"
  }
  node "quiet" {
    lane   = "w"
    prompt = "no usage"
  }
  node "slow" {
    kind       = "optional"
    binding    = "shell"
    input      = { command = ["sleep", "10"] }
    timeout    = "300ms"
    retry_safe = true
  }
  node "reader" {
    binding    = "shell"
    depends_on = ["big"]
    input      = { command = ["wc", "-c"], stdin = "${input.results.big}" }
    retry_safe = true
  }
}
`)
	r := obversa(t, dir, "run", "--run-id", "res", runFile)
	runDir := runDirOf(runFile, "res")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s\n%s", r.code, r.stderr, strings.Join(eventLines(t, runDir), "\n"))
	}
	var bigArtifact, slowTimeout bool
	for _, c := range recorded(t, runDir, "graph:node-completed") {
		if c["node"] == "big" && c["result_artifact"] != nil && c["result"] == nil {
			bigArtifact = true
		}
		if c["node"] == "reader" {
			if got := strings.TrimSpace(c["result"].(map[string]any)["stdout"].(string)); got != "3000" {
				t.Errorf("reader saw %s bytes of the artifact result, want 3000", got)
			}
		}
	}
	for _, f := range recorded(t, runDir, "graph:node-failed") {
		if f["node"] == "slow" && f["code"] == "TIMEOUT" {
			slowTimeout = true
		}
	}
	if !bigArtifact || !slowTimeout {
		t.Errorf("big kept as artifact: %v; slow failed TIMEOUT: %v", bigArtifact, slowTimeout)
	}
	out := obversa(t, dir, "status", "--json", runDir)
	var rep struct {
		Usage []struct {
			Node  string `json:"node"`
			Usage any    `json:"usage"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	for _, u := range rep.Usage {
		if u.Node == "quiet" && u.Usage != "unknown" {
			t.Errorf("quiet usage %v, want unknown", u.Usage)
		}
	}
	if v := obversa(t, dir, "verify", runDir); v.code != 0 || !strings.Contains(v.stdout, "2 artifacts") {
		t.Errorf("verify: %s %s", v.stdout, v.stderr)
	}
	// show reads the result back from its artifact and lists both
	// artifacts (the parts and the result) with their digests.
	var big struct {
		Text      string `json:"text"`
		Artifacts []struct {
			Digest  string `json:"digest"`
			Purpose string `json:"purpose"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal([]byte(obversa(t, dir, "show", "--json", runDir, "big").stdout), &big); err != nil {
		t.Fatal(err)
	}
	if big.Text != long || len(big.Artifacts) != 2 || !strings.HasPrefix(big.Artifacts[0].Digest, "sha256:") || big.Artifacts[0].Purpose != "engine-parts" || big.Artifacts[1].Purpose != "node-result" {
		t.Errorf("show big: %d bytes of text, artifacts %+v", len(big.Text), big.Artifacts)
	}
	if r := obversa(t, dir, "show", runDir, "big"); !strings.Contains(r.stdout, "artifact: "+big.Artifacts[1].Digest) {
		t.Errorf("show big:\n%s", r.stdout)
	}

	// Larger than the artifact limit: the node fails RESULT_TOO_LARGE.
	huge := strings.Repeat("y", 9000)
	runFile, dir = rulesRun(t, `{ responses = [{ node = "big", text = "`+huge+`" }] }`, "", simpleLane+limitedStorage+`
graph "dag" {
  retry_cap_per_node = 0
  node "big" {
    lane   = "w"
    prompt = "too long"
  }
}
`)
	r = obversa(t, dir, "run", "--run-id", "huge", runFile)
	failed := recorded(t, runDirOf(runFile, "huge"), "graph:node-failed")
	if r.code != exitFailed || len(failed) != 1 || failed[0]["code"] != "RESULT_TOO_LARGE" {
		t.Fatalf("exit %d, node-failed %v: %s", r.code, failed, r.stderr)
	}
	// The call is still in the record, with its usage, without its parts.
	calls := recorded(t, runDirOf(runFile, "huge"), "graph:engine-attempt-recorded")
	if len(calls) != 1 || calls[0]["refused"] != "RESULT_TOO_LARGE" || calls[0]["parts"] != nil || calls[0]["usage"].(map[string]any)["known"] != true {
		t.Fatalf("engine attempts %v, want one with its usage, refused RESULT_TOO_LARGE", calls)
	}
}

// TestRefusedResult: a result holding a known secret is refused by the
// record; the node fails KNOWN_SECRET naming the variable the secret came
// from (not its value), the other node's result (possibly
// settled in the same append) is kept, and the secret is never written.
func TestRefusedResult(t *testing.T) {
	const secret = "hunter2hunter2"
	runFile, dir := rulesRun(t, "", "", simpleLane+`
plugin "leaky" {
  type   = "engine"
  path   = "BIN/cmd-engine"
  config = { command = ["sh", "-c", "printf 'the password is hunter2%s' hunter2"] }
}
lane "l" {
  requested = { adapter = "leaky", provider = "local", model_family = "sh", model = "printf", tools = [] }
}
storage {
  known_secrets_from_env = ["OBVERSA_TEST_SECRET"]
}
graph "dag" {
  retry_cap_per_node = 0
  node "leak" {
    binding    = "shell"
    input      = { command = ["printf", "hunter2%s", "hunter2"] }
    retry_safe = true
  }
  node "fine" {
    binding    = "shell"
    input      = { command = ["printf", "ok"] }
    retry_safe = true
  }
  node "chatty" {
    lane       = "l"
    prompt     = "what is the password?"
    depends_on = ["fine"]
  }
}
`)
	r := obversaEnv(t, dir, []string{"OBVERSA_TEST_SECRET=" + secret}, "run", "--run-id", "sec", runFile)
	runDir := runDirOf(runFile, "sec")
	codes := map[string]any{}
	for _, f := range recorded(t, runDir, "graph:node-failed") {
		codes[f["node"].(string)] = f["code"]
		// The refusal names the variable the secret came from.
		if msg, _ := f["message"].(string); !strings.Contains(msg, "the known secret OBVERSA_TEST_SECRET (value withheld)") {
			t.Errorf("node %s failed %q, want it to name the known secret OBVERSA_TEST_SECRET", f["node"], msg)
		}
	}
	// Each failed node's line says its code once.
	for _, node := range []string{"leak", "chatty"} {
		line := lineOf(r.stdout+r.stderr, node+":")
		if !strings.Contains(line, "KNOWN_SECRET") {
			t.Errorf("no line names node %s's failure:\n%s%s", node, r.stdout, r.stderr)
		}
		noRepeats(t, "node "+node+"'s line", line)
	}
	if r.code != exitFailed || len(codes) != 2 || codes["leak"] != "KNOWN_SECRET" || codes["chatty"] != "KNOWN_SECRET" {
		t.Fatalf("exit %d, node-failed %v: %s", r.code, codes, r.stderr)
	}
	// The engine call whose answer was refused stays in the record with
	// its usage, without its parts.
	calls := recorded(t, runDir, "graph:engine-attempt-recorded")
	if len(calls) != 1 || calls[0]["refused"] != "KNOWN_SECRET" || calls[0]["parts"] != nil || calls[0]["usage"] == nil || calls[0]["outcome"] != "completed" {
		t.Fatalf("engine attempts %v, want chatty's with its usage, refused KNOWN_SECRET", calls)
	}
	if done := recorded(t, runDir, "graph:node-completed"); len(done) != 1 || done[0]["node"] != "fine" {
		t.Fatalf("node-completed %v, want fine", done)
	}
	b, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(secret)) {
		t.Fatal("the secret reached the record")
	}
}
