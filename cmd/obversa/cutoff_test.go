package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestPausedRunShowsItsStepCutOff: a run paused (stop --pause) while a
// step ran shows that step cut off, not running, in status, show and the
// counts, its clock stopped when the run was last carried on: two looks
// a moment apart read the same elapsed time.
func TestPausedRunShowsItsStepCutOff(t *testing.T) {
	t.Parallel()
	dir, runDir, release, cmd := slowRun(t)
	if r := obversa(t, dir, "stop", "--pause", runDir); r.code != 0 {
		t.Fatalf("stop --pause: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if code := exitCode(cmd.Wait()); code != exitPaused {
		t.Fatalf("the paused run exited %d, want %d", code, exitPaused)
	}
	type active struct {
		Position  string `json:"position"`
		ElapsedMS int64  `json:"elapsed_ms"`
		CutOff    bool   `json:"cut_off"`
	}
	type shown struct {
		Run struct {
			Nodes struct{ Running, Interrupted int } `json:"nodes"`
		} `json:"run"`
		Nodes []struct {
			ID        string `json:"id"`
			Status    string `json:"status"`
			ElapsedMS int64  `json:"elapsed_ms"`
		} `json:"nodes"`
	}
	var looks []int64
	for range 2 {
		r := obversa(t, dir, "status", "--json", runDir)
		var st struct {
			Phase  string   `json:"phase"`
			Active []active `json:"active"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status --json: %v: %s", err, r.stdout)
		}
		if st.Phase != "paused" || len(st.Active) != 1 || st.Active[0].Position != "dag/slow/1" || !st.Active[0].CutOff {
			t.Fatalf("status of the paused run: %+v, want dag/slow/1 cut off", st)
		}
		r = obversa(t, dir, "show", "--json", runDir)
		var sh shown
		if err := json.Unmarshal([]byte(r.stdout), &sh); err != nil {
			t.Fatalf("show --json: %v: %s", err, r.stdout)
		}
		if sh.Run.Nodes.Running != 0 || sh.Run.Nodes.Interrupted != 1 || sh.Nodes[0].ID != "slow" || sh.Nodes[0].Status != "interrupted" {
			t.Fatalf("show of the paused run: %+v, want slow interrupted, nothing running", sh)
		}
		if sh.Nodes[0].ElapsedMS != st.Active[0].ElapsedMS {
			t.Errorf("show says slow ran %d ms, status %d ms", sh.Nodes[0].ElapsedMS, st.Active[0].ElapsedMS)
		}
		looks = append(looks, st.Active[0].ElapsedMS)
		if r := obversa(t, dir, "status", runDir); !strings.Contains(r.stdout, "cut off:  dag/slow/1") || strings.Contains(r.stdout, "active:") {
			t.Errorf("status of the paused run:\n%s", r.stdout)
		}
	}
	if looks[0] != looks[1] {
		t.Errorf("the cut-off step's clock runs on: %d ms, then %d ms", looks[0], looks[1])
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, dir, "resume", runDir); r.code != 0 {
		t.Fatalf("resume after the pause: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if r := obversa(t, dir, "show", runDir); !strings.Contains(r.stdout, "2/2 done") || strings.Contains(r.stdout, "interrupted") {
		t.Errorf("show after the resume:\n%s", r.stdout)
	}
}
