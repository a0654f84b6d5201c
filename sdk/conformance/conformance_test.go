package conformance_test

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/sdk/conformance"
)

// statuses returns the names of the cases that ended with status s.
func statuses(rep *conformance.Report, s conformance.Status) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Status == s {
			out = append(out, r.Case)
		}
	}
	sort.Strings(out)
	return out
}

func TestMockEngine(t *testing.T) {
	t.Parallel()
	rep := conformance.Run(t, filepath.Join(binDir, "mock-engine"), conformance.Options{})
	if got := statuses(rep, conformance.Skip); len(got) > 0 {
		t.Errorf("skipped %v; the mock engine serves every scenario", got)
	}
	if rep.ScenarioControl != "service" || rep.Plugin != "mock 0.1.0" {
		t.Errorf("report header: control %q, plugin %q", rep.ScenarioControl, rep.Plugin)
	}
}

func TestCmdEngine(t *testing.T) {
	t.Parallel()
	opts, err := conformance.LoadOptions(filepath.Join(repoRoot, "plugins/cmd-engine/testdata/conformance.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep := conformance.Run(t, filepath.Join(binDir, "cmd-engine"), opts)
	// A CLI cannot make the plugin's own handler panic.
	if diff := cmp.Diff([]string{"robust.panic"}, statuses(rep, conformance.Skip)); diff != "" {
		t.Errorf("skipped cases (-want +got):\n%s", diff)
	}
	if rep.ScenarioControl != "requests" {
		t.Errorf("scenario control %q, want requests", rep.ScenarioControl)
	}
}

// TestBrokenPlugins checks that each deliberately broken plugin fails
// exactly the case it breaks.
func TestBrokenPlugins(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode string
		want string // the one failing case
	}{
		{"stdout-noise", "handshake.line"},
		{"not-serving", "health"},
		{"ignores-cancel", "run.cancel"},
		{"zero-usage", "run.usage"},
		{"two-finals", "run.parts"},
		{"never-exits", "robust.shutdown"},
	}
	bin := self(t)
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			rep, err := conformance.Check(ctx, bin, conformance.Options{Env: map[string]string{modeEnv: tt.mode}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tt.want}, statuses(rep, conformance.Fail)); diff != "" {
				for _, r := range rep.Results {
					if r.Status == conformance.Fail {
						t.Logf("%s: %s", r.Case, r.Seen)
					}
				}
				t.Errorf("failed cases (-want +got):\n%s", diff)
			}
		})
	}
}
