package conformance_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
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

func TestOnly(t *testing.T) {
	t.Parallel()
	rep, err := conformance.Check(t.Context(), filepath.Join(binDir, "mock-engine"), conformance.Options{Only: []string{"health", "run.parts"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"health", "run.parts"}, statuses(rep, conformance.Pass)); diff != "" {
		t.Errorf("passed (-want +got):\n%s", diff)
	}
	if n := rep.Count(conformance.Skip); n != len(conformance.CasesFor(plugin.TypeEngine))-2 {
		t.Errorf("%d skipped", n)
	}
	if r, _ := rep.Result("describe"); r.Seen != "not selected" {
		t.Errorf("describe: %+v", r)
	}
}

// TestWithConformance checks sdk.WithConformance: an engine that does not
// implement the service gets it from the option, and the kit uses it.
func TestWithConformance(t *testing.T) {
	t.Parallel()
	rep, err := conformance.Check(t.Context(), self(t), conformance.Options{
		Env:  helperEnv("with-conformance"),
		Only: []string{"admit", "failures", "run.cancel"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ScenarioControl != "service" || rep.Failed() {
		t.Errorf("control %q, failed %v", rep.ScenarioControl, statuses(rep, conformance.Fail))
	}
	if diff := cmp.Diff([]string{"admit", "failures", "run.cancel"}, statuses(rep, conformance.Pass)); diff != "" {
		t.Errorf("passed (-want +got):\n%s", diff)
	}
}

// TestNodeBinding checks a node binding on the cases that apply to it.
func TestNodeBinding(t *testing.T) {
	t.Parallel()
	rep, err := conformance.Check(t.Context(), filepath.Join(binDir, "cmd-engine"), conformance.Options{Type: "node"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"configure.invalid", "configure.valid", "describe", "handshake.cookie", "handshake.line",
		"handshake.stdout", "handshake.version", "health", "robust.host_death", "robust.shutdown"}
	if diff := cmp.Diff(want, statuses(rep, conformance.Pass)); diff != "" {
		t.Errorf("passed (-want +got):\n%s", diff)
	}
	if rep.Failed() {
		for _, r := range rep.Results {
			if r.Status == conformance.Fail {
				t.Errorf("%s: %s", r.Case, r.Seen)
			}
		}
	}
}

// TestNoScenarioControl checks a plugin with neither the Conformance
// service nor scenario requests: it is checked on the scenario-free cases
// and the report names the others as skipped.
func TestNoScenarioControl(t *testing.T) {
	t.Parallel()
	rep, err := conformance.Check(t.Context(), self(t), conformance.Options{Env: helperEnv("plain")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"failures", "robust.panic", "run.cancel", "run.late_final", "run.tools"}
	if diff := cmp.Diff(want, statuses(rep, conformance.Skip)); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if rep.Failed() || rep.ScenarioControl != "none" {
		t.Errorf("failed %v, control %q", statuses(rep, conformance.Fail), rep.ScenarioControl)
	}
	if r, _ := rep.Result("run.cancel"); r.Seen != "the plugin serves no Conformance service and the options give no scenario requests" {
		t.Errorf("run.cancel skipped with %q", r.Seen)
	}
	if r, _ := rep.Result("admit"); !strings.Contains(r.Seen, "model calls not observable") {
		t.Errorf("admit: %q", r.Seen)
	}
}

// TestHostDeathWrapper checks that robust.host_death fails for a plugin
// served by a child of the process the host started: the host's death
// kills the wrapper but not the server.
func TestHostDeathWrapper(t *testing.T) {
	t.Parallel()
	rep, err := conformance.Check(t.Context(), self(t), conformance.Options{
		Env:  helperEnv("wrapper"),
		Only: []string{"handshake.line", "robust.host_death"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"robust.host_death"}, statuses(rep, conformance.Fail)); diff != "" {
		t.Errorf("failed (-want +got):\n%s", diff)
	}
	if r, _ := rep.Result("robust.host_death"); !strings.Contains(r.Seen, "something still accepts connections") {
		t.Errorf("robust.host_death: %s", r.Seen)
	}
}

// TestPolicy checks a policy on the cases that apply to it, with the
// verdicts the conformance options expect, and policies broken in one way
// each fail exactly the case they break.
func TestPolicy(t *testing.T) {
	t.Parallel()
	actions := []conformance.PolicyAction{
		{Name: "a push waits", Kind: plugin.ActionBinding, Input: json.RawMessage(`{"command":["git","push"]}`), Want: plugin.VerdictWait},
		{Name: "a summary runs", Kind: plugin.ActionEngine, Prompt: "summarise", Want: plugin.VerdictAllow},
	}
	rep, err := conformance.Check(t.Context(), self(t), conformance.Options{Type: plugin.TypePolicy, Env: helperEnv("policy"), Actions: actions})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"configure.invalid", "configure.valid", "describe", "handshake.cookie", "handshake.line", "handshake.stdout", "handshake.version", "health",
		"policy.actions", "policy.concurrency", "policy.decide", "policy.robust", "robust.host_death", "robust.shutdown"}
	if diff := cmp.Diff(want, statuses(rep, conformance.Pass)); diff != "" {
		t.Errorf("passed (-want +got):\n%s", diff)
	}
	// The engine cases do not apply to a policy: the report leaves them out.
	if r, ok := rep.Result("admit"); ok || len(rep.Results) != len(conformance.CasesFor(plugin.TypePolicy)) {
		t.Errorf("admit: %+v; %d results", r, len(rep.Results))
	}
	// An expectation the policy does not meet fails policy.actions.
	wrong := []conformance.PolicyAction{{Name: "a summary waits", Kind: plugin.ActionEngine, Prompt: "summarise", Want: plugin.VerdictWait}}
	rep, err = conformance.Check(t.Context(), self(t), conformance.Options{Type: plugin.TypePolicy, Env: helperEnv("policy"), Actions: wrong,
		Only: []string{"policy.actions"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rep.Result("policy.actions"); r.Status != conformance.Fail || !strings.Contains(r.Seen, "a summary waits: want wait, got allow") {
		t.Errorf("policy.actions with a wrong expectation: %+v", r)
	}
	for _, tt := range []struct{ mode, seen string }{
		{"policy-flaky", "when asked again"},
		{"policy-no-reason", "without a reason"},
	} {
		rep, err := conformance.Check(t.Context(), self(t), conformance.Options{Type: plugin.TypePolicy, Env: helperEnv(tt.mode)})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := rep.Result("policy.decide")
		if diff := cmp.Diff([]string{"policy.decide"}, statuses(rep, conformance.Fail)); diff != "" || !strings.Contains(r.Seen, tt.seen) {
			t.Errorf("%s: failed cases (-want +got):\n%s\npolicy.decide: %s", tt.mode, diff, r.Seen)
		}
	}
}

func TestPolicyOptions(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, file, want string }{
		{"actions of an engine", `{"actions":[{"kind":"engine","want":"allow"}]}`, `actions are for policies`},
		{"unknown kind", `{"type":"policy","actions":[{"kind":"shell","want":"allow"}]}`, `actions[0]: kind "shell"`},
		{"unknown verdict", `{"type":"policy","actions":[{"kind":"engine","want":"maybe"}]}`, `actions[0]: want "maybe"`},
	}
	for _, tt := range tests {
		if _, err := conformance.DecodeOptions([]byte(tt.file), "/"); !errors.Is(err, conformance.ErrOptions) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrOptions with %q", tt.name, err, tt.want)
		}
	}
}
