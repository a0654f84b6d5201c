package launch

import (
	"encoding/json"
	"testing"

	"github.com/obversa/obversa/host/plan"
)

// TestCheckKey: the key of a check changes with every input of a launch
// the run file decides, and only with those.
func TestCheckKey(t *testing.T) {
	base := plan.PluginPlan{Name: "mock", Type: "engine", SHA256: "ab", Source: "bin/mock", Args: []string{"-v"},
		Env: map[string]string{"A": "1"}, PassEnv: []string{"KEY"}, Config: json.RawMessage(`{}`), ConfigDigest: "sha256:1",
		Confine: &plan.Confine{Network: false}}
	run := &Run{WorkspaceRoot: "/w", Namespace: "default", RunID: "r1"}
	want := CheckKey(base, run)
	same := []struct {
		name string
		edit func(p *plan.PluginPlan, r *Run)
	}{
		{"another run id", func(_ *plan.PluginPlan, r *Run) { r.RunID = "r2" }},
		{"another source path", func(p *plan.PluginPlan, _ *Run) { p.Source = "elsewhere/mock" }},
	}
	differs := []struct {
		name string
		edit func(p *plan.PluginPlan, r *Run)
	}{
		{"digest", func(p *plan.PluginPlan, _ *Run) { p.SHA256 = "cd" }},
		{"type", func(p *plan.PluginPlan, _ *Run) { p.Type = "node" }},
		{"args", func(p *plan.PluginPlan, _ *Run) { p.Args = nil }},
		{"env", func(p *plan.PluginPlan, _ *Run) { p.Env = map[string]string{"A": "2"} }},
		{"pass_env", func(p *plan.PluginPlan, _ *Run) { p.PassEnv = []string{"OTHER"} }},
		{"config", func(p *plan.PluginPlan, _ *Run) { p.ConfigDigest = "sha256:2" }},
		{"confinement", func(p *plan.PluginPlan, _ *Run) { p.Confine = &plan.Confine{Network: true} }},
		{"no confinement", func(p *plan.PluginPlan, _ *Run) { p.Confine = nil }},
		{"workspace", func(_ *plan.PluginPlan, r *Run) { r.WorkspaceRoot = "/v" }},
		{"namespace", func(_ *plan.PluginPlan, r *Run) { r.Namespace = "other" }},
	}
	check := func(name string, edit func(*plan.PluginPlan, *Run), equal bool) {
		p, r := base, *run
		p.Confine = &plan.Confine{Network: false}
		edit(&p, &r)
		if got := CheckKey(p, &r); (got == want) != equal {
			t.Errorf("%s: key %s, base %s; want equal %v", name, got, want, equal)
		}
	}
	for _, tt := range same {
		check(tt.name, tt.edit, true)
	}
	for _, tt := range differs {
		check(tt.name, tt.edit, false)
	}
}

// TestCheckedReceipt: a receipt is found once written, in its storage
// directory only.
func TestCheckedReceipt(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	key := CheckKey(plan.PluginPlan{Name: "mock", SHA256: "ab"}, nil)
	if Checked(dir, key) {
		t.Fatal("a receipt before any was written")
	}
	if err := RecordChecked(dir, key); err != nil {
		t.Fatal(err)
	}
	if !Checked(dir, key) {
		t.Error("the written receipt is not found")
	}
	if Checked(other, key) {
		t.Error("a receipt found in another storage directory")
	}
	if err := RecordChecked(dir, key); err != nil {
		t.Errorf("writing a receipt again: %v", err)
	}
}
