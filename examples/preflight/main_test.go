package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestExample builds obversa and mock-engine, runs the example and checks
// its report: paused PREFLIGHT_PAUSED with nothing dispatched, resumed
// with the pause's event id to completion, the exact calls log, and the
// temporary directory removed.
func TestExample(t *testing.T) {
	bin := t.TempDir()
	for name, pkg := range map[string]string{"obversa": "./cmd/obversa", "mock-engine": "./plugins/mock-engine"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", name, err, out)
		}
	}
	var log bytes.Buffer
	rep, err := Run(bin, &log)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	want := &Report{
		Paused:                 Result{Kind: "paused", Code: "PREFLIGHT_PAUSED", Exit: 3},
		PreflightEventID:       "preflight-pause-1",
		DispatchedBeforeResume: 0,
		Resumed:                Result{Kind: "complete", Exit: 0},
		Calls:                  []string{"static", "live:not-ready", "static", "live:ready", "ordinary"},
		OK:                     true,
	}
	if diff := cmp.Diff(want, rep, cmpopts.IgnoreFields(Report{}, "Dir"), cmpopts.IgnoreFields(Result{}, "Output")); diff != "" {
		t.Errorf("report (-want +got):\n%s\nCLI stderr:\n%s", diff, log.String())
	}
	var out struct {
		ID string `json:"preflight_event_id"`
	}
	if err := json.Unmarshal(rep.Paused.Output, &out); err != nil || out.ID != rep.PreflightEventID {
		t.Errorf("paused output %s does not carry the event id %s", rep.Paused.Output, rep.PreflightEventID)
	}
	if _, err := os.Stat(rep.Dir); !os.IsNotExist(err) {
		t.Errorf("the temporary directory %s was not removed: %v", rep.Dir, err)
	}
}
