package exampletest

import (
	"os"
	"syscall"
	"testing"

	"github.com/obversa/obversa/internal/testutil"
)

// CheckNothingLeft launches the plugin at path as the host does, with
// TMPDIR a fresh directory, twice: it closes it once, and once kills it
// (SIGKILL) before closing. Each time it fails t if anything is left in
// that TMPDIR or of the socket directory the host gave the plugin
// (PLUGIN_UNIX_SOCKET_DIR).
func CheckNothingLeft(t *testing.T, path string) {
	t.Helper()
	for _, kill := range []bool{false, true} {
		tmp := t.TempDir()
		var logs testutil.SyncBuffer
		c, err := Launch("leaks", path, &logs, "TMPDIR="+tmp)
		if err != nil {
			t.Fatalf("launch: %v\n%s", err, logs.String())
		}
		dir := testutil.ProcessEnv(t, c.Pid(), "PLUGIN_UNIX_SOCKET_DIR")
		if kill {
			if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		_ = c.Close()
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Errorf("killed %v: the plugin's socket directory %s is left (%v)", kill, dir, err)
		}
		left, err := os.ReadDir(tmp)
		if err != nil || len(left) > 0 {
			t.Errorf("killed %v: %d entries left in the plugin's TMPDIR (%v): %v", kill, len(left), err, left)
		}
	}
}
