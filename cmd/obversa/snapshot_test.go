package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/host/runstate"
)

// TestFoldSnapshot: a worker leaves a fold snapshot of its record beside
// it; status reads the same with it, without it and with it damaged;
// verify checks it and names a damaged or foreign one as a fault with
// the way to recover.
func TestFoldSnapshot(t *testing.T) {
	// 120 nodes, a chain of fan-outs: about 600 events, more than the
	// shortest record a snapshot is kept of.
	runFile := graphRunFile(t, 120, 8, func(i int) int { return i/4 - 1 }, false)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	for _, id := range []string{"a", "b"} {
		if r := obversa(t, dir, "run", "--run-id", id, runFile); r.code != 0 {
			t.Fatalf("run %s: %d %s", id, r.code, r.stderr)
		}
	}
	runDir := runDirOf(runFile, "a")
	snap := filepath.Join(runDir, runstate.SnapshotFile)
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatalf("no fold snapshot after the run: %v", err)
	}
	var h struct {
		Rev int64 `json:"rev"`
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatal(err)
	}
	if finished := revOf(t, runDir, "graph:run-finished"); h.Rev < finished {
		t.Errorf("the snapshot folds up to rev %d, the run finished at rev %d", h.Rev, finished)
	}
	if r := obversa(t, dir, "verify", "a"); r.code != 0 || !strings.HasPrefix(r.stdout, "ok:") {
		t.Fatalf("verify: %d %s %s", r.code, r.stdout, r.stderr)
	}

	status := func() string {
		t.Helper()
		r := obversa(t, dir, "status", "--json", "a")
		if r.code != 0 {
			t.Fatalf("status: %d %s", r.code, r.stderr)
		}
		return r.stdout
	}
	with := status()
	os.Rename(snap, snap+".off")
	without := status()
	if with != without {
		t.Errorf("status with the snapshot:\n%s\nwithout:\n%s", with, without)
	}

	flip := bytes.Clone(data)
	flip[len(flip)-20] ^= 0x10
	other, err := os.ReadFile(filepath.Join(runDirOf(runFile, "b"), runstate.SnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{"damaged": flip, "cut short": data[:len(data)/2], "of another run": other} {
		if err := os.WriteFile(snap, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := status(); got != without {
			t.Errorf("%s: status:\n%s\nwant:\n%s", name, got, without)
		}
		r := obversa(t, dir, "verify", "a")
		if r.code != exitFailed || !strings.Contains(r.stdout, "fault: fold.snapshot: fold snapshot is invalid") ||
			!strings.Contains(r.stdout, "rm "+snap) {
			t.Errorf("%s: verify: %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
		r = obversa(t, dir, "verify", "--json", "a")
		if r.code != exitFailed || !strings.Contains(r.stdout, `"code":"CORRUPT_FOLD_SNAPSHOT"`) {
			t.Errorf("%s: verify --json: %d\n%s", name, r.code, r.stdout)
		}
	}
	// Written by another version: ignored, not a fault.
	stale := bytes.Replace(data, []byte(`"fold":"`), []byte(`"fold":"0+`), 1)
	if err := os.WriteFile(snap, stale, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, dir, "verify", "a"); r.code != 0 || !strings.Contains(r.stdout, "written by another version") {
		t.Errorf("stale: verify: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := status(); got != without {
		t.Errorf("stale: status:\n%s\nwant:\n%s", got, without)
	}
}

// revOf returns the revision of the last event of type typ in the record
// in runDir (0 when there is none).
func revOf(t *testing.T, runDir, typ string) int64 {
	t.Helper()
	f, err := os.Open(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rev int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e struct {
			Rev  int64  `json:"rev"`
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == typ {
			rev = e.Rev
		}
	}
	return rev
}
