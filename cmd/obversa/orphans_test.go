package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

// childMarkEnv is the variable whose value marks the daemon a
// "daemon-child" helper plugin leaves behind.
const childMarkEnv = "HELPER_CHILD_MARK"

// daemonHelper makes the test binary a plugin that daemonises a child
// and then serves the mock engine: "daemon-child" starts a "daemon-fork"
// in a session of its own and waits for it; the fork starts a
// "daemon-sleep" in a session of its own and exits at once (a double
// fork), so the sleeper's parent is gone, it is in neither the plugin's
// process group nor its session, and it holds nothing of the plugin's
// open. The sleeper carries $HELPER_CHILD_MARK and sleeps 5 minutes.
// "daemon-child-bare" does the same, but the sleeper's environment is
// emptied of everything else, the host's launch marker included.
func daemonHelper(mode string) int {
	switch mode {
	case "daemon-sleep":
		time.Sleep(5 * time.Minute)
		return 0
	case "daemon-fork", "daemon-fork-bare":
		cmd := detached("daemon-sleep")
		if mode == "daemon-fork-bare" {
			cmd.Env = []string{"OBVERSA_TEST_HELPER=daemon-sleep", childMarkEnv + "=" + os.Getenv(childMarkEnv)}
		}
		if err := cmd.Start(); err != nil {
			return 1
		}
		_ = cmd.Process.Release()
		return 0
	}
	fork := "daemon-fork"
	if mode == "daemon-child-bare" {
		fork = "daemon-fork-bare"
	}
	cmd := detached(fork)
	if err := cmd.Run(); err != nil {
		return 1
	}
	if err := sdk.ServeEngine(enginetest.New()); err != nil {
		return 1
	}
	return 0
}

// detached is the test binary in mode, in a new session, with no standard
// streams.
func detached(mode string) *exec.Cmd {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "OBVERSA_TEST_HELPER="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// markedAlive lists the live (not zombie) processes whose environment
// holds kv, scanning /proc.
func markedAlive(t *testing.T, kv string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), []byte("\x00"+kv+"\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// TestCheckLaunchesLeaveNoOrphans: a plugin that daemonises a child
// (setsid, double fork) leaves nothing running after the launches that
// only check it — validate --plugins, the pre-run check of a run (and the
// run's own worker), plugin describe — though the child left the
// plugin's process group and session, and even when it also emptied its
// environment of the launch's marker (the launch's cgroup holds it). A
// direct start of the same plugin first shows the child does outlive its
// plugin when no one stops it.
func TestCheckLaunchesLeaveNoOrphans(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"daemon-child", "daemon-child-bare"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			checkLaunchesLeaveNoOrphans(t, mode)
		})
	}
}

func checkLaunchesLeaveNoOrphans(t *testing.T, mode string) {
	dir := t.TempDir()
	mark := childMarkEnv + "=" + filepath.Base(filepath.Dir(dir))
	t.Cleanup(func() {
		for _, pid := range markedAlive(t, mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// A script, so that describe (which passes only the allow-listed
	// environment) launches the helper too.
	script := filepath.Join(dir, "plugin.sh")
	text := "#!/bin/sh\nexport OBVERSA_TEST_HELPER=" + mode + " " + mark + "\nexec " + testBinary(t) + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	runFile := filepath.Join(dir, "run.hcl")
	// launchFaultRunFile's helper variables are overridden by the script.
	run := strings.NewReplacer("PREFLIGHT", "", "MODE", "daemon-child", "PIDFILE", filepath.Join(dir, "pids"),
		"@BROKEN@", filepath.Join(dir, "none"), "SELF", script).Replace(launchFaultRunFile)
	if err := os.WriteFile(runFile, []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}

	// The control: started directly, the plugin (no handshake variables)
	// exits, and its daemon stays.
	_ = exec.Command(script).Run()
	if left := markedAlive(t, mark); len(left) != 1 {
		t.Fatalf("a direct start left %d daemons (%v), want 1: the helper does not daemonise", len(left), left)
	}
	for _, pid := range markedAlive(t, mark) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitNoneMarked(t, mark)

	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	steps := []struct {
		name string
		args []string
	}{
		{"validate --plugins", []string{"validate", "--plugins", runFile}},
		{"run", []string{"run", "--json", "--run-id", "orphans", runFile}},
		{"plugin describe", []string{"plugin", "describe", script}},
	}
	for _, s := range steps {
		r := obversa(t, dir, s.args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s %s", s.name, r.code, r.stdout, r.stderr)
		}
		if left := markedAlive(t, mark); len(left) > 0 {
			t.Errorf("after %s, the plugin's daemon is still running: pids %v", s.name, left)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// waitNoneMarked waits up to 5 s for no process to carry kv.
func waitNoneMarked(t *testing.T, kv string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if len(markedAlive(t, kv)) == 0 {
			return
		}
	}
	t.Fatalf("processes carrying %s still run: %v", kv, markedAlive(t, kv))
}
