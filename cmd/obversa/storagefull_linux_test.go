package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// smallDevice mounts a tmpfs of size bytes on dir (created), unmounted
// when the test ends. It skips the test when this process may not mount
// (not root; CI runs as root).
func smallDevice(t *testing.T, dir string, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("filling a real device needs a small tmpfs, and mounting one needs root (CI runs as root)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount a tmpfs of %s on %s: %v", size, dir, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
}

// fill writes dir/name until the device has at most leave bytes free
// (0: until it refuses a byte more), and returns the file's path.
func fill(t *testing.T, dir, name string, leave int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	want := int64(st.Bavail)*st.Bsize - leave
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{'f'}, 4096)
	for n := int64(0); leave == 0 || n+int64(len(chunk)) <= want; n += int64(len(chunk)) {
		if _, err := f.Write(chunk); err != nil {
			if leave == 0 && errors.Is(err, syscall.ENOSPC) {
				break
			}
			t.Fatal(err)
		}
	}
	return path
}

// storageRunFile gates node "wait" on the file GATE, so the test can fill
// the device while it runs; "after" then keeps its result (AFTER).
const storageRunFile = `
teardown_grace = "1s"
restart {
  max_restarts    = 3
  initial_backoff = "10ms"
  max_backoff     = "10ms"
}
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { responses = [{ node = "after", text = "LONG" }] }
}
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
storage {
  max_event_payload_bytes = 4096
  max_artifact_bytes      = 1048576
}
graph "dag" {
  node "wait" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "while [ ! -f GATE ]; do sleep 0.05; done"] }
    retry_safe = true
  }
  node "after" {
    lane       = "w"
    depends_on = ["wait"]
    prompt     = "answer at length"
    retry_safe = true
  }
}
`

// TestStorageFullPausesRun fills a real device under the run's record. A
// run refused a byte before it starts is refused (exit 2,
// STORAGE_FULL). A device that fills while the run runs — the next event
// or the next artifact does not fit — pauses the run STORAGE_FULL naming
// the file, recorded in the record (status shows it) without using a
// restart, and once space is freed `obversa resume` carries it on to
// completion.
func TestStorageFullPausesRun(t *testing.T) {
	tests := []struct {
		name  string
		leave int64  // bytes left free when the device is filled
		text  int    // bytes of node "after"'s answer
		path  string // the file the pause names
	}{
		{name: "events", leave: 0, text: 10, path: "events.jsonl"},
		{name: "artifact", leave: 48 << 10, text: 200 << 10, path: "artifacts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fr := startOnSmallDevice(t, strings.Repeat("y", tt.text), nil)
			dir, runs, runDir, cmd, out, errb := fr.dir, fr.runs, fr.runDir, fr.cmd, &fr.out, &fr.errb
			filler := fill(t, runs, "filler", tt.leave)
			if err := os.WriteFile(fr.gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			var res map[string]any
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatalf("run printed %q (exit %d): %v; stderr:\n%s\nworker.log:\n%s", out.String(), code, err, errb.String(), readLog(runDir))
			}
			o, _ := res["output"].(map[string]any)
			path, _ := o["path"].(string)
			if code != exitPaused || res["code"] != "STORAGE_FULL" || !strings.Contains(path, tt.path) || !strings.Contains(o["message"].(string), path) {
				t.Fatalf("run: exit %d, result %v; want a STORAGE_FULL pause naming %s", code, res, tt.path)
			}
			noRepeats(t, "run's result", o["message"].(string))
			noRepeats(t, "run's stderr", errb.String())
			st := status(t, runDir)
			if st.Phase != "paused" || st.RestartsUsed != 0 {
				t.Errorf("status: phase %q, %d restarts used; want paused, none used", st.Phase, st.RestartsUsed)
			}
			if w := recorded(t, runDir, "graph:run-waiting"); len(w) != 1 || w[0]["code"] != "STORAGE_FULL" {
				t.Errorf("run-waiting %v, want the STORAGE_FULL pause recorded", w)
			} else {
				m, _ := w[0]["message"].(string)
				noRepeats(t, "graph:run-waiting", m)
			}
			noRepeats(t, "status's result", lineOf(obversa(t, dir, "status", runDir).stdout, "result:"))

			// Still full (what room the pause left is taken too): resume
			// is refused with nothing recorded, or — when the slack of
			// the record's last page takes its few events — pauses
			// again; either way STORAGE_FULL, and no restart is used.
			events := len(eventLines(t, runDir))
			more := fill(t, runs, "more", 0)
			r := obversa(t, dir, "resume", runDir)
			noRepeats(t, "resume on a full device", lineOf(r.stdout, "paused")+lineOf(r.stderr, "Error"))
			switch {
			case r.code == exitUsage && strings.Contains(r.stderr, "STORAGE_FULL"):
				if n := len(eventLines(t, runDir)); n != events {
					t.Errorf("the refused resume recorded %d events", n-events)
				}
			case r.code == exitPaused && strings.Contains(r.stdout, "paused STORAGE_FULL"):
			default:
				t.Errorf("resume on a full device: exit %d, want a refusal or a pause, STORAGE_FULL: %s %s", r.code, r.stdout, r.stderr)
			}
			if st := status(t, runDir); st.RestartsUsed != 0 {
				t.Errorf("%d restarts used on a full device", st.RestartsUsed)
			}
			for _, f := range []string{filler, more} {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
			r = obversa(t, dir, "resume", "--json", runDir)
			if r.code != 0 || !strings.Contains(r.stdout, `"kind":"complete"`) {
				t.Fatalf("resume after space was freed: exit %d: %s %s", r.code, r.stdout, r.stderr)
			}
			if n := len(recorded(t, runDir, "run:worker-exited")); n != 0 {
				t.Errorf("%d worker crashes recorded, want none", n)
			}
		})
	}
}

// TestStorageFullRefusesStart: a device with no room for the run's record
// refuses the run before it starts: exit 2, STORAGE_FULL, naming the
// path, and no run is left behind.
func TestStorageFullRefusesStart(t *testing.T) {
	t.Parallel()
	runFile := writeRunFile(t, strings.NewReplacer("GATE", "/nonexistent", "LONG", "x").Replace(storageRunFile))
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	runs := filepath.Join(dir, ".obversa", "default", "runs")
	smallDevice(t, runs, "1m")
	fill(t, runs, "filler", 0)
	r := obversa(t, dir, "run", "--json", "--run-id", "nospace", runFile)
	var ref map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &ref); err != nil {
		t.Fatalf("run printed %q (exit %d, stderr %q): %v", r.stdout, r.code, r.stderr, err)
	}
	noRepeats(t, "the refusal", ref["message"].(string))
	noRepeats(t, "the refusal in text", obversa(t, dir, "run", "--run-id", "nospace", runFile).stderr)
	if r.code != exitUsage || ref["code"] != "STORAGE_FULL" || !strings.Contains(ref["message"].(string), runs) {
		t.Fatalf("run on a full device: exit %d, refusal %v; want exit %d STORAGE_FULL naming %s", r.code, ref, exitUsage, runs)
	}
	if want := "free space there, or point `storage.directory` in " + runFile; !strings.Contains(ref["message"].(string), want) {
		t.Errorf("the refusal %q does not say %q", ref["message"], want)
	}
	if _, err := os.Stat(filepath.Join(runs, "nospace")); !os.IsNotExist(err) {
		t.Errorf("the refused run left %s behind (%v); refusal %v", filepath.Join(runs, "nospace"), err, ref)
	}
}

// readLog returns the run's worker.log, for failure messages.
// fullRun is an `obversa run --json --run-id full` of storageRunFile
// started by startOnSmallDevice, its first node holding on its gate.
type fullRun struct {
	dir, runs, runDir, gate string
	cmd                     *exec.Cmd
	out, errb               bytes.Buffer
}

// startOnSmallDevice pins storageRunFile (LONG replaced by long, then
// edit applied when not nil) in a new directory, puts its runs directory
// on a 2 MiB file system of its own and starts the run, returning once
// its first node's attempt has started.
func startOnSmallDevice(t *testing.T, long string, edit func(string) string) *fullRun {
	t.Helper()
	fr := &fullRun{dir: t.TempDir()}
	fr.gate = filepath.Join(fr.dir, "gate")
	text := strings.NewReplacer("GATE", fr.gate, "LONG", long).Replace(storageRunFile)
	if edit != nil {
		text = edit(text)
	}
	runFile := writeRunFile(t, text)
	fr.dir = filepath.Dir(runFile)
	if r := obversa(t, fr.dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	fr.runs = filepath.Join(fr.dir, ".obversa", "default", "runs")
	smallDevice(t, fr.runs, "2m")
	fr.cmd = exec.Command(filepath.Join(binDir, "obversa"), "run", "--json", "--run-id", "full", runFile)
	fr.cmd.Dir = fr.dir
	fr.cmd.Stdout, fr.cmd.Stderr = &fr.out, &fr.errb
	if err := fr.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fr.cmd.Process.Kill(); _, _ = fr.cmd.Process.Wait() })
	fr.runDir = filepath.Join(fr.runs, "full")
	waitFor(t, 30*time.Second, "node wait to start", func() bool {
		_, err := os.Stat(filepath.Join(fr.runDir, "events.jsonl"))
		return err == nil && len(recorded(t, fr.runDir, "graph:node-attempt-started")) == 1
	})
	return fr
}

func readLog(runDir string) string {
	b, _ := os.ReadFile(filepath.Join(runDir, "worker.log"))
	return string(b)
}

// TestPauseNamesWhatCutTheAttemptOff: the record fills while a node that
// is not retry-safe runs, and the run pauses STORAGE_FULL; after space is
// freed, `obversa resume` asks whether the attempt took effect, and the
// reason names the pause that stopped its worker (the record holds no
// worker exit for it), not a worker whose end was never recorded.
func TestPauseNamesWhatCutTheAttemptOff(t *testing.T) {
	t.Parallel()
	// Node wait, the first node, is not retry-safe.
	notRetrySafe := func(text string) string { return strings.Replace(text, "retry_safe = true", "retry_safe = false", 1) }
	fr := startOnSmallDevice(t, "x", notRetrySafe)
	dir, runs, runDir, cmd, out, errb, gate := fr.dir, fr.runs, fr.runDir, fr.cmd, &fr.out, &fr.errb, fr.gate
	if started := recorded(t, runDir, "graph:node-attempt-started"); started[0]["retry_safe"] != false {
		t.Fatalf("attempt-started %v, want node wait not retry-safe", started[0])
	}
	filler := fill(t, runs, "filler", 0)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	w := recorded(t, runDir, "graph:run-waiting")
	if len(w) != 1 || w[0]["code"] != "STORAGE_FULL" {
		t.Fatalf("run-waiting %v, want the STORAGE_FULL pause recorded; run printed %s %s", w, out.String(), errb.String())
	}
	pause := w[0]["output"].(map[string]any)["message"].(string)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r := obversa(t, dir, "resume", runDir)
	paused := recorded(t, runDir, "graph:node-paused")
	if r.code != exitPaused || len(paused) != 1 || paused[0]["position"] != "dag/wait/1" {
		t.Fatalf("resume: exit %d, node-paused %v; want dag/wait/1 paused for reconciliation: %s %s", r.code, paused, r.stdout, r.stderr)
	}
	want := "the worker running it stopped (STORAGE_FULL: " + pause + "); its effect may have happened"
	if got := paused[0]["request"].(map[string]any)["reason"]; got != want {
		t.Fatalf("reconcile reason %q, want %q", got, want)
	}
}
