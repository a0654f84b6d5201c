package watchdog

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenErrorSaysNothingRecordedToPeopleOnly: a command a person runs
// to write a stored run that cannot open its record says that nothing was
// recorded, and its error matches ErrNothingRecorded; the worker, whose
// error goes to the watchdog and the logs, does not say it.
func TestOpenErrorSaysNothingRecordedToPeopleOnly(t *testing.T) {
	ctx := context.Background()
	missing := DirRef(filepath.Join(t.TempDir(), "no-run"))
	for _, tc := range []struct {
		name   string
		call   func() error
		people bool
	}{
		{"stop", func() error { _, err := StopIdle(ctx, missing); return err }, true},
		{"approve", func() error { _, err := Approve(ctx, missing, "dag/a/1", false, time.Second); return err }, true},
		{"resume", func() error { _, _, err := Resume(ctx, missing, ResumeOptions{}); return err }, true},
		{"preflight interrupt", func() error { _, _, err := InterruptPreflight(ctx, missing); return err }, true},
		{"worker", func() error { _, err := Work(ctx, missing, 0, nil); return err }, false},
	} {
		err := tc.call()
		if err == nil {
			t.Fatalf("%s on a missing run: no error", tc.name)
		}
		says := strings.Contains(err.Error(), "nothing was recorded")
		if says != tc.people || errors.Is(err, ErrNothingRecorded) != tc.people {
			t.Errorf("%s: %q (matches ErrNothingRecorded: %v); want it to say nothing was recorded: %v", tc.name, err, errors.Is(err, ErrNothingRecorded), tc.people)
		}
	}
}
