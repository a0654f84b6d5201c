package hcl

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ignoreRanges leaves source positions out of RunFile comparisons; they
// are checked by TestDecodeRanges.
var ignoreRanges = cmpopts.IgnoreFields(Node{}, "Range")
var ignorePluginRanges = cmpopts.IgnoreFields(Plugin{}, "Range", "Ranges", "WrittenPath")

// ignorePluginParts ignores the ranges of a plugin's parts, which hold
// the config's syntax tree, the path as written, and where the run file's
// trusted keys are: the check goldens (validate's among them),
// TestConfigRange and TestLockPath cover them.
var ignorePluginParts = cmp.Options{cmpopts.IgnoreFields(Plugin{}, "Ranges", "WrittenPath"), cmpopts.IgnoreFields(RunFile{}, "TrustedKeyRanges")}

// defaults returns the RunFile a run file in dir decodes to before its
// own settings apply.
func defaults(filename, dir string) *RunFile {
	return &RunFile{
		Filename:  filename,
		Dir:       dir,
		Workspace: Workspace{Root: dir, Provider: "none"},
		Storage: Storage{
			Directory:                   filepath.Join(dir, ".obversa"),
			Namespace:                   "default",
			MaxEventPayloadBytes:        65536,
			MaxBatchBytes:               4194304,
			MaxArtifactBytes:            1048576,
			MaxTotalArtifactBytesPerRun: 16777216,
		},
		Limits:        Limits{Timeout: 30 * time.Minute, MaxDispatches: 200},
		Restart:       Restart{MaxRestarts: 3, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second},
		TeardownGrace: 5 * time.Second,
		Plugins:       []Plugin{},
		Lanes:         []Lane{},
		Graph:         Graph{Name: "dag", GlobalConcurrency: 4, RetryCapPerNode: 1, PolicyTimeout: 10 * time.Second},
	}
}

// prelude declares one engine, one node plugin and one lane.
const prelude = `
plugin "mock" {
  type = "engine"
  path = "bin/mock-engine"
}
plugin "shell" {
  type = "node"
  path = "bin/cmd-engine"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
`

// minimalGraph is a graph of one engine node on lane "writer".
const minimalGraph = `
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}
`

// preludeDecoded is what prelude decodes to in /proj.
func preludeDecoded(rf *RunFile) {
	rf.Plugins = []Plugin{
		{Name: "mock", Type: "engine", Path: "/proj/bin/mock-engine", Confine: Confine{Network: true}},
		{Name: "shell", Type: "node", Path: "/proj/bin/cmd-engine"},
	}
	rf.Lanes = []Lane{{Name: "writer", Requested: Target{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{}}}}
}

func TestDecodeGood(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		src  string
		want func(rf *RunFile)
	}{
		{
			name: "minimal file gets every default",
			src: prelude + `graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "hi"
  }
}`,
			want: func(rf *RunFile) {
				preludeDecoded(rf)
				rf.Graph.Nodes = []Node{{ID: "a", Kind: "required", Lane: "writer", Prompt: "hi"}}
			},
		},
		{
			name: "example from the design",
			src: `
workspace {
  root          = "/"
  provider      = "none"
  allow_outside = true
}
storage {
  directory = ".obversa"
  namespace = "default"
}
limits {
  timeout        = "30m"
  max_dispatches = 200
}
` + prelude + `
graph "dag" {
  global_concurrency = 4
  node "draft" {
    lane   = "writer"
    prompt = "Write a haiku about durable logs."
  }
  node "count" {
    binding    = "shell"
    depends_on = ["draft"]
    input      = { command = ["wc", "-c"] }
    retry_safe = true
  }
  node "report" {
    kind   = "finalizer"
    lane   = "writer"
    prompt = "Summarise: ${input.results.draft} and ${input.results.count.stdout}"
  }
}`,
			want: func(rf *RunFile) {
				preludeDecoded(rf)
				rf.Workspace.Root, rf.Workspace.AllowOutside = "/", true
				rf.Graph.Nodes = []Node{
					{ID: "draft", Kind: "required", Lane: "writer", Prompt: "Write a haiku about durable logs."},
					{ID: "count", Kind: "required", Binding: "shell", DependsOn: []string{"draft"},
						Input: json.RawMessage(`{"command":["wc","-c"]}`), RetrySafe: true},
					{ID: "report", Kind: "finalizer", Lane: "writer",
						Prompt: "Summarise: ${input.results.draft} and ${input.results.count.stdout}"},
				}
			},
		},
		{
			name: "templates are stored as template-mode source",
			src: prelude + `
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "literal $${x} and %%{y}\n"
  }
  node "b" {
    lane       = "writer"
    depends_on = ["a"]
    prompt     = <<-EOT
      Result:
        ${input.results.a}
      EOT
  }
  node "c" {
    binding    = "shell"
    depends_on = ["b"]
    input = {
      raw  = input.results.b
      text = "got ${input.results["b"]}\t!"
      lit  = ["$${HOME}", 1, true, null]
      nested = { deep = "${upper(input.results.a)}" }
    }
  }
}`,
			want: func(rf *RunFile) {
				preludeDecoded(rf)
				rf.Graph.Nodes = []Node{
					{ID: "a", Kind: "required", Lane: "writer", Prompt: "literal $${x} and %%{y}\n"},
					{ID: "b", Kind: "required", Lane: "writer", DependsOn: []string{"a"}, Prompt: "Result:\n  ${input.results.a}\n"},
					{ID: "c", Kind: "required", Binding: "shell", DependsOn: []string{"b"},
						Input: json.RawMessage(`{"lit":["$${HOME}",1,true,null],"nested":{"deep":"${upper(input.results.a)}"},"raw":"${input.results.b}","text":"got ${input.results[\"b\"]}\t!"}`)},
				}
			},
		},
		{
			name: "approval from the graph list and from nodes, in node order",
			src: prelude + `
graph "dag" {
  approval = ["c"]
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
  node "b" {
    lane     = "writer"
    prompt   = "b"
    approval = true
  }
  node "c" {
    lane   = "writer"
    prompt = "c"
  }
}`,
			want: func(rf *RunFile) {
				preludeDecoded(rf)
				rf.Graph.Approval = []string{"b", "c"}
				rf.Graph.Nodes = []Node{
					{ID: "a", Kind: "required", Lane: "writer", Prompt: "a"},
					{ID: "b", Kind: "required", Lane: "writer", Prompt: "b", Approval: true},
					{ID: "c", Kind: "required", Lane: "writer", Prompt: "c", Approval: true},
				}
			},
		},
		{
			name: "policies in order, token budgets, a provider the lane gives",
			src: `
plugin "mock" {
  type = "engine"
  path = "bin/mock-engine"
}
plugin "guard" {
  type = "policy"
  path = "bin/guard"
}
plugin "audit" {
  type = "policy"
  path = "bin/audit"
}
lane "writer" {
  requested           = { adapter = "mock", model = "m1" }
  known_substitutions = [{ adapter = "mock", provider = "local", model = "m1" }]
}
limits {
  max_input_tokens   = 1000
  max_output_tokens  = 200
  stop_on_unmeasured = true
}
graph "dag" {
  policy         = ["audit", "guard"]
  policy_timeout = "2s"
` + minimalGraph[len("\ngraph \"dag\" {\n"):],
			want: func(rf *RunFile) {
				rf.Plugins = []Plugin{{Name: "mock", Type: "engine", Path: "/proj/bin/mock-engine", Confine: Confine{Network: true}},
					{Name: "guard", Type: "policy", Path: "/proj/bin/guard"}, {Name: "audit", Type: "policy", Path: "/proj/bin/audit"}}
				rf.Lanes = []Lane{{Name: "writer", Requested: Target{Adapter: "mock", Model: "m1", Tools: []string{}},
					KnownSubstitutions: []Target{{Adapter: "mock", Provider: "local", Model: "m1", Tools: []string{}}}}}
				rf.Limits.MaxInputTokens, rf.Limits.MaxOutputTokens, rf.Limits.StopOnUnmeasured = 1000, 200, true
				rf.Graph.Policy, rf.Graph.PolicyTimeout = []string{"audit", "guard"}, 2*time.Second
				rf.Graph.Nodes = []Node{{ID: "a", Kind: "required", Lane: "writer", Prompt: "a"}}
			},
		},
		{
			name: "keyed concurrency keeps declaration order",
			src: prelude + `
graph "dag" {
  keyed_concurrency = { zeta = 2, "alpha.v1" = 1 }
  node "a" {
    lane   = "writer"
    prompt = "a"
    key    = "alpha.v1"
  }
}`,
			want: func(rf *RunFile) {
				preludeDecoded(rf)
				rf.Graph.KeyedConcurrency = []KeyLimit{{Key: "zeta", Limit: 2}, {Key: "alpha.v1", Limit: 1}}
				rf.Graph.Nodes = []Node{{ID: "a", Kind: "required", Lane: "writer", Prompt: "a", Key: "alpha.v1"}}
			},
		},
		{
			name: "null means not set",
			src: prelude + `
limits { timeout = null }
graph "dag" {
  node "a" {
    lane    = "writer"
    prompt  = "a"
    kind    = null
    timeout = null
  }
}`,
			want: func(rf *RunFile) {
				preludeDecoded(rf)
				rf.Graph.Nodes = []Node{{ID: "a", Kind: "required", Lane: "writer", Prompt: "a"}}
			},
		},
		{
			name: "a lane preflight block implies the default top-level preflight",
			src: `
plugin "mock" {
  type = "engine"
  path = "bin/mock-engine"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local" }
  preflight { live = "required" }
}
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}`,
			want: func(rf *RunFile) {
				rf.Plugins = []Plugin{{Name: "mock", Type: "engine", Path: "/proj/bin/mock-engine", Confine: Confine{Network: true}}}
				rf.Lanes = []Lane{{Name: "writer", Requested: Target{Adapter: "mock", Provider: "local", Tools: []string{}},
					Preflight: &LanePreflight{Live: "required", UnsupportedStatic: "block"}}}
				rf.Preflight = &Preflight{Timeout: 20 * time.Second}
				rf.Graph.Nodes = []Node{{ID: "a", Kind: "required", Lane: "writer", Prompt: "a"}}
			},
		},
		{
			name: "constant expressions may call template functions",
			src: prelude + `
plugin "other" {
  type   = "node"
  path   = "../other"
  args   = split(" ", "--a --b")
  config = { n = length([1, 2, 3]) }
}
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = upper("hi")
  }
}`,
			want: func(rf *RunFile) {
				preludeDecoded(rf)
				rf.Plugins = append(rf.Plugins, Plugin{Name: "other", Type: "node", Path: "/other", Args: []string{"--a", "--b"}, Config: json.RawMessage(`{"n":3}`)})
				rf.Graph.Nodes = []Node{{ID: "a", Kind: "required", Lane: "writer", Prompt: "HI"}}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, diags := Decode([]byte(tc.src), "/proj/run.hcl")
			if diags.HasErrors() {
				t.Fatalf("Decode: %s", diagsString(t, diags, "/proj/run.hcl", tc.src))
			}
			want := defaults("/proj/run.hcl", "/proj")
			tc.want(want)
			if diff := cmp.Diff(want, got, ignoreRanges, ignorePluginRanges); diff != "" {
				t.Errorf("Decode mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
