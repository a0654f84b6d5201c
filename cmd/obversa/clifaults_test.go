package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/host/runview"
)

// TestOutOfRangeFlagIsUsageError: a whole-number or duration flag refuses
// a value below what it can mean or beyond what it holds as it refuses one
// that is no number: exit 2, naming the flag, the value and the range,
// before anything is read.
func TestOutOfRangeFlagIsUsageError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"events", "--from", "-5", "r"}, `invalid argument "-5" for "--from" flag: must be a whole number from 1 to 9223372036854775807`},
		{[]string{"events", "--from=0", "r"}, `invalid argument "0" for "--from" flag: must be a whole number from 1 to 9223372036854775807`},
		{[]string{"events", "--from", "x", "r"}, `invalid argument "x" for "--from" flag: must be a whole number from 1 to 9223372036854775807`},
		{[]string{"events", "--from", "99999999999999999999", "r"}, `invalid argument "99999999999999999999" for "--from" flag: must be a whole number from 1 to 9223372036854775807 (revisions count from 1)`},
		{[]string{"events", "--from", "-99999999999999999999", "r"}, `invalid argument "-99999999999999999999" for "--from" flag: must be a whole number from 1 to 9223372036854775807`},
		{[]string{"plugin", "sign", "--protocol", "0", "bin"}, `invalid argument "0" for "--protocol" flag: must be a whole number from 1 to 1`},
		{[]string{"plugin", "sign", "--protocol", "1e30", "bin"}, `invalid argument "1e30" for "--protocol" flag: must be a whole number from 1 to 1 (the plugin protocol versions this obversa speaks`},
		{[]string{"plugin", "sign", "--protocol", "2", "bin"}, `invalid argument "2" for "--protocol" flag: must be a whole number from 1 to 1 (the plugin protocol versions this obversa speaks; it cannot launch a plugin of another)`},
		{[]string{"worker", "--restart", "-1"}, `invalid argument "-1" for "--restart" flag: must be a whole number from 0 to 9223372036854775807`},
		{[]string{"worker", "--restart", "9223372036854775808"}, `invalid argument "9223372036854775808" for "--restart" flag: must be a whole number from 0 to 9223372036854775807`},
		{[]string{"approve", "--timeout", "-5s", "r", "dag/a/1"}, `invalid argument "-5s" for "--timeout" flag: must be a duration above 0 and at most 2562047h0m0s`},
		{[]string{"approve", "--timeout=0s", "r", "dag/a/1"}, `invalid argument "0s" for "--timeout" flag: must be a duration above 0 and at most 2562047h0m0s`},
		{[]string{"approve", "--timeout", "soon", "r", "dag/a/1"}, `invalid argument "soon" for "--timeout" flag: must be a duration above 0 and at most 2562047h0m0s, a number with a unit such as 30s`},
		{[]string{"approve", "--timeout", "99999999999h", "r", "dag/a/1"}, `invalid argument "99999999999h" for "--timeout" flag: must be a duration above 0 and at most 2562047h0m0s`},
		{[]string{"plugin", "conformance", "--timeout", "0", "bin"}, `invalid argument "0" for "--timeout" flag: must be a duration above 0 and at most 2562047h0m0s`},
	} {
		r := obversa(t, dir, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, r.code, r.stdout, r.stderr, exitUsage, tc.want)
		}
	}
}

// TestEmptyPathArgument: a path argument given as "" is refused as a
// usage error that says the path is empty and names what to give, not
// with the system's message for a file without a name.
func TestEmptyPathArgument(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", ""}, `The run file's path is empty (""). Name the run file`},
		{[]string{"run", ""}, `The run file's path is empty (""). Name the run file`},
		{[]string{"plugin", "lock", ""}, `The run file's path is empty (""). Name the run file`},
		{[]string{"plugin", "hash", ""}, `the plugin binary's path is empty (""); name it, for example obversa plugin hash`},
		{[]string{"plugin", "install", ""}, `the plugin archive or directory's path is empty (""); name it, for example obversa plugin install`},
	} {
		r := obversa(t, dir, tc.args...)
		stderr := strings.Join(strings.Fields(r.stderr), " ") // the diagnostics wrap
		if r.code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "Reading  failed") || strings.Contains(stderr, "stat :") {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, exitUsage, tc.want)
		}
	}
}

// TestNodeTableReviewMember: a loop's review member that ran shows what
// its verdict did to its round, beside the verdict; other nodes, and a
// review member that failed as a node, show their status.
func TestNodeTableReviewMember(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		node runview.Node
		want string
	}{
		{"rejected", runview.Node{ID: "config/1/review", Status: runview.StatusPassed, Text: `{"status":"fail"}`,
			Review: &runview.Review{Verdict: "fail", Summary: "No timeout."}},
			"config/1/review rejected verdict fail (round rejected): No timeout."},
		{"accepted", runview.Node{ID: "config/2/review", Status: runview.StatusPassed,
			Review: &runview.Review{Verdict: "pass", Summary: "Fine.", Accepted: true}},
			"config/2/review accepted verdict pass (accepted): Fine."},
		{"no verdict yet", runview.Node{ID: "config/3/review", Status: runview.StatusStarted}, "config/3/review started"},
		{"failed binding reviewer", runview.Node{ID: "config/1/check", Status: runview.StatusFailed,
			Failure: &runview.Failure{Code: "NODE_FAILED", Message: "verdict fail"}, Review: &runview.Review{Verdict: "fail"}},
			"config/1/check failed NODE_FAILED: verdict fail"},
		{"other node", runview.Node{ID: "plan", Status: runview.StatusPassed, Text: "a plan"}, "plan passed a plan"},
	} {
		var b strings.Builder
		printNodeTable(&b, []runview.Node{tc.node, {ID: "config/1/author", Status: runview.StatusPassed}}, 0, "dir")
		first, _, _ := strings.Cut(b.String(), "\n")
		if got := strings.Join(strings.Fields(first), " "); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q (spaces folded)", tc.name, first, tc.want)
		}
	}
}

// TestStorageURLPasswordIsUsageError: a database storage URL holding a
// password, from --storage or OBVERSA_STORAGE_URL, is refused by every
// command as a bad flag value is: exit 2, the password masked.
func TestStorageURLPasswordIsUsageError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--storage", "postgres://x@127.0.0.1:1/db?password=s3cret", "abc"}, "password parameter"},
		{[]string{"runs", "--storage", "postgres://x:s3cret@127.0.0.1:1/db"}, "holds a password"},
		{[]string{"events", "--storage", "postgres://x@127.0.0.1:1/db?password=s3cret", "abc"}, "password parameter"},
		{[]string{"run", "--storage", "postgres://x@127.0.0.1:1/db?password=s3cret", "run.hcl"}, "password parameter"},
	} {
		r := obversa(t, dir, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "s3cret") {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q without the password", tc.args, r.code, r.stderr, exitUsage, tc.want)
		}
	}
}

// TestDescribeNotAPluginIsRefused: `plugin describe` of something that
// is not a plugin binary — missing, a directory, not executable as a
// program, a program that never speaks the handshake — is refused as a
// user input problem (exit 2), as `validate --plugins` refuses a plugin
// that fails to start, naming the path.
func TestDescribeNotAPluginIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte("#!/bin/sh\necho junk\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "text")
	if err := os.WriteFile(text, []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"/bin/true", junk, text, dir, filepath.Join(dir, "missing")} {
		r := obversa(t, dir, "plugin", "describe", bin)
		if r.code != exitUsage || !strings.Contains(r.stderr, filepath.Base(bin)) || r.stdout != "" {
			t.Errorf("describe %s: exit %d, stdout %q, stderr %q; want exit %d naming it", bin, r.code, r.stdout, r.stderr, exitUsage)
		}
	}
}

// TestIDFlagsSuggestAnID: a --run-id or --namespace that is not an id is
// refused (exit 2) with an id to give instead, made of the value: accents
// dropped, refused characters one '-', no separator at its end.
func TestIDFlagsSuggestAnID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--run-id", "dräft✓", "run.hcl"}, "; for example --run-id draft\n"},
		{[]string{"run", "--run-id", "nightly build!", "run.hcl"}, "; for example --run-id nightly-build\n"},
		{[]string{"--namespace", "dräft✓", "runs"}, "; for example --namespace draft\n"},
		{[]string{"--namespace", "", "runs"}, "; for example --namespace default\n"},
	} {
		r := obversa(t, dir, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "INVALID_ID") || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, exitUsage, tc.want)
		}
	}
}

// TestStorageFlagSteppingBackIsRefused: a --storage directory that goes
// into a directory and back out with ".." is refused (exit 2) by every
// command, naming the directory and giving the path it reads as; one that
// climbs from where it starts ("../runs") is taken.
func TestStorageFlagSteppingBackIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const want = `--storage "/root/../etc" goes into "root" and back out of it with "..": where that leads depends on whether "root" is a symbolic link; give the directory itself, for example --storage "/etc"`
	for _, args := range [][]string{
		{"runs"}, {"status", "r1"}, {"events", "r1"}, {"show", "r1"}, {"logs", "r1"}, {"resume", "r1"}, {"stop", "r1"}, {"run", "run.hcl"}, {"ui"},
	} {
		args = append([]string{"--storage", "/root/../etc"}, args...)
		r := obversa(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", args, r.code, r.stderr, exitUsage, want)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "runs", "default", "runs"), 0o700); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, sub, "--storage", "../runs", "runs"); r.code != 0 {
		t.Errorf("--storage ../runs: exit %d: %s", r.code, r.stderr)
	}
}
