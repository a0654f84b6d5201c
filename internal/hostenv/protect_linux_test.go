package hostenv

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const (
	helperEnv = "OBVERSA_HOSTENV_HELPER"
	secretEnv = "AWS_SECRET_ACCESS_KEY"
	secret    = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helper())
	}
	os.Exit(m.Run())
}

// helper protects itself, reports whether it still sees the secret, and
// waits for its stdin to close.
func helper() int {
	if err := Protect(); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready", os.Getenv(secretEnv) == secret)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startHelper starts a protected helper process, as uid when not nil.
func startHelper(t *testing.T, cred *syscall.Credential) int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		// A copy the unprivileged user can execute.
		dir := t.TempDir()
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		exe = filepath.Join(dir, "helper")
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{helperEnv + "=1", secretEnv + "=" + secret, "PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready true" {
		t.Fatalf("helper said %q (%v); want it protected and still seeing its own environment", line, err)
	}
	return cmd.Process.Pid
}

// TestEnvironHidden: after Protect, /proc/<pid>/environ read by root shows
// the allowed variables and not the secret; an unprivileged process of
// the same user cannot read it at all.
func TestEnvironHidden(t *testing.T) {
	pid := startHelper(t, nil)
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if os.Geteuid() == 0 && err != nil {
		t.Fatalf("root cannot read the environ: %v", err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("/proc/%d/environ holds the secret: %q", pid, b)
	}
	if err == nil && !strings.Contains(string(b), "PATH=/usr/bin:/bin\x00") {
		t.Errorf("/proc/%d/environ lost the allowed PATH: %q", pid, b)
	}
}

// TestEnvironHiddenFromSameUser runs the helper and a reader as an
// unprivileged uid: the reader gets nothing.
func TestEnvironHiddenFromSameUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run processes as another uid")
	}
	cred := &syscall.Credential{Uid: 65534, Gid: 65534}
	pid := startHelper(t, cred)
	cat := exec.Command("cat", "/proc/"+strconv.Itoa(pid)+"/environ")
	cat.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cat.CombinedOutput()
	if strings.Contains(string(out), secret) {
		t.Fatalf("uid 65534 read the secret: %q", out)
	}
	if err == nil {
		t.Errorf("uid 65534 read /proc/%d/environ of a non-dumpable process: %q", pid, out)
	}
}
