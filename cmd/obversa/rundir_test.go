package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/store"
)

// TestRunDirSaysWhyNotARun: RUN naming something that exists but is not a
// run — the storage directory, a run directory whose creation was cut
// short before events.jsonl (or is under way), a file — or a path that does
// not exist is refused RUN_NOT_FOUND saying what is there, not as an id
// whose first byte is not allowed.
func TestRunDirSaysWhyNotARun(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".obversa")
	empty := filepath.Join(root, "default", "runs", "r1")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "note.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &globals{storageFlag: root, namespace: defaultNamespace}
	for _, tc := range []struct {
		name, arg string
		want      []string // in the message
		notFound  bool     // wraps store.ErrRunNotFound
	}{
		{"storage directory", root, []string{root + " is a directory without events.jsonl", "runs/<run-id>"}, true},
		{"empty run directory by path", empty, []string{empty + " is a directory without events.jsonl", "cut short"}, true},
		{"empty run directory by id", "r1", []string{empty + " is a directory without events.jsonl", "cut short"}, true},
		{"a file", file, []string{file + " is not a run directory (it is a file)"}, true},
		{"a missing path", filepath.Join(root, "nope", "x"), []string{"no run directory \"" + filepath.Join(root, "nope", "x") + "\" (no such file or directory)"}, true},
		{"a huge missing path", strings.Repeat("a/", 50000), []string{"… (100000 bytes in all)"}, true},
		{"a huge id", strings.Repeat("a", 100000), []string{"… (100000 bytes in all)"}, false},
		{"a missing id", "r2", []string{`no run "r2" under`}, true},
		{"not an id", "a b", []string{`"a b" is neither a run directory nor a run id`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := g.runDir(root, tc.arg)
			if err == nil {
				t.Fatalf("runDir(%q) = nil error", tc.arg)
			}
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitUsage {
				t.Errorf("runDir(%q) = %v, want a usage error (exit %d)", tc.arg, err, exitUsage)
			}
			if got := errors.Is(err, store.ErrRunNotFound); got != tc.notFound {
				t.Errorf("errors.Is(ErrRunNotFound) = %v, want %v: %v", got, tc.notFound, err)
			}
			if errors.Is(err, store.ErrInvalidID) && tc.notFound {
				t.Errorf("refused as an invalid id: %v", err)
			}
			if len(err.Error()) > 2*maxEchoBytes+800 {
				t.Errorf("runDir(%d bytes): the error quotes it whole (%d bytes)", len(tc.arg), len(err.Error()))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestStorageThatIsAFile: --storage naming a file (the run file, by
// mistake) is refused as a usage error saying it is not a storage
// directory — by runs, and by a command given a run id — not as a raw read
// error with exit 1, or as a run missing under it.
func TestStorageThatIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.hcl")
	if err := os.WriteFile(file, []byte("graph \"dag\" {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &globals{storageFlag: file, namespace: defaultNamespace}
	_, err := g.runDir(file, "r1")
	_, _, lerr := g.listRuns(context.Background(), nil)
	for what, err := range map[string]error{"runDir": err, "listRuns": lerr} {
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUsage {
			t.Errorf("%s: %v, want a usage error (exit %d)", what, err, exitUsage)
		}
		if want := `"` + file + `" is a file, not a storage directory`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", what, err, want)
		}
	}
}

// TestRunIDWithoutRecord: `obversa run --run-id ID` where ID's directory
// holds no event — another `obversa run` of the same id between creating
// the directory and taking its lock, or a creation cut short — is refused
// RUN_EXISTS with exit 2 saying so, not RUN_NOT_FOUND with exit 1, and
// never points to `obversa resume`, which cannot carry on an empty record.
func TestRunIDWithoutRecord(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
	for _, tc := range []struct{ id, events string }{{"no-events-file", ""}, {"empty-events-file", "events.jsonl"}} {
		runDir := runDirOf(runFile, tc.id)
		if err := os.MkdirAll(runDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if tc.events != "" {
			if err := os.WriteFile(filepath.Join(runDir, tc.events), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		obj := refusalOf(t, dir, exitUsage, "RUN_EXISTS", "run", "--json", "--run-id", tc.id, runFile)
		m, _ := obj["message"].(string)
		if !strings.Contains(m, "no event recorded") || !strings.Contains(m, "rm -r "+runDir) || strings.Contains(m, "resume") {
			t.Errorf("%s: message %q; want it to say nothing was recorded and how to remove it, without resume", tc.id, m)
		}
	}
}

// TestNodeArgumentEchoIsCut: show NODE and logs --node with a name the run
// does not have quote it cut, not a pasted document whole.
func TestNodeArgumentEchoIsCut(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
	if r := obversa(t, dir, "run", "--run-id", "r", runFile); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	big := strings.Repeat("n", 100000)
	for _, args := range [][]string{{"show", "r", big}, {"logs", "--node", big, "r"}} {
		r := obversa(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "the run has no node") || !strings.Contains(r.stderr, "(100000 bytes in all)") || len(r.stderr) > 2000 {
			t.Errorf("%s: exit %d, %d bytes of stderr %.300q; want a usage error quoting the node cut", args[0], r.code, len(r.stderr), r.stderr)
		}
	}
}

// TestWorkerProfileUnwritable: an OBVERSA_WORKER_CPUPROFILE the worker
// cannot create is a warning in worker.log, not a worker crash on every
// restart that fails the run RESTART_EXHAUSTED.
func TestWorkerProfileUnwritable(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
	missing := filepath.Join(dir, "missing", "worker.prof")
	r := obversaEnv(t, dir, []string{cpuProfileEnv + "=" + missing}, "run", "--json", "--run-id", "p", runFile)
	if r.code != 0 || !strings.Contains(r.stdout, `"kind":"complete"`) {
		t.Fatalf("run with an unwritable worker profile: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	log, err := os.ReadFile(filepath.Join(runDirOf(runFile, "p"), "worker.log"))
	if err != nil || !strings.Contains(string(log), "warning: "+cpuProfileEnv) {
		t.Errorf("worker.log %q (%v); want the profile's warning", log, err)
	}
}
