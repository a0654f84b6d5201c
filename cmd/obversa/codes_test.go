package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/obversa/obversa/host/watchdog"
)

// TestRefusalCodesApprove: a second decision on one position is a refusal
// with its own code (APPROVAL_DECIDED, exit 2), not a usage error, and
// `approve --json` on a paused run prints every documented field,
// request included (docs/cli.md, "Scripting with --json").
func TestRefusalCodesApprove(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  approval = [\"a\"]\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n    retry_safe = true\n  }\n}\n")
	if r := obversa(t, dir, "run", "--run-id", "codes", runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runDir := runDirOf(runFile, "codes")
	r := obversa(t, dir, "approve", "--json", "--no-resume", runDir, "dag/a/1")
	var first map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &first); r.code != 0 || err != nil {
		t.Fatalf("approve: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	for _, k := range []string{"position", "decision", "recorded_by", "request"} {
		if _, ok := first[k]; !ok {
			t.Errorf("approve --json has no %q: %s", k, r.stdout)
		}
	}
	r = obversa(t, dir, "approve", "--json", "--no-resume", "--deny", runDir, "dag/a/1")
	ref := decodeRefusal(t, r)
	if r.code != exitUsage || ref.Code != CodeApprovalDecided || !strings.Contains(ref.Message, "already decided: allow") {
		t.Errorf("second approve: exit %d, %+v; want exit 2 %s naming allow", r.code, ref, CodeApprovalDecided)
	}
}

// TestRefusalCodesCommandLine: a bad command line that asked for --json
// gets the JSON refusal whatever command it named, or none; an argument
// after "--" does not ask for it.
func TestRefusalCodesCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{{"--bogus", "--json"}, {"nosuch", "--json"}, {"--bogus", "status", "--json"}} {
		refusalOf(t, dir, exitUsage, CodeUsage, args...)
	}
	if r := obversa(t, dir, "--bogus", "--", "--json"); r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "unknown flag: --bogus") {
		t.Errorf("obversa --bogus -- --json: exit %d, stdout %q, stderr %q; want the plain refusal", r.code, r.stdout, r.stderr)
	}
}

// TestRefusalCodeNotAnswered: an approval a live worker did not answer
// carries its own code, not ERROR.
func TestRefusalCodeNotAnswered(t *testing.T) {
	err := failedErr(fmt.Errorf("%w: the run's worker took request r but did not answer", watchdog.ErrNotAnswered))
	if got := refusalCode(err, exitFailed); got != "APPROVAL_NOT_ANSWERED" {
		t.Errorf("code %q, want APPROVAL_NOT_ANSWERED", got)
	}
}

// decodeRefusal decodes the one refusal object r printed on stdout.
func decodeRefusal(t *testing.T, r result) refusalObject {
	t.Helper()
	var ref refusalObject
	if err := json.Unmarshal([]byte(r.stdout), &ref); err != nil {
		t.Errorf("not one refusal object (exit %d): stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	return ref
}

// TestStorageNotFoundIsNotPluginMissing: when what cannot be found is on
// the way to the plugin cache under the storage directory (/proc/self
// takes no new directories), the refusal says so instead of calling an
// existing plugin binary missing.
func TestStorageNotFoundIsNotPluginMissing(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
	r := obversa(t, dir, "run", "--json", "--storage", "/proc/self", runFile)
	ref := decodeRefusal(t, r)
	if r.code != exitUsage || ref.Code == "PLUGIN_MISSING" || !strings.Contains(ref.Message, "plugin cache") {
		t.Errorf("exit %d, %+v; want a refusal naming the plugin cache, not PLUGIN_MISSING", r.code, ref)
	}
}
