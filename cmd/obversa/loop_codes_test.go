package main

import (
	"strings"
	"testing"
)

// TestLoopAndForEachCodes runs the ways a loop or a for_each node fails
// through the real binaries and checks the code the record gives each:
// LOOP_EXHAUSTED for a review that never passes, VERDICT_INVALID for an
// engine reviewer whose answer is not a verdict, FOR_EACH_INVALID for
// items that are neither a list of unique strings nor an object,
// FOR_EACH_LIMIT for more items than max_items.
func TestLoopAndForEachCodes(t *testing.T) {
	t.Parallel()
	const planPrints = `
  node "plan" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "printf '%s' 'ITEMS'"] }
    retry_safe = true
  }
  node "lint" {
    depends_on = ["plan"]
    for_each   = "${jsondecode(input.results.plan.stdout)}"
    MAXITEMS
    lane       = "w"
    prompt     = "Lint ${each.key}"
  }
`
	loop := `
  loop "config" {
    max_rounds = 2
    review     = "check"
    node "author" {
      lane   = "w"
      prompt = "Write the config."
    }
    node "check" {
      lane       = "w"
      depends_on = ["author"]
      prompt     = "Review it."
    }
  }
`
	tests := []struct {
		name, mock, graph string
		// event is the event whose data carries want in its code field.
		event, want string
	}{
		{name: "a review that never passes exhausts the loop",
			mock:  `{ responses = [{ node = "check", json = { status = "fail", summary = "no timeout", findings = [] } }] }`,
			graph: loop, event: "graph:loop-finished", want: "LOOP_EXHAUSTED"},
		{name: "an engine reviewer's plain text is no verdict",
			mock:  `{ responses = [{ node = "check", text = "Looks good to me." }] }`,
			graph: loop, event: "graph:node-failed", want: "VERDICT_INVALID"},
		{name: "items that are a number",
			graph: strings.NewReplacer("ITEMS", "42", "MAXITEMS", "").Replace(planPrints), event: "graph:node-expanded", want: "FOR_EACH_INVALID"},
		{name: "a repeated key",
			graph: strings.NewReplacer("ITEMS", `[\"a.go\",\"a.go\"]`, "MAXITEMS", "").Replace(planPrints), event: "graph:node-expanded", want: "FOR_EACH_INVALID"},
		{name: "more items than max_items",
			graph: strings.NewReplacer("ITEMS", `[\"a.go\",\"b.go\",\"c.go\"]`, "MAXITEMS", "max_items = 2").Replace(planPrints), event: "graph:node-expanded", want: "FOR_EACH_LIMIT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runFile, _ := rulesRun(t, tt.mock, "", simpleLane+"graph \"dag\" {\n"+tt.graph+"}\n")
			r, res := runJSON(t, runFile, "--run-id", "c")
			if r.code == 0 || res["code"] != "DAG_NODE_FAILED" {
				t.Fatalf("run: exit %d, result %v", r.code, res)
			}
			var codes []any
			for _, d := range recorded(t, runDirOf(runFile, "c"), tt.event) {
				codes = append(codes, d["code"])
			}
			found := false
			for _, c := range codes {
				found = found || c == tt.want
			}
			if !found {
				t.Errorf("%s codes %v, want %s among them", tt.event, codes, tt.want)
			}
		})
	}
}
