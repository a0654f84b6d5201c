package hcl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAttributePath(t *testing.T) {
	t.Parallel()
	key := func(k string) pathStep { return pathStep{Key: k, Index: -1} }
	idx := func(n int) pathStep { return pathStep{Index: n} }
	good := map[string][]pathStep{
		"command":                {key("command")},
		"responses[1].fail.kind": {key("responses"), idx(1), key("fail"), key("kind")},
		`env["A.B"]`:             {key("env"), key("A.B")},
		`m["q\"[]"][0]`:          {key("m"), key(`q"[]`), idx(0)},
		"a[0][12]":               {key("a"), idx(0), idx(12)},
		"with space.and-dash_1":  {key("with space"), key("and-dash_1")},
		`["first key quoted"].x`: {key("first key quoted"), key("x")},
		"ünïcode.ключ":           {key("ünïcode"), key("ключ")},
		`a["\u00e9"]`:            {key("a"), key("é")},
		"responses[007]":         {key("responses"), idx(7)},
		`[""]`:                   {key("")},
		"x.y.z.w[3].v":           {key("x"), key("y"), key("z"), key("w"), idx(3), key("v")},
		"lone]":                  nil,
		"":                       nil,
		".a":                     nil,
		"a..b":                   nil,
		"a.":                     nil,
		"a[":                     nil,
		"a[]":                    nil,
		"a[-1]":                  nil,
		"a[+1]":                  nil,
		"a[x]":                   nil,
		`a["unterminated]`:       nil,
		`a["x"`:                  nil,
		`a["\q"]`:                nil,
		"a[0]b":                  nil,
		"a]":                     nil,
	}
	for in, want := range good {
		got, err := parseAttributePath(in)
		switch {
		case want == nil && !errors.Is(err, errAttributePath):
			t.Errorf("parseAttributePath(%q) = %v, %v; want errAttributePath", in, got, err)
		case want != nil && err != nil:
			t.Errorf("parseAttributePath(%q): %v", in, err)
		case want != nil:
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("parseAttributePath(%q) (-want +got):\n%s", in, diff)
			}
		}
	}
}

// formatAttributePath writes steps in the form parseAttributePath reads,
// quoting every key.
func formatAttributePath(steps []pathStep) string {
	var b strings.Builder
	for _, st := range steps {
		if st.Index >= 0 && st.Key == "" {
			fmt.Fprintf(&b, "[%d]", st.Index)
			continue
		}
		q, _ := json.Marshal(st.Key)
		fmt.Fprintf(&b, "[%s]", q)
	}
	return b.String()
}

// FuzzAttributePath: parsing never panics, and a parsed path written back
// with every key quoted parses to the same steps.
func FuzzAttributePath(f *testing.F) {
	for _, s := range []string{"command", "responses[1].fail.kind", `env["A.B"]`, `m["q\"[]"][0]`, "a[0][12]", "a..b", `["x"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		steps, err := parseAttributePath(s)
		if err != nil {
			if !errors.Is(err, errAttributePath) {
				t.Fatalf("error %v does not wrap errAttributePath", err)
			}
			return
		}
		if len(steps) == 0 {
			t.Fatalf("%q parsed to no steps", s)
		}
		back, err := parseAttributePath(formatAttributePath(steps))
		if err != nil {
			t.Fatalf("%q → %q: %v", s, formatAttributePath(steps), err)
		}
		if diff := cmp.Diff(steps, back); diff != "" {
			t.Fatalf("%q round trip (-first +second):\n%s", s, diff)
		}
	})
}

func TestConfigRange(t *testing.T) {
	t.Parallel()
	src := prelude[:strings.Index(prelude, "plugin \"shell\"")] + `plugin "shell" {
  type   = "node"
  path   = "bin/cmd-engine"
  config = {
    command = ["a", "b"]
    nested  = { "x.y" = { z = 1 } }
    list    = [{ k = 1 }]
    made    = jsondecode("{\"a\": 1}")
  }
}
plugin "bare" {
  type = "node"
  path = "bin/bare"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
` + minimalGraph
	rf, diags := Decode([]byte(src), "/proj/run.hcl")
	if diags.HasErrors() {
		t.Fatal(diagsString(t, diags, "/proj/run.hcl", src))
	}
	byName := map[string]*Plugin{}
	for i := range rf.Plugins {
		byName[rf.Plugins[i].Name] = &rf.Plugins[i]
	}
	lines := strings.Split(src, "\n")
	// text returns the source a range covers (single-line ranges).
	text := func(line, start, end int) string { return lines[line-1][start-1 : end-1] }
	tests := []struct {
		plugin, path string
		want         string // the covered text
		exact        bool
	}{
		{"shell", "command", `command = ["a", "b"]`, true},
		{"shell", "command[1]", `"b"`, true},
		{"shell", `nested["x.y"].z`, `z = 1`, true},
		{"shell", "list[0].k", `k = 1`, true},
		{"shell", "command[5]", `command = ["a", "b"]`, false},
		{"shell", "made.a", `made    = jsondecode("{\"a\": 1}")`, false},
		{"shell", "nope", "", false},
		{"shell", "", "", false},
		{"shell", "a..b", "", false},
	}
	for _, tt := range tests {
		rng, exact := byName[tt.plugin].ConfigRange(tt.path)
		if exact != tt.exact {
			t.Errorf("%s %q: exact %v, want %v", tt.plugin, tt.path, exact, tt.exact)
		}
		if tt.want == "" {
			if rng != byName[tt.plugin].Ranges.Config || rng.Start.Line != 9 {
				t.Errorf("%s %q: range %v, want the config value %v", tt.plugin, tt.path, rng, byName[tt.plugin].Ranges.Config)
			}
			continue
		}
		if rng.Start.Line != rng.End.Line {
			t.Fatalf("%s %q: range %v spans lines", tt.plugin, tt.path, rng)
		}
		if got := text(rng.Start.Line, rng.Start.Column, rng.End.Column); got != tt.want {
			t.Errorf("%s %q: range covers %q, want %q", tt.plugin, tt.path, got, tt.want)
		}
	}
	bare := byName["bare"]
	if rng, exact := bare.ConfigRange("x"); exact || rng != bare.Ranges.Block || rng.Start.Line != 16 {
		t.Errorf("no config: %v %v, want the block header %v", rng, exact, bare.Ranges.Block)
	}
}
