package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// completedRun runs the usage chain to completion and returns its run
// directory.
func completedRun(t *testing.T) string {
	t.Helper()
	runFile := usageRun(t, `timeout = "5m"`, `{ node = "a", text = "x" }`, "")
	if r := obversa(t, filepath.Dir(runFile), "run", "--run-id", "f", runFile); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	return runDirOf(runFile, "f")
}

// TestVerifyCorruptIndex: with a garbage events.jsonl.idx beside a stream
// whose last committed event was cut short, verify and status refuse,
// naming the index and how to move it aside, instead of taking the cut
// event for a torn write; nothing in the run directory changes.
func TestVerifyCorruptIndex(t *testing.T) {
	t.Parallel()
	runDir := completedRun(t)
	events := filepath.Join(runDir, "events.jsonl")
	idx := events + ".idx"
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	cut := b[:len(b)-40]
	garbage := []byte("\x8b\x03\xfe\x11 not an index; 50 bytes of garbage here....")
	for name, data := range map[string][]byte{events: cut, idx: garbage} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Dir(runDir)

	v := obversa(t, dir, "verify", runDir)
	if v.code != exitFailed || !strings.Contains(v.stdout, "fault: events.jsonl.idx:") || !strings.Contains(v.stderr, "mv "+idx) ||
		!strings.Contains(v.stderr, "1 fault in ") || strings.Contains(v.stderr, "other faults") {
		t.Errorf("verify: exit %d\n%s%s\nwant exit 1, a fault in events.jsonl.idx and how to move it aside", v.code, v.stdout, v.stderr)
	}
	var rep struct {
		OK     bool `json:"ok"`
		Faults []struct {
			File string `json:"file"`
		} `json:"faults"`
	}
	vj := obversa(t, dir, "verify", "--json", runDir)
	if err := json.Unmarshal([]byte(vj.stdout), &rep); err != nil || rep.OK || len(rep.Faults) != 1 || rep.Faults[0].File != "events.jsonl.idx" {
		t.Errorf("verify --json: exit %d %v\n%s", vj.code, err, vj.stdout)
	}
	s := obversa(t, dir, "status", runDir)
	if s.code != exitFailed || !strings.Contains(s.stderr, idx+" is damaged") || !strings.Contains(s.stderr, "obversa verify") {
		t.Errorf("status: exit %d\n%s%s\nwant exit 1 naming the damaged index", s.code, s.stdout, s.stderr)
	}
	if got, _ := os.ReadFile(events); !bytes.Equal(got, cut) {
		t.Error("events.jsonl changed")
	}
	if got, _ := os.ReadFile(idx); !bytes.Equal(got, garbage) {
		t.Error("events.jsonl.idx changed")
	}
	if torn, _ := filepath.Glob(events + ".torn-*"); len(torn) != 0 {
		t.Errorf("a committed event was moved aside as torn: %v", torn)
	}
}

// TestStatusGarbageLockFile: a lock file whose holder record cannot be
// parsed. While nothing holds the lock, status reports the record stale
// (exit 0, the run has no owner) and changes nothing; while a process
// holds the lock, status fails naming the file and how to find the holder.
func TestStatusGarbageLockFile(t *testing.T) {
	t.Parallel()
	runDir := completedRun(t)
	lock := filepath.Join(runDir, "lock")
	garbage := []byte("obviously not JSON\n")
	if err := os.WriteFile(lock, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(runDir)

	s := obversa(t, dir, "status", runDir)
	if s.code != 0 || !strings.Contains(s.stdout, "lock:     store: the holder record in "+lock) || !strings.Contains(s.stdout, "stale") {
		t.Errorf("status: exit %d\n%s%s\nwant exit 0 and the record reported stale", s.code, s.stdout, s.stderr)
	}
	var st struct {
		Phase    string `json:"phase"`
		LockNote string `json:"lock_note"`
	}
	sj := obversa(t, dir, "status", "--json", runDir)
	if err := json.Unmarshal([]byte(sj.stdout), &st); err != nil || st.Phase != "completed" || !strings.Contains(st.LockNote, lock) {
		t.Errorf("status --json: exit %d %v\n%s%s", sj.code, err, sj.stdout, sj.stderr)
	}

	f, err := os.Open(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	h := obversa(t, dir, "status", runDir)
	if h.code != exitFailed || !strings.Contains(h.stderr, "holder record in "+lock) || !strings.Contains(h.stderr, "fuser -v "+lock) {
		t.Errorf("status of a held run with a garbage record: exit %d\n%s%s\nwant exit 1 naming the file and how to find the holder", h.code, h.stdout, h.stderr)
	}
	if got, _ := os.ReadFile(lock); !bytes.Equal(got, garbage) {
		t.Error("status changed the lock file")
	}
}
