package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenRunDirReadOnly: a read-only open reads the committed events,
// leaves a torn tail in place, creates nothing and refuses appends.
func TestOpenRunDirReadOnly(t *testing.T) {
	ctx := context.Background()
	st, err := Open(t.TempDir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	run, err := st.CreateRun(ctx, "r", Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.(*Run).events.Append(ctx, 0, NewEvent{Type: "t", Data: map[string]int{"n": 1}}, NewEvent{Type: "t", Data: map[string]int{"n": 2}}); err != nil {
		t.Fatal(err)
	}
	run.Close()
	path := filepath.Join(st.RunDir("r"), "events.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"rev":3,"id":"x","type":"t"`); err != nil { // torn: no newline
		t.Fatal(err)
	}
	f.Close()
	before, _ := os.ReadFile(path)

	ro, err := OpenRunDirReadOnly(ctx, st.RunDir("r"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := ro.events.Read(ctx, 1, func(Event) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("read %d events, want the 2 committed", n)
	}
	if _, err := ro.events.Append(ctx, 2, NewEvent{Type: "t", Data: 1}); err == nil {
		t.Fatal("append on a read-only run succeeded")
	}
	ro.Close()
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("a read-only open changed events.jsonl")
	}
	if m, _ := filepath.Glob(path + ".torn-*"); len(m) != 0 {
		t.Fatalf("a read-only open moved the torn tail aside: %v", m)
	}
	if _, err := OpenRunDirReadOnly(ctx, t.TempDir()); !errors.Is(err, ErrRunNotFound) {
		t.Fatalf("read-only open of an empty dir: %v, want ErrRunNotFound", err)
	}
}

// TestVerifyNoticesCutTail: whole events cut from the end leave a valid
// chain; the validated-prefix cache still records them, and Verify says so.
func TestVerifyNoticesCutTail(t *testing.T) {
	ctx := context.Background()
	st, err := Open(t.TempDir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	run, err := st.CreateRun(ctx, "r", Policy{})
	if err != nil {
		t.Fatal(err)
	}
	rev := int64(0)
	for i := 0; i < 300; i++ {
		if rev, err = run.(*Run).events.Append(ctx, rev, NewEvent{Type: "t", Data: map[string]int{"n": i}}); err != nil {
			t.Fatal(err)
		}
	}
	run.Close() // writes the cache
	path := filepath.Join(st.RunDir("r"), "events.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + cacheSuffix); err != nil {
		t.Skipf("no cache written for 300 events: %v", err)
	}
	if rep, err := Verify(ctx, st.RunDir("r")); err != nil || len(rep.Faults) != 0 {
		t.Fatalf("intact run: %v %+v", err, rep.Faults)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	cut := bytes.Join(lines[:len(lines)-2], nil) // drop the last event
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(ctx, st.RunDir("r"))
	if !errors.Is(err, ErrCorruptEventStream) || len(rep.Faults) != 1 {
		t.Fatalf("cut tail: err %v, faults %+v", err, rep.Faults)
	}
}
