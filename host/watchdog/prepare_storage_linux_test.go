package watchdog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/obversa/obversa/host/watchdog"
)

// TestPrepareStorageDeviceFault: a storage directory on a real file
// system too small for the plugin cache (a 64 KiB tmpfs, the plugin
// 140 KiB) or mounted read-only is refused naming storage.directory in
// the run file and what to do, not as a failure to read the plugin.
// Mounting needs root (CI runs as root); elsewhere it is skipped.
func TestPrepareStorageDeviceFault(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a full or read-only device needs a tmpfs, and mounting one needs root (CI runs as root)")
	}
	for _, tc := range []struct {
		name  string
		flags uintptr
		want  string
	}{
		{name: "full", want: "file system is full: free space there, or point `storage.directory` in "},
		{name: "read_only", flags: syscall.MS_RDONLY, want: "read-only file system: point `storage.directory` in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dev := filepath.Join(dir, "dev")
			if err := os.Mkdir(dev, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", dev, "tmpfs", tc.flags, "size=64k"); err != nil {
				t.Fatalf("mount a tmpfs on %s: %v", dev, err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(dev, syscall.MNT_DETACH) })
			runFile := filepath.Join(dir, "run.hcl")
			text := "storage {\n  directory = \"dev/s\"\n}\nplugin \"shell\" {\n  type = \"node\"\n  path = \"/bin/ls\"\n}\n" +
				"graph \"dag\" {\n  node \"n\" {\n    binding = \"shell\"\n    input   = {}\n  }\n}\n"
			if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := watchdog.Prepare(context.Background(), runFile, watchdog.PrepareOptions{TrustOnFirstUse: true})
			var ce *watchdog.CacheCopyError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want+runFile) || strings.Contains(err.Error(), "reading /bin/ls") {
				t.Errorf("Prepare: %v; want a *CacheCopyError saying %q", err, tc.want+runFile)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}
