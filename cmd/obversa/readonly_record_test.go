package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyRecordNothingRecorded: every command that would write a
// paused run's record (resume, approve, stop, preflight interrupt) refuses
// a record it may not write — a read-only mount, or for a user other than
// root a directory without write permission — with exit 2 and RUN_STORAGE
// (nothing was done: docs/cli.md, the exit statuses), saying that nothing
// was recorded, naming the record and the fix; the record is unchanged.
func TestReadOnlyRecordNothingRecorded(t *testing.T) {
	t.Parallel()
	// The fix: remount a read-only file system, or (not root) grant write permission.
	refusedUnwritten(t, "ro", readOnlyRunner, func(runDir string) []string {
		return []string{"the record " + runDir, "remount that file system read-write|chmod -R u+w " + runDir}
	})
}

// readOnlyRunner returns a function that runs obversa with runDir
// read-only: under root, in a mount namespace where runDir is bound
// read-only (util-linux's unshare); otherwise with runDir and its files
// stripped of write permission until the test ends. Under root where
// mount namespaces are not permitted (a container without CAP_SYS_ADMIN),
// the test is skipped, saying so; any other failure of the bind fails it.
func readOnlyRunner(t *testing.T, runDir string) func(dir string, args ...string) result {
	t.Helper()
	if os.Geteuid() != 0 {
		var modes []func()
		err := filepath.Walk(runDir, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			mode := fi.Mode().Perm()
			modes = append(modes, func() { _ = os.Chmod(p, mode) })
			return os.Chmod(p, mode&^0o222)
		})
		t.Cleanup(func() {
			for i := len(modes) - 1; i >= 0; i-- {
				modes[i]()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return func(dir string, args ...string) result { return obversa(t, dir, args...) }
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("a read-only record under root needs util-linux's unshare")
	}
	refused, err := readOnlyBindRefused(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if refused != "" {
		t.Skip("a read-only record under root needs a mount namespace, which is not permitted here: " + refused)
	}
	return func(dir string, args ...string) result {
		cmd := exec.Command("unshare", append(readOnlyBind(runDir), append([]string{filepath.Join(binDir, "obversa")}, args...)...)...)
		cmd.Dir = dir
		return runResult(t, cmd, fmt.Sprintf("obversa %v", args))
	}
}

// readOnlyBind returns unshare's arguments that run a command (appended)
// in a mount namespace of its own where dir is bound read-only.
func readOnlyBind(dir string) []string {
	script := `mount --bind -o ro "$1" "$1" && shift && exec "$@"`
	return []string{"--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", dir}
}

// readOnlyBindRefused tries readOnlyBind on dir with `true`, run through
// prefix (a command that runs the rest, such as setpriv; none: unshare
// directly). It returns what the system said when it does not permit a
// mount namespace or a mount (EPERM: "Operation not permitted"), "" when
// the bind works, and an error for any other failure.
func readOnlyBindRefused(dir string, prefix ...string) (string, error) {
	args := append(append(append([]string{}, prefix...), "unshare"), append(readOnlyBind(dir), "true")...)
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	switch {
	case err == nil:
		return "", nil
	case bytes.Contains(out, []byte("Operation not permitted")) || bytes.Contains(out, []byte("permission denied")):
		return strings.TrimSpace(string(out)), nil
	}
	return "", fmt.Errorf("binding %s read-only in a mount namespace: %v: %s", dir, err, out)
}

// TestReadOnlyBindRefusedIsSkipReason: where a mount namespace is not
// permitted (here: unshare without CAP_SYS_ADMIN, through setpriv), the
// read-only bind says why, which TestReadOnlyRecordNothingRecorded skips
// with; where it is (root here), it binds, and that test runs.
func TestReadOnlyBindRefusedIsSkipReason(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the read-only bind is how root makes a record read-only; other users strip write permission")
	}
	for _, tool := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("needs util-linux's " + tool)
		}
	}
	dir := t.TempDir()
	if refused, err := readOnlyBindRefused(dir); refused != "" || err != nil {
		t.Fatalf("as root: %q, %v; want the bind to work", refused, err)
	}
	refused, err := readOnlyBindRefused(dir, "setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--")
	if err != nil || !strings.Contains(refused, "Operation not permitted") {
		t.Fatalf("without CAP_SYS_ADMIN: %q, %v; want the system's refusal as the reason", refused, err)
	}
}
