package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	if r.code != exitUsage || ref.Code != CodeApprovalDecided || !strings.Contains(ref.Message, "dag/a/1 is already decided: allow by ") ||
		strings.Count(ref.Message, "decided") != 1 {
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

// TestStorageDirectoryIsAFile: a storage.directory that is a regular file,
// or lies under one, is a run-file error at that attribute, from validate
// and run alike, not a bare mkdir failure.
func TestStorageDirectoryIsAFile(t *testing.T) {
	t.Parallel()
	for _, written := range []string{"afile", "afile/runs"} {
		runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
		if err := os.WriteFile(filepath.Join(dir, "afile"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		appendFile(t, runFile, fmt.Sprintf("storage {\n  directory = %q\n}\n", written))
		for _, args := range [][]string{{"validate", "--json", runFile}, {"run", "--json", runFile}} {
			r := obversa(t, dir, args...)
			ref := decodeRefusal(t, r)
			if r.code != exitUsage || ref.Code != CodeRunFileInvalid || len(ref.Diagnostics) == 0 ||
				ref.Diagnostics[0].Summary != "Storage directory is not a directory" || ref.Diagnostics[0].Range == nil {
				t.Errorf("%s with directory %q: exit %d, %+v; want RUN_FILE_INVALID at storage.directory", args[0], written, r.code, ref)
			}
		}
	}
}

// appendFile appends text to the file at path.
func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// TestKnownSecretTooShort: a variable named in known_secrets_from_env
// whose value is shorter than MinKnownSecretBytes is a run-file error
// naming the variable, from validate and run alike, instead of every run
// being refused for an event that "contains a known secret"; a long
// enough value is accepted.
func TestKnownSecretTooShort(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
	appendFile(t, runFile, "storage {\n  known_secrets_from_env = [\"OBVERSA_SHORT_TOKEN\"]\n}\n")
	for _, args := range [][]string{{"validate", "--json", runFile}, {"run", "--json", runFile}} {
		r := obversaEnv(t, dir, []string{"OBVERSA_SHORT_TOKEN=e"}, args...)
		ref := decodeRefusal(t, r)
		if r.code != exitUsage || ref.Code != CodeRunFileInvalid || len(ref.Diagnostics) == 0 ||
			ref.Diagnostics[0].Summary != "Known secret OBVERSA_SHORT_TOKEN is too short" || !strings.Contains(ref.Diagnostics[0].Detail, "at least 8 bytes") {
			t.Errorf("%s with a 1-byte secret: exit %d, %+v; want RUN_FILE_INVALID naming the variable", args[0], r.code, ref)
		}
	}
	if r := obversaEnv(t, dir, []string{"OBVERSA_SHORT_TOKEN=12345678"}, "validate", runFile); r.code != 0 {
		t.Errorf("validate with an 8-byte secret: exit %d: %s", r.code, r.stderr)
	}
}

// TestNamespaceFlagIsAUsageError: a --namespace that is not an id is the
// operator's mistake, refused with exit 2 naming the flag by every command
// that reads stored runs, not exit 1 as if a run had failed.
func TestNamespaceFlagIsAUsageError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	refusalOf(t, dir, exitUsage, "INVALID_ID", "--namespace", "a/b", "status", "--json", "r1")
	for _, ns := range []string{"", "a/b", "../x"} {
		for _, args := range [][]string{
			{"runs"}, {"status", "r1"}, {"events", "r1"}, {"show", "r1"}, {"verify", "r1"}, {"resume", "r1"},
			{"stop", "r1"}, {"approve", "r1", "dag/a/1"}, {"logs", "r1"}, {"preflight", "r1"}, {"ui"},
		} {
			args = append([]string{"--namespace", ns}, args...)
			r := obversa(t, dir, args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "Error: --namespace: INVALID_ID") {
				t.Errorf("%q: exit %d, stderr %q; want exit %d naming --namespace", args, r.code, r.stderr, exitUsage)
			}
		}
	}
}

// TestWrongArgumentCountShowsUsage: a command given too few or too many
// arguments says how it is called, not only cobra's count.
func TestWrongArgumentCountShowsUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "usage: obversa run [--run-id ID] [--json] FILE"},
		{[]string{"status", "a", "b"}, "usage: obversa status [--json] [--watch] RUN"},
		{[]string{"show", "a", "b", "c"}, "usage: obversa show [--json] RUN [NODE]"},
		{[]string{"approve", "r"}, "usage: obversa approve [--deny]"},
		{[]string{"plugin", "lock"}, "usage: obversa plugin lock [--upgrade] [--json] FILE"},
		{[]string{"version", "x"}, "usage: obversa version [--json]"},
	} {
		r := obversa(t, dir, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("obversa %q: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, exitUsage, tc.want)
		}
	}
}
