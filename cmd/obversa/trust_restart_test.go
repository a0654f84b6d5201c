package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/host/runstate"
)

// TestTrustRestartRunsPinnedBytes rebuilds or deletes the source binary
// while the watchdog backs off after a worker crash: the restarted worker
// still launches the pinned copy from the cache and the run completes.
func TestTrustRestartRunsPinnedBytes(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(t *testing.T, s *trustSetup){
		"rebuilt": func(t *testing.T, s *trustSetup) { copyBinary(t, filepath.Join(binDir, "mock-engine"), s.bin) },
		"deleted": func(t *testing.T, s *trustSetup) {
			if err := os.Remove(s.bin); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newTrustSetup(t, map[string]string{"COMMAND": "echo x >> EFFECTS; sleep 2; echo done"})
			effectsFile := filepath.Join(s.dir, "effects.log")
			rewrite(t, s.runFile, "EFFECTS", effectsFile)
			if r := obversa(t, s.dir, "plugin", "lock", s.runFile); r.code != 0 {
				t.Fatal(r.stderr)
			}
			pinned := fileDigest(t, s.bin)
			r := crashOnce(t, s, "rb", effectsFile, func() { change(t, s) })
			if r.code != 0 {
				t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			runDir := runDirOf(s.runFile, "rb")
			if n := countEvents(t, runDir, runstate.EventWorkerStarted); n != 2 {
				t.Errorf("%d workers started, want 2 (one restart)", n)
			}
			if b, _ := os.ReadFile(effectsFile); strings.Count(string(b), "\n") != 2 {
				t.Errorf("the node ran %d times, want 2", strings.Count(string(b), "\n"))
			}
			paths := startedPaths(t, runDir)
			want := filepath.Join(s.dir, ".obversa", "plugins", "sha256", pinned)
			if len(paths) != 2 {
				t.Fatalf("plugins.log shows %d plugin starts, want 2: %v", len(paths), paths)
			}
			for _, p := range paths {
				if p != want {
					t.Errorf("a worker started %s, want the pinned cache entry %s", p, want)
				}
			}
		})
	}
}

// TestTrustResumeRunsPinnedBytes pauses a run (a crash during a node that
// is not retry-safe), deletes the source binary, and resumes: the resumed
// worker launches the pinned copy from the cache.
func TestTrustResumeRunsPinnedBytes(t *testing.T) {
	t.Parallel()
	s := newTrustSetup(t, map[string]string{"COMMAND": "echo x >> EFFECTS; sleep 2; echo done"})
	effectsFile := filepath.Join(s.dir, "effects.log")
	rewrite(t, s.runFile, "EFFECTS", effectsFile)
	rewrite(t, s.runFile, "retry_safe = true", "retry_safe = false")
	if r := obversa(t, s.dir, "plugin", "lock", s.runFile); r.code != 0 {
		t.Fatal(r.stderr)
	}
	pinned := fileDigest(t, s.bin)
	if r := crashOnce(t, s, "rs", effectsFile, func() {}); r.code != exitPaused {
		t.Fatalf("exit %d, want %d (paused); stderr:\n%s", r.code, exitPaused, r.stderr)
	}
	if err := os.Remove(s.bin); err != nil {
		t.Fatal(err)
	}
	runDir := runDirOf(s.runFile, "rs")
	if r := obversa(t, s.dir, "resume", "--position", "dag/work/1", "--reconciled=not-done", runDir); r.code != 0 {
		t.Fatalf("resume: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	want := filepath.Join(s.dir, ".obversa", "plugins", "sha256", pinned)
	paths := startedPaths(t, runDir)
	if len(paths) < 2 {
		t.Fatalf("plugins.log shows %d plugin starts, want one per worker: %v", len(paths), paths)
	}
	for _, p := range paths {
		if p != want {
			t.Errorf("a worker started %s, want the pinned cache entry %s", p, want)
		}
	}
}

// crashOnce starts `obversa run --run-id id`, SIGKILLs the worker once the
// node has left its first effect, calls during() while the watchdog backs
// off, and waits for the run to end.
func crashOnce(t *testing.T, s *trustSetup, id, effectsFile string, during func()) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--run-id", id, s.runFile)
	cmd.Dir = s.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, _ := os.ReadFile(effectsFile); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the node never ran: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid := workerPID(t, runDirOf(s.runFile, id))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill worker %d: %v", pid, err)
	}
	during()
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}
