package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunFilesThatAreNotFiles: a named pipe left where a file of a run
// directory belongs (the record, its index, the lock, the engines'
// stream, the logs) is refused naming it, by every command that opens it;
// none waits on the pipe for ever (an open or read of a pipe with no
// writer blocks, beyond the reach of Ctrl-C). The record is not changed.
func TestRunFilesThatAreNotFiles(t *testing.T) {
	t.Parallel()
	runFile, dir := gateRun(t)
	commands := [][]string{{"status"}, {"show"}, {"events"}, {"verify"}, {"graph"}, {"logs"}, {"approve", "--json", "RUN", "dag/c/1"}}
	for _, name := range []string{"events.jsonl", "events.jsonl.idx", "lock", "stream.jsonl", "worker.log", "plugins.log"} {
		id := "pipe-" + strings.ReplaceAll(name, ".", "-")
		runDir := runDirOf(runFile, id)
		if err := exec.Command("cp", "-a", runDirOf(runFile, "gate"), runDir).Run(); err != nil {
			t.Fatal(err)
		}
		record := filepath.Join(runDir, "events.jsonl")
		events, err := os.ReadFile(record)
		if err != nil {
			t.Fatal(err)
		}
		pipe := filepath.Join(runDir, name)
		if err := os.Remove(pipe); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(pipe, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range commands {
			args = append([]string(nil), args...)
			if len(args) == 1 {
				args = append(args, "RUN")
			}
			for i := range args {
				if args[i] == "RUN" {
					args[i] = runDir
				}
			}
			r, done := obversaWithin(t, dir, 15*time.Second, args...)
			if !done {
				t.Errorf("%s a named pipe: obversa %s did not end in 15 s", name, args[0])
				continue
			}
			if r.code != 0 && !strings.Contains(r.stdout+r.stderr, name+": it is a named pipe, not a file") {
				t.Errorf("%s a named pipe: obversa %s: exit %d without naming the pipe:\n%s%s", name, args[0], r.code, r.stdout, r.stderr)
			}
		}
		if pipe != record {
			if after, err := os.ReadFile(record); err != nil || !bytes.HasPrefix(after, events) {
				t.Errorf("%s a named pipe: the record was rewritten (%v)", name, err)
			}
		}
		// Mended, the run carries on from where the refusal or the
		// RUN_STORAGE pause left it.
		if err := os.Remove(pipe); err != nil {
			t.Fatal(err)
		}
		if err := exec.Command("cp", "-a", filepath.Join(runDirOf(runFile, "gate"), name), pipe).Run(); err != nil && !strings.HasSuffix(name, ".log") {
			t.Fatal(err)
		}
		if r := obversa(t, dir, "approve", runDir, "dag/c/1"); r.code != 0 {
			if r := obversa(t, dir, "resume", runDir); r.code != 0 {
				t.Errorf("%s mended: approve and resume: exit %d: %s", name, r.code, r.stdout+r.stderr)
			}
		}
		if r := obversa(t, dir, "verify", runDir); r.code != 0 {
			t.Errorf("%s mended: verify: exit %d: %s", name, r.code, r.stdout+r.stderr)
		}
	}
}

// obversaWithin runs the built CLI in dir like obversa, but gives up
// (done false) when it has not ended within d: it is then killed, with
// every process of its group.
func obversaWithin(t *testing.T, dir string, d time.Duration, args ...string) (result, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "obversa"), args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return result{stdout: out.String(), stderr: errb.String()}, false
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("obversa %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}, true
}
