package watchdog

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// TestAppendFoldedConflict: an append at a revision the record has moved
// past is refused and writes nothing.
func TestAppendFoldedConflict(t *testing.T) {
	ctx := context.Background()
	runDir := newRun(t)
	run, st, err := openRun(ctx, DirRef(runDir))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	other, err := store.OpenRunDir(ctx, runDir, store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	owner, err := other.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Append(ctx, other.Rev(), store.NewEvent{Type: runstate.EventTakeover, Data: runstate.TakeoverData{PID: 1}}); err != nil {
		t.Fatal(err)
	}
	owner.Release()
	own, err := run.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Release()
	err = appendFolded(ctx, run, st, store.NewEvent{Type: graph.EventRunFinished, Data: runstate.Message("r", runstate.KindFail, CodeStopped, "x")})
	if !errors.Is(err, store.ErrRevisionConflict) {
		t.Fatalf("append from a stale fold: %v, want REVISION_CONFLICT", err)
	}
	if got := events(t, runDir); !slices.Equal(got, []string{runstate.EventTakeover}) {
		t.Fatalf("events %v", got)
	}
}

// TestWatchdogMessages: a message the watchdog records has the run's
// known secrets redacted and is cut to maxMessageBytes on a rune
// boundary, so no cause it quotes can make its event refused.
func TestWatchdogMessages(t *testing.T) {
	t.Setenv("OBVERSA_WATCHDOG_TEST_SECRET", "hunter2hunter2")
	s := &supervisor{plan: &plan.Plan{Storage: plan.Storage{KnownSecretsFromEnv: []string{"OBVERSA_WATCHDOG_TEST_SECRET"}}}}
	if got := s.message("the plugin said hunter2hunter2"); strings.Contains(got, "hunter2") || !strings.Contains(got, "[REDACTED]") {
		t.Errorf("message kept the secret: %q", got)
	}
	long := strings.Repeat("é", maxMessageBytes)
	got := s.message(long)
	if len(got) > maxMessageBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "(cut)") {
		t.Errorf("a message of %d bytes became %d bytes (valid UTF-8 %v): …%q", len(long), len(got), utf8.ValidString(got), got[max(0, len(got)-20):])
	}
	if got := s.message("short"); got != "short" {
		t.Errorf("message(short) = %q", got)
	}
}
