package plugin_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// processGone reports whether pid no longer runs: its /proc entry is gone
// or it is a zombie waiting to be reaped.
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// startLauncher starts the test binary as a host that launches one plugin
// and prints its pid, with env added to the mode; the host is killed when t
// ends. It returns the host and the plugin's pid.
func startLauncher(t *testing.T, env ...string) (*exec.Cmd, int) {
	t.Helper()
	host := exec.Command(testBin)
	host.Env = append([]string{modeEnv + "=launcher"}, env...)
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading plugin pid from the host: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("host printed %q", line)
	}
	return host, pid
}

func TestPluginDiesWithItsHost(t *testing.T) {
	t.Parallel()
	host, pid := startLauncher(t)
	if processGone(pid) {
		t.Fatalf("plugin %d not running while its host lives", pid)
	}
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			_ = exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
			t.Fatalf("plugin %d still running 5s after its host was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
