package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hostSecret stands for a credential in the shell that starts a run.
const hostSecret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"

// environRunFile runs one node that prints the environments of its
// plugin's parent (the worker) and grandparent (the watchdog).
const environRunFile = `
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
graph "dag" {
  node "peek" {
    binding = "shell"
    input   = { command = ["sh", "-c", "w=$(cut -d' ' -f4 /proc/$PPID/stat); d=$(cut -d' ' -f4 /proc/$w/stat); for p in $w $d; do echo \"== $p\"; tr '\\0' '\\n' < /proc/$p/environ; done; true"] }
  }
}
`

// TestRunProcessesCannotReadHostEnvironment: a node reading
// /proc/<worker>/environ and /proc/<watchdog>/environ finds no secret of
// the host's environment, as root (which may read any process's environ)
// and as an unprivileged user (who may read its own processes' unless they
// are non-dumpable); nothing under the storage directory holds it.
func TestRunProcessesCannotReadHostEnvironment(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cred *syscall.Credential
	}{
		{"as root", nil},
		{"as uid 65534", &syscall.Credential{Uid: 65534, Gid: 65534}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.cred == nil && os.Geteuid() != 0 {
				t.Skip("not running as root")
			}
			if tt.cred != nil && os.Geteuid() != 0 {
				t.Skip("needs root to run as another uid")
			}
			runFile := writeRunFile(t, environRunFile)
			dir := filepath.Dir(runFile)
			if tt.cred != nil {
				shareWith(t, dir, binDir)
			}
			cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--lock", runFile)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "AWS_SECRET_ACCESS_KEY="+hostSecret)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: tt.cred}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("run: %v\n%s\n%s", err, out.String(), errb.String())
			}
			if strings.Contains(out.String()+errb.String(), hostSecret) {
				t.Errorf("the run's output holds the host secret:\n%s", out.String())
			}
			var record bytes.Buffer
			_ = filepath.WalkDir(filepath.Join(dir, ".obversa"), func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && !strings.Contains(path, "/plugins/sha256/") {
					b, _ := os.ReadFile(path)
					record.Write(b)
					if bytes.Contains(b, []byte(hostSecret)) {
						t.Errorf("%s holds the host secret", path)
					}
				}
				return nil
			})
			// The node did read the files: root sees the allowed
			// variables, the unprivileged user is refused.
			want := "PATH="
			if tt.cred != nil {
				want = "Permission denied"
			}
			if !strings.Contains(record.String(), want) {
				t.Errorf("the record does not show the node reading the environments (%q):\n%.3000s", want, record.String())
			}
		})
	}
}

// shareWith makes dirs (and their parents up to /tmp) usable by another
// user: the run's directory writable, the binaries readable.
func shareWith(t *testing.T, runDir, bin string) {
	t.Helper()
	for _, d := range []string{filepath.Dir(runDir), bin} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := filepath.WalkDir(runDir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
}
