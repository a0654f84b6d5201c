package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptPauses sends real signals to a real `obversa run` while
// its node runs: one Ctrl-C, SIGTERM or SIGHUP (the terminal closed) pauses
// the run (OPERATOR_PAUSE, exit 3, resumable) and says how to carry it on
// or end it, and so do two SIGHUPs; a second Ctrl-C forces, leaving the run interrupted (exit
// 130); `obversa stop` still ends a live run for good (STOPPED).
func TestInterruptPauses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		signals []syscall.Signal
		stop    bool // obversa stop --yes instead of signals
		exit    int
		phase   string
		say     string
	}{
		{"ctrl-c", []syscall.Signal{syscall.SIGINT}, false, exitPaused, "paused", "obversa stop "},
		{"sigterm", []syscall.Signal{syscall.SIGTERM}, false, exitPaused, "paused", "obversa stop "},
		{"hangup", []syscall.Signal{syscall.SIGHUP}, false, exitPaused, "paused", "obversa stop "},
		// A closed terminal hangs its foreground job up twice: the kernel
		// and the shell, which passes SIGHUP on to its jobs.
		{"hangup twice", []syscall.Signal{syscall.SIGHUP, syscall.SIGHUP}, false, exitPaused, "paused", "obversa stop "},
		{"ctrl-c twice", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, false, 130, "interrupted", "forced:"},
		{"obversa stop", nil, true, exitFailed, "stopped", "stopping: obversa stop asked for it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The node ignores SIGTERM, so each stop of the worker takes
			// the run's teardown_grace: a second signal sent once the
			// first is taken comes while the pause is under way.
			runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"sh\", \"-c\", \"trap '' TERM; sleep 60\"] }\n  }\n}\n")
			cmd, out := startRun(t, dir, runFile, "sig")
			runDir := runDirOf(runFile, "sig")
			waitAttempts(t, runDir, 1, "the first attempt")
			if tt.stop {
				if r := obversa(t, dir, "stop", "--yes", runDir); r.code != 0 {
					t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
				}
			}
			for i, sig := range tt.signals {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				if i+1 < len(tt.signals) {
					// The next signal only once this one is taken: two
					// pending ones would count as one.
					waitFor(t, 10*time.Second, "the pause to begin", func() bool { return strings.Contains(out.String(), "pausing:") })
				}
			}
			_ = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tt.exit {
				t.Errorf("exit %d, want %d\n%s", code, tt.exit, out.String())
			}
			if st := status(t, runDir); st.Phase != tt.phase {
				t.Errorf("phase %q, want %q\n%s", st.Phase, tt.phase, out.String())
			}
			if !strings.Contains(out.String(), tt.say) {
				t.Errorf("the screen does not say %q:\n%s", tt.say, out.String())
			}
			if tt.exit == exitPaused {
				if !strings.Contains(out.String(), "obversa resume "+runDir) {
					t.Errorf("the screen does not name resume %s:\n%s", runDir, out.String())
				}
				if n := len(recorded(t, runDir, "graph:node-failed")); n != 0 {
					t.Errorf("a pause failed %d nodes", n)
				}
			}
		})
	}
}

// TestInterruptWhileRunIsCreated: a Ctrl-C or SIGTERM taken before the
// run is known cancels only the command's preparation (prep); when the
// run turns out to have been recorded meanwhile (setRun), it is paused,
// never stopped — a stop would end it for good (STOPPED), which Ctrl-C
// must not do. The signal is handed to the command's signal loop as
// signal.Notify would hand it.
func TestInterruptWhileRunIsCreated(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		s, stop := watchSignals()
		s.ch <- sig
		select {
		case <-s.prep.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%v before the run is known: the preparation is not cancelled", sig)
		}
		s.setRun("run-1")
		select {
		case <-s.pause:
		case <-time.After(10 * time.Second):
			t.Errorf("%v while the run was created: the run is not paused", sig)
		}
		if s.ctx.Err() != nil {
			t.Errorf("%v while the run was created: the run's context is cancelled, which stops it (STOPPED)", sig)
		}
		stop()
	}
}

// TestClosedOutputKeepsTheRun: a watchdog command whose stdout and stderr
// are a pipe nobody reads any more (`obversa run … 2>&1 | head -1` after
// head exited) carries its run on to the end: its writes fail, the run
// does not die of SIGPIPE and is not left interrupted.
func TestClosedOutputKeepsTheRun(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"sh\", \"-c\", \"sleep 0.3; echo a\"] }\n  }\n  node \"b\" {\n    binding = \"shell\"\n    depends_on = [\"a\"]\n    input = { command = [\"echo\", \"b\"] }\n  }\n}\n")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil { // every write to w now fails EPIPE
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--progress", "--run-id", "pipe", runFile)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	_ = cmd.Wait()
	runDir := runDirOf(runFile, "pipe")
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("obversa run died of %v with its output closed", ws.Signal())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	if st := status(t, runDir); st.Phase != "completed" {
		t.Errorf("phase %q, want completed", st.Phase)
	}
}
