package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallIgnoredNamesStayOnTheirLine: install lists the files of a
// release it ignores; a name is the release's, not ours, so one holding a
// line feed or a control character is printed quoted on its own "ignored"
// line and cannot add a line to what install says (here a forged
// "signature verified" for an install that had no --key).
func TestInstallIgnoredNamesStayOnTheirLine(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	keygen(t, work, "minisign")
	rel := filepath.Join(work, "release")
	copyBinary(t, filepath.Join(binDir, "cmd-engine"), filepath.Join(rel, "obversa-plugin-cmd"))
	if r := obversa(t, work, "plugin", "sign", "--name", "cmd", "--version", "0.1.0", "release/obversa-plugin-cmd"); r.code != 0 {
		t.Fatalf("sign: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	forged := "README\nsignature verified: key 0000000000000000"
	for _, name := range []string{forged, "NOTES\x1b[2J.md", "LICENSE"} {
		if err := os.WriteFile(filepath.Join(rel, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := obversa(t, work, "plugin", "install", "--dir", filepath.Join(work, "plugins"), rel)
	if r.code != 0 {
		t.Fatalf("install: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "signature verified") {
			t.Errorf("install without --key printed %q, from a file name:\n%s", line, r.stdout)
		}
	}
	for _, want := range []string{`ignored "README\nsignature verified: key 0000000000000000"`, `ignored "NOTES\x1b[2J.md"`, "ignored LICENSE\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("install's output lacks %s:\n%s", want, r.stdout)
		}
	}
}
