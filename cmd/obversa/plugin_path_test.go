package main

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestPluginPathMustBeRegularFile: a plugin path naming a character
// device or a named pipe is refused by `plugin lock`, `run` and
// `run --lock` at once, naming the plugin, the path and what it is;
// nothing reads from it (a read of /dev/zero never ends, an open of a
// pipe without a writer never returns).
func TestPluginPathMustBeRegularFile(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "plugin.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, kind string }{
		{"/dev/zero", "a character device"},
		{fifo, "a named pipe"},
	} {
		for _, args := range [][]string{{"plugin", "lock"}, {"run"}, {"run", "--lock"}} {
			t.Run(tt.kind+"/"+filepath.Join(args...), func(t *testing.T) {
				t.Parallel()
				s := newTrustSetup(t, map[string]string{"PLUGIN": tt.path})
				start := time.Now()
				r := obversa(t, s.dir, append(args, s.runFile)...)
				wantStderr(t, r, exitUsage, `plugin "shell"`, tt.path, tt.kind)
				if took := time.Since(start); took > 30*time.Second {
					t.Errorf("refusing took %s", took)
				}
				noRunDir(t, s.dir)
			})
		}
	}
}
