package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/internal/testutil"
)

// helperEnv selects a helper role when the test binary is re-executed as a
// misbehaving (or competing) process; see helper_test.go.
const helperEnv = "STORE_TEST_HELPER"

// TestMain runs a helper role when asked, else the tests, with the
// fuzzer's minimizing of each new input bounded (testutil.RunFuzzBounded):
// FuzzRecover's and FuzzOpenWithCache's inputs are whole records, which
// no removal of bytes keeps whole, so minimizing one took the fuzzer's
// default 60 s at 0 execs/s.
func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role))
	}
	testutil.RunFuzzBounded(m)
}

// newTestRun creates a run in a fresh store and takes its ownership.
func newTestRun(t testing.TB, p Policy) *Run {
	t.Helper()
	r := newUnownedRun(t, p)
	own, err := r.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Release() })
	return r
}

// newUnownedRun creates a run in a fresh store without taking ownership.
func newUnownedRun(t testing.TB, p Policy) *Run {
	t.Helper()
	s, err := Open(t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.CreateRun(context.Background(), "run-1", p)
	r, _ := rec.(*Run)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// reopen closes r and opens its directory again, releasing r's ownership
// and taking it through the new handle.
func reopen(t testing.TB, r *Run, p Policy) *Run {
	t.Helper()
	if o := r.owner; o != nil {
		o.Release()
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2, err := OpenRunDir(context.Background(), r.Dir(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r2.Close() })
	own, err := r2.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Release() })
	return r2
}

// readAll returns every event of the stream.
func readAll(t testing.TB, s *stream) []Event {
	t.Helper()
	var out []Event
	if err := s.Read(context.Background(), 1, func(e Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// mustAppend appends and fails the test on error.
func mustAppend(t testing.TB, s *stream, expected int64, evs ...NewEvent) int64 {
	t.Helper()
	rev, err := s.Append(context.Background(), expected, evs...)
	if err != nil {
		t.Fatalf("Append(%d): %v", expected, err)
	}
	return rev
}

func eventsPath(r *Run) string { return filepath.Join(r.Dir(), eventsFile) }

// readEvents reads an events.jsonl up to its zero tail (a live writer's
// file carries one; see tail.go).
func readEvents(t testing.TB, path string) []byte {
	t.Helper()
	b := readBytes(t, path)
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

func readBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func diff(t testing.TB, what string, want, got any, opts ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(want, got, opts...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func nowMillis() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
