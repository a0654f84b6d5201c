package hcl

import (
	"fmt"
	"strings"
	"testing"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// integerSettings are the run file's integer settings, each as a run file
// with %s where its value goes, and the range it allows.
var integerSettings = []struct {
	name     string
	file     string
	min, max string
}{
	{"global_concurrency", `graph "dag" {
  global_concurrency = %s
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}`, "1", "2147483647"},
	{"retry_cap_per_node", `graph "dag" {
  retry_cap_per_node = %s
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}`, "0", "2147483647"},
	{"keyed_concurrency.repo", `graph "dag" {
  keyed_concurrency = { repo = %s }
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}`, "1", "2147483647"},
	{"max_items", `graph "dag" {
  node "a" {
    lane      = "writer"
    prompt    = "a"
    for_each  = ["x"]
    max_items = %s
  }
}`, "1", "2147483647"},
	{"max_rounds", `graph "dag" {
  loop "l" {
    max_rounds = %s
    review     = "b"
    node "a" {
      lane   = "writer"
      prompt = "a"
    }
    node "b" {
      lane       = "writer"
      prompt     = "b"
      depends_on = ["a"]
    }
  }
}`, "1", "100"},
	{"max_dispatches", "limits {\n  max_dispatches = %s\n}\n" + oneNode, "1", "2147483647"},
	{"max_input_tokens", "limits {\n  max_input_tokens = %s\n}\n" + oneNode, "1", "9007199254740991"},
	{"max_output_tokens", "limits {\n  max_output_tokens = %s\n}\n" + oneNode, "1", "9007199254740991"},
	{"max_restarts", "restart {\n  max_restarts = %s\n}\n" + oneNode, "0", "2147483647"},
	{"max_artifact_bytes", "storage {\n  max_artifact_bytes = %s\n}\n" + oneNode, "1", "9007199254740991"},
	{"max_log_bytes", "storage {\n  max_log_bytes = %s\n}\n" + oneNode, "1", "9007199254740991"},
	{"plugin_memory", "limits {\n  plugin_memory = %s\n}\n" + oneNode, "16 MiB", "9223372036854775807"},
}

const oneNode = `graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}`

const lanePrelude = `plugin "mock" {
  type = "engine"
  path = "bin/mock-engine"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
`

// TestIntegerSettingsOutOfRange: every integer setting says a value
// outside its range is too large or too small, naming the setting, the
// value and the range, however the value is written: out, computed
// (1e20 * 1), or computed past what the record keeps exactly.
func TestIntegerSettingsOutOfRange(t *testing.T) {
	values := []struct {
		expr, summary, got string
	}{
		{"99999999999999999999", "too large", "99999999999999999999"},
		{"1e20 * 1", "too large", "100000000000000000000"},
		{"1e400 * 1", "too large", "1e+400"},
		{"9223372036854775807 * 4", "too large", "36893488147419103228"},
		{"-1e20 * 1", "too small", "-100000000000000000000"},
		{"-99999999999999999999", "too small", "-99999999999999999999"},
	}
	for _, s := range integerSettings {
		for _, v := range values {
			t.Run(s.name+"="+v.expr, func(t *testing.T) {
				src := lanePrelude + fmt.Sprintf(s.file, v.expr)
				_, diags := Decode([]byte(src), "run.hcl")
				want := s.name + " is " + v.summary
				var found *hclv2.Diagnostic
				for _, dg := range diags {
					if dg.Severity == hclv2.DiagError && dg.Summary == want {
						found = dg
					}
				}
				if found == nil {
					t.Fatalf("no error %q in: %v", want, diags)
				}
				bound := s.max
				if v.summary == "too small" {
					bound = s.min
				}
				for _, part := range []string{s.name, bound, "got " + v.got} {
					if !strings.Contains(found.Detail, part) {
						t.Errorf("detail %q does not name %q", found.Detail, part)
					}
				}
				checkDiagnosticQuality(t, diags)
			})
		}
	}
}
