// Package reviewloop_test runs the review-loop example with the real
// binaries: a writer's draft fails review in round 1, the revision passes
// in round 2, and the record tells that story.
package reviewloop_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/internal/exampletest"
)

var binDir string

func TestMain(m *testing.M) {
	os.Exit(exampletest.BundledMain(m, &binDir, "mock-engine", "cmd-engine"))
}

func TestReviewLoop(t *testing.T) {
	work, code, stdout, stderr := exampletest.RunCopy(t, binDir)
	obversa := filepath.Join(binDir, "obversa")
	var res struct {
		Kind   string `json:"kind"`
		Output struct {
			Nodes struct {
				Config struct {
					Author string          `json:"author"`
					Review json.RawMessage `json:"review"`
				} `json:"config"`
			} `json:"nodes"`
		} `json:"output"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || res.Kind != "complete" {
		t.Fatalf("run: exit %d, %v: %s\n%s", code, err, stdout, stderr)
	}
	if !strings.Contains(res.Output.Nodes.Config.Author, "request_timeout") {
		t.Errorf("the last round's draft has no request timeout: %q", res.Output.Nodes.Config.Author)
	}
	runDir := filepath.Join(work, ".obversa", "default", "runs", "example")
	_, events, _ := exampletest.Obversa(t, obversa, work, "events", runDir)
	var story []string
	for _, line := range strings.Split(events, "\n") {
		if f := strings.Fields(line); len(f) > 3 && strings.HasPrefix(f[2], "graph:loop-") {
			story = append(story, strings.Join(f[3:], " "))
		}
	}
	want := []string{
		"config: starts, at most 3 rounds",
		"config: round 1",
		"config round 1: until met=true (until is true: the review runs)",
		"config round 1: review says fail — The config has no request timeout.; [review] request_timeout is missing: a slow billing backend would hold every connection open. (revise)",
		"config: round 2",
		"config round 2: until met=true (until is true: the review runs)",
		"config round 2: review says pass — The config sets a request timeout. (accepted)",
		"config: passed in round 2",
	}
	if diff := cmp.Diff(want, story); diff != "" {
		t.Errorf("the loop's events (-want +got):\n%s\nall events:\n%s", diff, events)
	}
	_, status, _ := exampletest.Obversa(t, obversa, work, "status", "--json", runDir)
	var st struct {
		Loops []struct {
			Loop       string `json:"loop"`
			Round      int    `json:"round"`
			Status     string `json:"status"`
			LastReview string `json:"last_review"`
		} `json:"loops"`
	}
	if err := json.Unmarshal([]byte(status), &st); err != nil || len(st.Loops) != 1 || st.Loops[0].Round != 2 || st.Loops[0].Status != "passed" {
		t.Errorf("status: %v %s", err, status)
	}
	checkLoopViews(t, obversa, work, runDir)
	if code, out, errs := exampletest.Obversa(t, obversa, work, "verify", runDir); code != 0 {
		t.Errorf("verify: exit %d: %s %s", code, out, errs)
	}
}

// checkLoopViews checks that show, runs and graph RUN show the loop: its
// round and verdict, each round's members by name, the loop's frame
// coloured by its status.
func checkLoopViews(t *testing.T, obversa, work, runDir string) {
	t.Helper()
	_, show, _ := exampletest.Obversa(t, obversa, work, "show", runDir)
	// Each round's review member shows what its verdict did to the round,
	// not "passed" beside a failing verdict.
	for _, want := range []string{"loop:     config round 2 of 3 (passed, last review pass)", "config/2/author",
		"config/1/review  rejected", "verdict fail (round rejected): The config has no request timeout.",
		"config/2/review  accepted", "verdict pass (accepted): The config sets a request timeout."} {
		if !strings.Contains(show, want) {
			t.Errorf("show has no %q:\n%s", want, show)
		}
	}
	if _, member, _ := exampletest.Obversa(t, obversa, work, "show", runDir, "dag/config/1/review/1"); !strings.Contains(member, "node:     config/1/review") ||
		!strings.Contains(member, "status:   rejected\nreview:   fail (round rejected): The config has no request timeout.") {
		t.Errorf("show of round 1's review:\n%s", member)
	}
	if code, _, errs := exampletest.Obversa(t, obversa, work, "show", runDir, "config/1/reveiw"); code == 0 || !strings.Contains(errs, `did you mean "config/1/review"`) {
		t.Errorf("show of a mistyped member: exit %d: %s", code, errs)
	}
	_, runs, _ := exampletest.Obversa(t, obversa, work, "runs", "--json")
	if !strings.Contains(runs, `"loops":[{"loop":"config","round":2,"max_rounds":3,"status":"passed","last_review":"pass"}]`) ||
		!strings.Contains(runs, `"total":3`) {
		t.Errorf("runs --json: %s", runs)
	}
	if _, dot, _ := exampletest.Obversa(t, obversa, work, "graph", "--format", "dot", runDir); !strings.Contains(dot, "review review · passed") {
		t.Errorf("graph RUN:\n%s", dot)
	}
}
