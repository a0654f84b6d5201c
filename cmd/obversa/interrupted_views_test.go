package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptedRunViewsAgree: once the watchdog of a run is killed with
// a step started, every view of the interrupted run — `show RUN`, `show
// RUN NODE`, `graph RUN` and the web UI's /api/runs/{id}/node, each
// asking for itself whether anything holds the run — shows the step
// interrupted, its clock stopped when the run was last carried on, so
// two looks agree.
func TestInterruptedRunViewsAgree(t *testing.T) {
	t.Parallel()
	dir, runDir, _, cmd := slowRun(t)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitFor(t, 10*time.Second, "every process of the run to stop", func() bool { return len(marked(t, runDir)) == 0 })
	addr := startUI(t, dir)
	type node struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		ElapsedMS int64  `json:"elapsed_ms"`
	}
	var looks [2][]node
	for i := range looks {
		var sh struct {
			Run   struct{ Phase string } `json:"run"`
			Nodes []node                 `json:"nodes"`
		}
		if r := obversa(t, dir, "show", "--json", runDir); json.Unmarshal([]byte(r.stdout), &sh) != nil || sh.Run.Phase != "interrupted" {
			t.Fatalf("show --json of the interrupted run: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		var one node
		if r := obversa(t, dir, "show", "--json", runDir, "slow"); json.Unmarshal([]byte(r.stdout), &one) != nil {
			t.Fatalf("show --json RUN slow: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		var api node
		resp, err := http.Get(addr + "/api/runs/st/node?name=slow")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &api) != nil {
			t.Fatalf("GET /api/runs/st/node?name=slow: %s: %s", resp.Status, b)
		}
		looks[i] = []node{sh.Nodes[0], one, api}
		for _, n := range looks[i] {
			if n.ID != "slow" || n.Status != "interrupted" {
				t.Errorf("look %d: show, show slow and the web UI's node say %+v; want slow interrupted in each", i+1, looks[i])
				break
			}
		}
		if r := obversa(t, dir, "graph", runDir); !strings.Contains(r.stdout, `slow<br/>required · binding shell · interrupted"]`) {
			t.Errorf("graph of the interrupted run: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	}
	if looks[0][1] != looks[1][1] || looks[0][2] != looks[1][2] || looks[1][0] != looks[1][1] || looks[1][1] != looks[1][2] {
		t.Errorf("the cut-off step's clock runs on, or the views disagree: %+v, then %+v", looks[0], looks[1])
	}
}
