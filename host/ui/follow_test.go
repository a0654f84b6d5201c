package ui

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// TestLivePageEndsWithTheRun: a run page's event stream ends with "end"
// once the run is over — its result and the cleanup after it recorded
// (r1), or its result recorded and its watchdog gone without the cleanup
// (r2) — and then closes; a page opened afterwards gets everything and
// "end" at once. The follower stops with the last page.
func TestLivePageEndsWithTheRun(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	runs := map[string]*testRun{"r1": newTestRun(t, storage, "r1"), "r2": newTestRun(t, storage, "r2")}
	s, hs := newTestServer(t, storage, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, id := range []string{"r1", "r2"} {
		r := runs[id]
		p := openSSE(t, ctx, hs.URL+"/api/live/runs/"+id)
		deadline := time.AfterFunc(20*time.Second, func() { p.body.Close() })
		if n, _ := p.next(t); n != "run" {
			t.Fatalf("%s: first event %s", id, n)
		}
		r.append(graph.EventRunFinished, runstate.Message(id, runstate.KindFail, runstate.CodeStopped, "stopped"))
		if id == "r1" {
			r.append(runstate.EventCleanup, runstate.NewCleanup(nil, nil))
		} else {
			r.release()
			goneHolder(t, filepath.Join(storage, "default", "runs", id))
		}
		phase := ""
		for n := ""; n != "end"; {
			var d []byte
			n, d = p.next(t)
			if n == "run" || n == "change" {
				if p := phaseOf(t, n, d); p != "" {
					phase = p
				}
			}
		}
		if phase != string(runstate.PhaseStopped) {
			t.Errorf("%s: the last phase before end is %q, want stopped", id, phase)
		}
		for p.sc.Scan() {
			if p.sc.Text() != "" {
				t.Errorf("%s: the stream goes on after end: %q", id, p.sc.Text())
			}
		}
		deadline.Stop()
		p.body.Close()
		// A page opened now gets the run as it ended, then end.
		late := openSSE(t, ctx, hs.URL+"/api/live/runs/"+id)
		got := []string{}
		for n := ""; n != "end"; {
			n, _ = late.next(t)
			got = append(got, n)
		}
		if len(got) < 4 || got[0] != "run" || got[1] != "timeline" || got[2] != "output" {
			t.Errorf("%s: a page opened after the end got %v, want run, timeline, output, end", id, got)
		}
		late.body.Close()
	}
	waitFor(t, func() bool { return s.activeFollowers() == 0 }, "followers to stop after the runs ended")
}

// goneHolder makes the run's recorded lock holder a process that has
// exited, as when a watchdog dies between the run's result and its
// cleanup.
func goneHolder(t *testing.T, runDir string) {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	h := store.CurrentHolder()
	h.PID = c.Process.Pid
	b, _ := json.Marshal(h)
	if err := os.WriteFile(filepath.Join(runDir, "lock"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
