package plugin_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// waitGone waits for pid to end, failing t after 5 s.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running 5s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertGone fails t if path exists.
func assertGone(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(path)
		t.Errorf("%s %s is left (%v, %d entries)", what, path, err, len(entries))
	}
}

// assertEmpty fails t if dir holds anything.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("%s is left in the plugin's TMPDIR", e.Name())
	}
}

// A plugin killed while its host lives leaves nothing: Close removes the
// directory its socket was in.
func TestKilledPluginLeavesNoSocket(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	c := launch(t, "both", plugin.TypeEngine, func(cfg *plugin.LaunchConfig) {
		cfg.Env = append(cfg.Env, "TMPDIR="+tmp)
	})
	dir := testutil.ProcessEnv(t, c.Pid(), "PLUGIN_UNIX_SOCKET_DIR")
	if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
		t.Fatalf("socket directory %s: %v, %d entries; want the plugin's socket", dir, err, len(entries))
	}
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	assertGone(t, dir, "the killed plugin's socket directory")
	assertEmpty(t, tmp)
}

// A launch that fails leaves no socket directory either: the process's
// own directory holds the same entries before and after it. Not parallel:
// no other launch of this process may add or remove entries meanwhile.
func TestFailedLaunchLeavesNoSocketDir(t *testing.T) {
	c := launch(t, "both", plugin.TypeEngine)
	own := filepath.Dir(testutil.ProcessEnv(t, c.Pid(), "PLUGIN_UNIX_SOCKET_DIR"))
	_ = c.Close()
	before, err := os.ReadDir(own)
	if err != nil {
		t.Fatal(err)
	}
	cfg := plugin.LaunchConfig{Name: "exits", Type: plugin.TypeEngine, Path: testBin, SHA256: testBinSHA,
		Env: []string{modeEnv + "=exit"}}
	if c, err := pluginhost.Launch(t.Context(), cfg); err == nil {
		_ = c.Close()
		t.Fatal("a plugin that exits at once launched")
	}
	after, err := os.ReadDir(own)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("%s held %d entries before the failed launch, %d after", own, len(before), len(after))
	}
}

// A host killed with its plugin leaves nothing once the next sweep ran
// (what the watchdog runs after a worker ends, and what the next process
// launching a plugin runs): neither the host's socket directory nor
// anything in the TMPDIR it and its plugin were given.
func TestKilledHostLeavesNothingAfterSweep(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	host, pid := startLauncher(t, "TMPDIR="+tmp)
	own := filepath.Dir(testutil.ProcessEnv(t, pid, "PLUGIN_UNIX_SOCKET_DIR"))
	if !strings.HasPrefix(filepath.Base(own), "h"+strconv.Itoa(host.Process.Pid)+"-") {
		t.Fatalf("plugin's socket directory %s is not in its host's own directory", own)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	plugin.SweepSockets()
	assertGone(t, own, "the killed host's socket directory")
	assertEmpty(t, tmp)
}

// A sweep leaves a living host's directory alone.
func TestSweepKeepsLiveHostsDir(t *testing.T) {
	t.Parallel()
	c := launch(t, "both", plugin.TypeEngine)
	dir := testutil.ProcessEnv(t, c.Pid(), "PLUGIN_UNIX_SOCKET_DIR")
	plugin.SweepSockets()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a sweep removed the socket directory of a running plugin: %v", err)
	}
	if _, err := c.Engine(); err != nil {
		t.Fatal(err)
	}
}
