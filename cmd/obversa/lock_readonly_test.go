package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginLockReadOnlyDirectory: in a directory it may not write,
// `plugin lock` of a run file whose lock file is current writes nothing
// and says the file is current (exit 0), not "wrote"; one whose lock file
// needs writing fails naming the file and saying nothing was written, and
// so does `run --lock`; the lock file is left as it was.
func TestPluginLockReadOnlyDirectory(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
	lockFile := filepath.Join(dir, "obversa.lock.hcl")
	readOnly := readOnlyRunner(t, dir)
	r := readOnly(dir, "plugin", "lock", runFile)
	if r.code != 0 || !strings.Contains(r.stdout, lockFile+" is current; nothing was written") || strings.Contains(r.stdout, "wrote") {
		t.Errorf("lock of a current lock file, read-only: exit %d, stdout %q, stderr %q; want exit 0 saying it is current", r.code, r.stdout, r.stderr)
	}
	if r := readOnly(dir, "plugin", "lock", "--json", runFile); r.code != 0 || !strings.Contains(r.stdout, `"written":false`) {
		t.Errorf("lock --json of a current lock file, read-only: exit %d, stdout %q; want written false", r.code, r.stdout)
	}
	if err := os.WriteFile(lockFile, []byte("# pins\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "cannot write the lock file: " + lockFile + " ("
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"plugin", "lock", runFile}, exitFailed},
		{[]string{"run", "--lock", "--storage", t.TempDir(), runFile}, exitUsage},
	} {
		r := readOnly(dir, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "): nothing was written, the file is as it was") || strings.Contains(r.stdout, "wrote") {
			t.Errorf("%v with a lock file to write, read-only: exit %d, stdout %q, stderr %q; want exit %d naming the file and that nothing was written", tc.args, r.code, r.stdout, r.stderr, tc.code)
		}
	}
	if b, err := os.ReadFile(lockFile); err != nil || string(b) != "# pins\n" {
		t.Errorf("the lock file changed: %q, %v", b, err)
	}
}
