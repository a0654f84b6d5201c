package main

import (
	"testing"
	"time"

	"github.com/obversa/obversa/host/watchdog"
)

// TestStopBeforeResumeTakesOver: `obversa stop` signals a resuming
// watchdog that holds the run's lock but has not recorded its takeover
// yet (it checks the workspace, its plugin cache, stops what is left of
// the run). stop promises STOPPED; the resume records it instead of
// ending on "context canceled" and leaving the run paused, with the
// message of the operator's stop of a held run, not that no watchdog held
// it. The stop is
// handed to the command's signal loop as signal.Notify would hand it,
// before the resume starts: the widest form of that window.
func TestStopBeforeResumeTakesOver(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  approval = [\"a\"]\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
	if r := obversa(t, dir, "run", "--run-id", "sr", runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d: %s", r.code, exitPaused, r.stderr)
	}
	runDir := runDirOf(runFile, "sr")
	sigs, stop := watchSignals()
	defer stop()
	sigs.ch <- stopSignal
	select {
	case <-sigs.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the stop signal is not taken")
	}
	res, _, err := resumeRun(sigs, dirRun{watchdog.DirRef(runDir)}, watchdog.ResumeOptions{Position: "dag/a/1"}, "none", nil)
	if err != nil {
		t.Fatalf("resume stopped before its takeover: %v, want the run recorded STOPPED", err)
	}
	if res == nil || res.Code != "STOPPED" {
		t.Errorf("result %+v, want STOPPED", res)
	}
	if st := status(t, runDir); st.Phase != "stopped" {
		t.Errorf("phase %q, want stopped", st.Phase)
	}
	wantStoppedByRequest(t, runDir)
}
