package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenMissingRun(t *testing.T) {
	t.Parallel()
	s, _ := Open(t.TempDir(), "ns")
	if _, err := s.OpenRun(context.Background(), "nope", Policy{}); !errors.Is(err, ErrRunNotFound) {
		t.Fatalf("OpenRun of a missing run: %v", err)
	}
	if _, err := s.OpenRun(context.Background(), "../x", Policy{}); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("OpenRun with a bad id: %v", err)
	}
	if _, err := s.CreateRun(context.Background(), "r", Policy{MaxBatchBytes: -1}); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("CreateRun with a negative limit: %v", err)
	}
	if _, err := s.CreateRun(context.Background(), "r", Policy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRun(context.Background(), "r", Policy{}); !errors.Is(err, ErrRunExists) {
		t.Fatalf("second CreateRun: %v", err)
	}
	runs, err := s.ListRuns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "runs", []string{"r"}, runs)
}

// TestOpenWithoutEventsFile opens a run directory whose events.jsonl was
// never created (a crash inside CreateRun).
func TestOpenWithoutEventsFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	os.Mkdir(dir, 0o755)
	r, err := OpenRunDir(context.Background(), dir, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mustAppend(t, r.events, 0, NewEvent{Type: "t"})
}
