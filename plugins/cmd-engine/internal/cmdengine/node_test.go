package cmdengine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/obversa/obversa/plugin"
)

// nodeWith configures a binding from cfg; fakeEnv is always inherited.
func nodeWith(t *testing.T, cfg map[string]any) *Node {
	t.Helper()
	if cfg == nil {
		cfg = map[string]any{}
	}
	if _, ok := cfg["env"]; !ok {
		cfg["env"] = []string{fakeEnv}
	}
	raw, _ := json.Marshal(cfg)
	n := NewNode()
	if d, err := n.Configure(context.Background(), raw); err != nil || len(d) > 0 {
		t.Fatalf("Configure(%s) = %+v, %v", raw, d, err)
	}
	return n
}

func invoke(t *testing.T, n *Node, input map[string]any, req plugin.InvokeRequest) (*NodeOutput, error) {
	t.Helper()
	raw, _ := json.Marshal(input)
	req.Input = raw
	out, err := n.Invoke(context.Background(), req)
	if err != nil {
		return nil, err
	}
	var o NodeOutput
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	return &o, nil
}

func TestNodeSuccess(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	n := nodeWith(t, nil)
	tests := []struct {
		name  string
		input map[string]any
		want  NodeOutput
	}{
		{"stdin", map[string]any{"command": fakeArgv("echo"), "stdin": "piped"}, NodeOutput{Stdout: "piped"}},
		{"workspace dir", map[string]any{"command": fakeArgv("pwd")}, NodeOutput{Stdout: ws}},
		{"input env", map[string]any{"command": fakeArgv("env", "FOO"), "env": map[string]string{"FOO": "bar"}}, NodeOutput{Stdout: "bar"}},
		{"configured env inherited", map[string]any{"command": fakeArgv("env", fakeEnv)}, NodeOutput{Stdout: "inherited"}},
		{"host env not leaked", map[string]any{"command": fakeArgv("env", secretEnv)}, NodeOutput{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := invoke(t, n, tc.input, plugin.InvokeRequest{WorkspaceDir: ws})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      map[string]any
		input    map[string]any
		timeout  time.Duration
		kind     plugin.FailureKind
		contains []string
	}{
		{"non-zero exit", nil, map[string]any{"command": fakeArgv("fail", "2", "vet: bad code")}, 0,
			plugin.FailureUnknown, []string{"exited with code 2", "vet: bad code"}},
		{"non-zero exit reporting on stdout", nil, map[string]any{"command": fakeArgv("fail-stdout", "1", "--- FAIL: TestAdd")}, 0,
			plugin.FailureUnknown, []string{"exited with code 1", "--- FAIL: TestAdd"}},
		{"input timeout", map[string]any{"teardown_grace": "100ms"}, map[string]any{"command": fakeArgv("sleep"), "timeout": "200ms"}, 0,
			plugin.FailureTimeout, []string{"timed out"}},
		{"config timeout", map[string]any{"timeout": "200ms"}, map[string]any{"command": fakeArgv("sleep")}, 0,
			plugin.FailureTimeout, nil},
		{"attempt timeout", nil, map[string]any{"command": fakeArgv("sleep"), "timeout": "1h"}, 200 * time.Millisecond,
			plugin.FailureTimeout, nil},
		{"output cap", map[string]any{"max_output_bytes": 10000}, map[string]any{"command": fakeArgv("spew")}, 0,
			plugin.FailureUnknown, []string{"OUTPUT_LIMIT", "stdout exceeded 10000 bytes"}},
		{"default output cap is 1 MiB", nil, map[string]any{"command": fakeArgv("spew")}, 0,
			plugin.FailureUnknown, []string{"OUTPUT_LIMIT", "1048576"}},
		{"missing program", nil, map[string]any{"command": []string{"obversa-no-such-tool"}}, 0,
			plugin.FailureMissingCLI, nil},
		{"missing command", nil, map[string]any{"stdin": "x"}, 0,
			plugin.FailureInvalidConfig, []string{"input.command: command is required"}},
		{"unknown input key", nil, map[string]any{"command": fakeArgv("echo"), "comand": 1}, 0,
			plugin.FailureInvalidConfig, []string{`input.comand: unknown cmd node input setting "comand"`}},
		{"bad timeout", nil, map[string]any{"command": fakeArgv("echo"), "timeout": "soon"}, 0,
			plugin.FailureInvalidConfig, []string{"input.timeout"}},
		{"secret redacted", map[string]any{"env": []string{fakeEnv, secretEnv}, "secrets_from_env": []string{secretEnv}},
			map[string]any{"command": fakeArgv("secret", "1")}, 0, plugin.FailureUnknown, []string{"auth failed for " + Redacted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := nodeWith(t, tc.cfg)
			begin := time.Now()
			_, err := invoke(t, n, tc.input, plugin.InvokeRequest{WorkspaceDir: t.TempDir(), Timeout: tc.timeout})
			f := failureOf(t, err)
			if f.Kind != tc.kind {
				t.Errorf("kind %s, want %s (%v)", f.Kind, tc.kind, f)
			}
			for _, s := range tc.contains {
				if !strings.Contains(f.Message, s) {
					t.Errorf("message %q lacks %q", f.Message, s)
				}
			}
			if strings.Contains(f.Message, secretValue) {
				t.Errorf("message %q leaks the secret", f.Message)
			}
			// The bound tells a timeout that fired from one that did not
			// (the attempt-timeout case's command would run for an hour);
			// it is loose because a loaded 2-core machine stalls process
			// starts for seconds.
			if el := time.Since(begin); el > time.Minute {
				t.Errorf("took %v", el)
			}
		})
	}
}

func TestNodeRedactsOutput(t *testing.T) {
	t.Parallel()
	n := nodeWith(t, map[string]any{"env": []string{fakeEnv, secretEnv}, "secrets_from_env": []string{secretEnv}})
	got, err := invoke(t, n, map[string]any{"command": fakeArgv("secret")}, plugin.InvokeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := &NodeOutput{Stdout: "token=" + Redacted + "\n", Stderr: "auth failed for " + Redacted + "\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestNodeCancel(t *testing.T) {
	t.Parallel()
	n := nodeWith(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	raw, _ := json.Marshal(map[string]any{"command": fakeArgv("sleep")})
	_, err := n.Invoke(ctx, plugin.InvokeRequest{Input: raw})
	if f := failureOf(t, err); f.Kind != plugin.FailureAborted {
		t.Errorf("kind %s, want aborted", f.Kind)
	}
}
