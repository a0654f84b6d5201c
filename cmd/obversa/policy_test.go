package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/sdk"
)

// policyHelper serves a policy broken as mode says: its Decide panics,
// exits the process, hangs, or answers a verdict that is none.
func policyHelper(mode string) int {
	if err := sdk.ServePolicy(brokenPolicy(mode)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type brokenPolicy string

func (p brokenPolicy) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{Name: string(p), Version: "1", Types: []sdk.Type{sdk.TypePolicy}}, nil
}

func (p brokenPolicy) Configure(context.Context, json.RawMessage) ([]sdk.Diagnostic, error) {
	return nil, nil
}

func (p brokenPolicy) Decide(ctx context.Context, _ sdk.DecideRequest) (*sdk.Decision, error) {
	switch p {
	case "policy-panic":
		panic("the policy has a bug")
	case "policy-exit":
		os.Exit(3)
	case "policy-hang":
		<-ctx.Done()
		time.Sleep(time.Second)
	}
	return &sdk.Decision{Verdict: "maybe"}, nil
}

// policyRunFile is a chain: "work" (a binding whose command leaves a line
// in EFFECTS and is retry-safe), then "after"; the graph asks POLICY.
const policyRunFile = `
restart {
  max_restarts    = 2
  initial_backoff = "50ms"
  max_backoff     = "200ms"
}
teardown_grace = "1s"
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
plugin "guard" {
  type   = "policy"
  path   = "BIN/guard"
  config = { wait = ["git push"], deny_binaries = ["dd"] }
}
plugin "broken" {
  type = "policy"
  path = "SELF"
  env  = { OBVERSA_TEST_HELPER = "MODE" }
}
graph "dag" {
  policy         = [POLICY]
  policy_timeout = "1s"
  node "work" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "echo x >> EFFECTS; echo ok"] }
    retry_safe = true
  }
  node "after" {
    binding    = "shell"
    depends_on = ["work"]
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`

// policyRun writes and pins policyRunFile asking policies (quoted names)
// with the broken policy in mode helper, and returns it and its effects
// file. A policy the graph does not ask is only warned about.
func policyRun(t *testing.T, policies, helper string) (runFile, eff string) {
	t.Helper()
	runFile = writeRunFile(t, strings.NewReplacer("POLICY", policies, `"MODE"`, `"`+helper+`"`).Replace(policyRunFile))
	eff = filepath.Join(filepath.Dir(runFile), "effects.log")
	rewrite(t, runFile, "EFFECTS", eff)
	if r := obversa(t, filepath.Dir(runFile), "plugin", "lock", runFile); r.code != 0 {
		t.Fatal(r.stderr)
	}
	return runFile, eff
}

// TestPolicyCrashBetweenDecisionAndAttempt kills the worker once the
// guard's allow is durable and before the attempt starts (failpoint
// after-decision), and once after the dispatch is durable and before the
// question is answered (after-dispatch): the replacement neither skips the
// question nor asks it again once answered — one decision recorded, one
// attempt, one effect.
func TestPolicyCrashBetweenDecisionAndAttempt(t *testing.T) {
	t.Parallel()
	for _, point := range []string{failpoint.AfterDecision, failpoint.AfterDispatch} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			runFile, eff := policyRun(t, `"guard"`, "policy-panic")
			dir := filepath.Dir(runFile)
			r := obversaEnv(t, dir, []string{failpoint.Env + "=" + point + ":work:" + filepath.Join(dir, "fault.flag")}, "run", "--run-id", "c", runFile)
			runDir := runDirOf(runFile, "c")
			st := status(t, runDir)
			decided := 0
			for _, d := range recorded(t, runDir, "graph:action-decided") {
				if d["position"] == "dag/work/1" {
					decided++
				}
			}
			started := len(recorded(t, runDir, "graph:node-attempt-started"))
			if r.code != 0 || st.Phase != "completed" || st.RestartCount != 1 || decided != 1 || started != 2 || effects(t, eff) != 1 {
				t.Fatalf("exit %d, phase %s, restarts %d, %d decisions for dag/work/1, %d attempts started, %d effects; want 0, completed, 1, 1, 2, 1\nstderr:\n%s\nevents:\n%s",
					r.code, st.Phase, st.RestartCount, decided, started, effects(t, eff), r.stderr, strings.Join(eventLines(t, runDir), "\n"))
			}
		})
	}
}

// TestPolicyThatCannotAnswerPauses: a policy that panics, dies, hangs past
// policy_timeout or answers no verdict pauses the position with why —
// never allows it — and a person's approval then carries the run on
// without asking it again.
func TestPolicyThatCannotAnswerPauses(t *testing.T) {
	t.Parallel()
	tests := []struct{ mode, reason string }{
		{"policy-panic", "the policy has a bug"},
		{"policy-exit", `plugin "broken" (`},
		{"policy-hang", "no answer within the policy timeout of 1s"},
		{"policy-bad-verdict", "is not allow, wait or deny"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			runFile, eff := policyRun(t, `"broken"`, tt.mode)
			dir := filepath.Dir(runFile)
			r := obversa(t, dir, "run", "--run-id", "p", runFile)
			runDir := runDirOf(runFile, "p")
			if r.code != exitPaused || !strings.Contains(r.stdout, `paused at dag/work/1 (approval, policy broken): policy "broken" gave no answer`) ||
				!strings.Contains(r.stdout, tt.reason) || effects(t, eff) != 0 {
				t.Fatalf("run: exit %d, %d effects; want paused with %q\nstdout:\n%s\nstderr:\n%s", r.code, effects(t, eff), tt.reason, r.stdout, r.stderr)
			}
			d := recorded(t, runDir, "graph:action-decided")
			answers, _ := d[0]["answers"].([]any)
			if len(d) != 1 || d[0]["verdict"] != "wait" || len(answers) != 1 || answers[0].(map[string]any)["error"] == "" {
				t.Fatalf("decisions %v, want one wait with the policy's error", d)
			}
			// The person decides for work and the run carries on; after
			// asks the broken policy again and pauses in turn.
			r = obversa(t, dir, "approve", runDir, "dag/work/1")
			if r.code != exitPaused || effects(t, eff) != 1 || !strings.Contains(r.stdout, "paused at dag/after/1") {
				t.Fatalf("approve: exit %d, %d effects\n%s%s", r.code, effects(t, eff), r.stdout, r.stderr)
			}
		})
	}
}

// TestPolicyWaitIsAskedAgainOnResume: a wait is asked again when the
// position is resumed without a person's decision, and the record holds
// each question.
func TestPolicyWaitIsAskedAgainOnResume(t *testing.T) {
	t.Parallel()
	runFile, eff := policyRun(t, `"guard"`, "policy-panic")
	text, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(runFile, []byte(strings.Replace(string(text), `echo x >> `, `echo git push; echo x >> `, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := obversa(t, dir, "run", "--run-id", "w", runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runDir := runDirOf(runFile, "w")
	if r := obversa(t, dir, "resume", "--position", "dag/work/1", runDir); r.code != exitPaused {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	if d := recorded(t, runDir, "graph:action-decided"); len(d) != 2 || d[1]["verdict"] != "wait" || effects(t, eff) != 0 {
		t.Fatalf("decisions %v, effects %d; want the wait asked again", d, effects(t, eff))
	}
	// The denial fails the run; after, which depends on it, is blocked.
	if r := obversa(t, dir, "approve", "--deny", runDir, "dag/work/1"); r.code != exitFailed || !strings.Contains(r.stdout, "work: DENIED denied by operator") ||
		!strings.Contains(r.stdout, "after: BLOCKED") {
		t.Fatalf("approve --deny: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}
