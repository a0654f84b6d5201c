package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowWriter is a StdoutTee that takes delay per write, a reader that
// falls behind as on a busy machine.
type slowWriter struct{ delay time.Duration }

func (w slowWriter) Write(b []byte) (int, error) {
	time.Sleep(w.delay)
	return len(b), nil
}

// TestRunKeepsOutputOfSlowReader runs commands that write everything and
// exit while their reader is still far behind: the output must be whole,
// however long the reader takes after the exit.
func TestRunKeepsOutputOfSlowReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size  int
		delay time.Duration
	}{
		{40000, 200 * time.Millisecond},
		{1 << 20, 20 * time.Millisecond},
	} {
		t.Run(strconv.Itoa(tc.size), func(t *testing.T) {
			t.Parallel()
			argv, env := helperArgv("bulk", strconv.Itoa(tc.size))
			res, err := Run(context.Background(), Request{
				Argv: argv, Env: env, StdoutTee: slowWriter{tc.delay}, OwnerID: testOwner(t),
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(res.Stdout) != tc.size || res.OutputCut != "" || res.ExitCode != 0 {
				t.Errorf("got %d bytes, cut %q, exit %d; want %d bytes, not cut, exit 0",
					len(res.Stdout), res.OutputCut, res.ExitCode, tc.size)
			}
		})
	}
}

// TestRunReportsOutputHeldOutside gives the command's stdout to a process
// outside its process group and cgroup (opened through /proc, as a
// process that escaped tracking would hold it) before the command exits.
// Run must end promptly, keep what was written and say that stdout was
// cut and by whom.
func TestRunReportsOutputHeldOutside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	argv, env := helperArgv("hold", dir)
	type ran struct {
		res *Result
		err error
	}
	done := make(chan ran, 1)
	begin := time.Now()
	go func() {
		res, err := Run(context.Background(), Request{Argv: argv, Env: env, OwnerID: testOwner(t), Timeout: time.Minute})
		done <- ran{res, err}
	}()
	outsider := holdStdoutOf(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if el := time.Since(begin); el > 10*time.Second {
		t.Errorf("Run took %v", el)
	}
	if !errors.Is(got.err, ErrOutputCut) || Code(got.err) != CodeOutputCut {
		t.Errorf("err = %v, want %s", got.err, CodeOutputCut)
	}
	res := got.res
	if string(res.Stdout) != "before\n" || res.ExitCode != 0 {
		t.Errorf("stdout %q exit %d, want %q exit 0", res.Stdout, res.ExitCode, "before\n")
	}
	want := fmt.Sprintf("stdout still held open by pid %d ", outsider.Process.Pid)
	if !strings.HasPrefix(res.OutputCut, want) || strings.Contains(res.OutputCut, "stderr") {
		t.Errorf("OutputCut = %q, want it to start with %q", res.OutputCut, want)
	}
}

// holdStdoutOf waits for the hold helper's pid in dir, opens its stdout
// through /proc and hands it to a new session's sleeping process, which it
// returns (killed when the test ends).
func holdStdoutOf(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	var pid []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if pid, err = os.ReadFile(filepath.Join(dir, "pid")); err == nil && len(pid) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never wrote its pid")
		}
	}
	w, err := os.OpenFile("/proc/"+string(pid)+"/fd/1", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), helperEnv+"=sleep")
	c.Stdout = w
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c
}
