package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestApproveHeldAfterRecording: approve records its decision on a paused
// run, and another process (an `obversa resume`) takes the run before
// approve carries it on. approve is refused PROCESS_LOCKED, and its
// message says what the record holds — the decision is recorded, only the
// carrying on was not done — never "nothing was done". The gap between
// the two steps is held open by approve's own stderr: a full pipe blocks
// its first line, written after the decision is recorded.
func TestApproveHeldAfterRecording(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", `graph "dag" {
  approval = ["slow"]
  node "slow" {
    binding    = "shell"
    input      = { command = ["sleep", "60"] }
    retry_safe = true
  }
}
`)
	if r := obversa(t, dir, "run", "--run-id", "held", runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d: %s", r.code, exitPaused, r.stderr)
	}
	runDir := runDirOf(runFile, "held")
	stderrR, stderrW := fullPipe(t)
	approve := exec.Command(filepath.Join(binDir, "obversa"), "approve", runDir, "dag/slow/1")
	approve.Dir = dir
	var stdout bytes.Buffer
	approve.Stdout, approve.Stderr = &stdout, stderrW
	if err := approve.Start(); err != nil {
		t.Fatal(err)
	}
	stderrW.Close()
	t.Cleanup(func() { _ = approve.Process.Kill(); _ = approve.Wait() })
	waitFor(t, 30*time.Second, "approve to record its decision", func() bool {
		return len(recorded(t, runDir, "graph:approval-decided")) == 1
	})
	// Another process takes the run: a resume, which carries the approved
	// position on (its command sleeps) and holds the run meanwhile.
	resume := exec.Command(filepath.Join(binDir, "obversa"), "resume", runDir)
	resume.Dir = dir
	resumeOut := startCmd(t, resume)
	waitFor(t, 30*time.Second, "the resume to hold the run", func() bool {
		b, _ := os.ReadFile(filepath.Join(runDir, "lock"))
		return bytes.Contains(b, fmt.Appendf(nil, `"pid":%d,`, resume.Process.Pid))
	})
	stderr := drain(t, stderrR)
	code := exitCode(approve.Wait())
	msg := stdout.String() + <-stderr
	want := "the decision allow on dag/slow/1 is recorded, but the run was not carried on here"
	if code != exitUsage || !strings.Contains(msg, "PROCESS_LOCKED") || !strings.Contains(msg, want) ||
		strings.Contains(msg, "nothing was done") || !strings.Contains(msg, fmt.Sprintf("pid %d ", resume.Process.Pid)) {
		t.Fatalf("approve: exit %d, want %d, PROCESS_LOCKED naming the resume (pid %d) and %q, not \"nothing was done\":\n%s",
			code, exitUsage, resume.Process.Pid, want, msg)
	}
	if d := recorded(t, runDir, "graph:approval-decided"); len(d) != 1 || d[0]["decision"] != "allow" {
		t.Fatalf("approval-decided %v, want one allow", d)
	}
	if r := obversa(t, dir, "stop", "--yes", runDir); r.code != 0 {
		t.Fatalf("stop: exit %d: %s\nresume said: %s", r.code, r.stderr, resumeOut)
	}
	_ = resume.Wait()
}

// fullPipe returns a pipe whose buffer is already full: the first write
// to w blocks until r is read.
func fullPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	fd := int(w.Fd()) // Fd puts the file in blocking mode
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{'#'}, 4096)
	for {
		_, err := syscall.Write(fd, chunk)
		if errors.Is(err, syscall.EAGAIN) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for {
		// Fill what a partial chunk left.
		if _, err := syscall.Write(fd, chunk[:1]); errors.Is(err, syscall.EAGAIN) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		t.Fatal(err)
	}
	return r, w
}

// drain reads r to its end, without the filler fullPipe wrote, and sends
// what it read.
func drain(t *testing.T, r *os.File) <-chan string {
	t.Helper()
	out := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		out <- strings.TrimLeft(string(b), "#")
	}()
	return out
}
