package cmdengine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/obversa/obversa/plugin"
)

var target = plugin.Identity{Adapter: "cmd", Provider: "anthropic", ModelFamily: "claude", Model: "sonnet"}

// engineWith configures an engine from cfg (EngineConfig fields as a map,
// so tests can also pass invalid values); env always lets the fake run.
func engineWith(t *testing.T, cfg map[string]any) *Engine {
	t.Helper()
	if _, ok := cfg["env"]; !ok {
		cfg["env"] = []string{fakeEnv}
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine()
	d, err := e.Configure(context.Background(), raw)
	if err != nil || len(d) > 0 {
		t.Fatalf("Configure(%s) = %+v, %v", raw, d, err)
	}
	return e
}

type recorder struct{ events []plugin.RunEvent }

func (r *recorder) emit(ev plugin.RunEvent) error {
	r.events = append(r.events, ev)
	return nil
}

func failureOf(t *testing.T, err error) *plugin.Failure {
	t.Helper()
	var f *plugin.Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v is not a *plugin.Failure", err)
	}
	return f
}

func TestEngineTextMode(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tests := []struct {
		name   string
		cfg    map[string]any
		req    plugin.RunRequest
		want   string
		schema bool
	}{
		{"prompt on stdin", map[string]any{"command": fakeArgv("echo")},
			plugin.RunRequest{Prompt: "hello\nworld\n\n"}, "hello\nworld", false},
		{"prompt file", map[string]any{"command": fakeArgv("cat", "{prompt_file}"), "prompt_via": "file"},
			plugin.RunRequest{Prompt: "from a file"}, "from a file", false},
		{"prompt file in stdin mode", map[string]any{"command": fakeArgv("cat", "{prompt_file}")},
			plugin.RunRequest{Prompt: "file too"}, "file too", false},
		{"prompt appended as argument", map[string]any{"command": fakeArgv("args", "-p"), "prompt_via": "arg"},
			plugin.RunRequest{Prompt: "as arg"}, "-p\nas arg", false},
		{"placeholders", map[string]any{"command": fakeArgv("args", "--model={model}", "{provider}/{model_family}", "{workspace}", "{prompt}", "{unknown}"), "prompt_via": "arg"},
			plugin.RunRequest{Prompt: "p", WorkspaceDir: ws}, "--model=sonnet\nanthropic/claude\n" + ws + "\np\n{unknown}", false},
		{"configured env inherited", map[string]any{"command": fakeArgv("env", fakeEnv)},
			plugin.RunRequest{}, "inherited", false},
		{"other env not inherited", map[string]any{"command": fakeArgv("env", secretEnv)},
			plugin.RunRequest{}, "", false},
		{"workspace is the working directory", map[string]any{"command": fakeArgv("pwd")},
			plugin.RunRequest{WorkspaceDir: ws}, ws, false},
		{"schema file", map[string]any{"command": fakeArgv("cat", "{schema_file}")},
			plugin.RunRequest{OutputSchema: json.RawMessage(`{"type":"object"}`)}, `{"type":"object"}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := engineWith(t, tc.cfg)
			tc.req.Target = target
			var rec recorder
			res, err := e.Run(context.Background(), tc.req, rec.emit)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			kind := plugin.PartText
			var js json.RawMessage
			text := tc.want
			if tc.schema {
				kind, js, text = plugin.PartStructured, json.RawMessage(tc.want), ""
			}
			want := &plugin.RunResult{
				Parts:      []plugin.Part{{Kind: kind, Text: text, JSON: js, Final: true}},
				Usage:      plugin.Usage{},
				Requested:  target,
				Effective:  target,
				StopReason: "end_turn",
			}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if len(rec.events) > 0 {
				t.Errorf("text mode streamed %+v; usage is unknown", rec.events)
			}
		})
	}
}

func TestEngineFailures(t *testing.T) {
	t.Parallel()
	rules := []map[string]any{
		{"exit_code": 2, "stderr_matches": "(?i)rate limit", "kind": "rate_limit", "retry_after_capture": `retry after (\d+)s`},
		{"stderr_matches": "invalid api key", "kind": "auth", "message": "log in again"},
		{"exit_code": 3, "kind": "model_unavailable"},
	}
	tests := []struct {
		name    string
		command []string
		want    plugin.Failure
	}{
		{"rule with retry-after", fakeArgv("fail", "2", "Rate limit hit; retry after 30s"),
			plugin.Failure{Kind: plugin.FailureRateLimit, RetryAfter: 30 * time.Second}},
		{"rule exit code must match", fakeArgv("fail", "4", "rate limit"),
			plugin.Failure{Kind: plugin.FailureUnknown}},
		{"rule with message", fakeArgv("fail", "1", "error: invalid api key"),
			plugin.Failure{Kind: plugin.FailureAuth, Message: "log in again"}},
		{"exit code only rule", fakeArgv("fail", "3", "no such model"),
			plugin.Failure{Kind: plugin.FailureModelUnavailable}},
		{"127 is missing_cli", fakeArgv("fail", "127", "sh: claude: not found"),
			plugin.Failure{Kind: plugin.FailureMissingCLI}},
		{"other exit is unknown", fakeArgv("fail", "9", "boom"),
			plugin.Failure{Kind: plugin.FailureUnknown}},
		{"missing executable", []string{"/nonexistent/obversa-cli"},
			plugin.Failure{Kind: plugin.FailureMissingCLI}},
		{"not on PATH", []string{"obversa-no-such-cli-xyz"},
			plugin.Failure{Kind: plugin.FailureMissingCLI}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := engineWith(t, map[string]any{"command": tc.command, "failures": rules})
			_, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "p", Target: target}, nil)
			f := failureOf(t, err)
			want := tc.want
			want.Provider, want.Model = "anthropic", "sonnet"
			if want.Message == "" {
				want.Message = f.Message // checked below
				if len(tc.command) > 3 && !strings.Contains(f.Message, "exited with code "+tc.command[3]) {
					t.Errorf("message %q lacks the exit code", f.Message)
				}
				if len(tc.command) > 4 && !strings.Contains(f.Message, tc.command[4]) {
					t.Errorf("message %q lacks the stderr tail", f.Message)
				}
			}
			if diff := cmp.Diff(&want, f); diff != "" {
				t.Errorf("failure (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEngineStops(t *testing.T) {
	t.Parallel()
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		e := engineWith(t, map[string]any{"command": fakeArgv("sleep"), "timeout": "300ms", "teardown_grace": "100ms"})
		begin := time.Now()
		_, err := e.Run(context.Background(), plugin.RunRequest{Target: target}, nil)
		if f := failureOf(t, err); f.Kind != plugin.FailureTimeout {
			t.Errorf("kind %s, want timeout (%v)", f.Kind, f)
		}
		if el := time.Since(begin); el > 3*time.Second {
			t.Errorf("took %v", el)
		}
	})
	t.Run("attempt deadline", func(t *testing.T) {
		t.Parallel()
		e := engineWith(t, map[string]any{"command": fakeArgv("sleep")})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := e.Run(ctx, plugin.RunRequest{Target: target, Timeout: 200 * time.Millisecond}, nil)
		if f := failureOf(t, err); f.Kind != plugin.FailureTimeout {
			t.Errorf("kind %s, want timeout (%v)", f.Kind, f)
		}
	})
	t.Run("cancellation", func(t *testing.T) {
		t.Parallel()
		e := engineWith(t, map[string]any{"command": fakeArgv("sleep")})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		begin := time.Now()
		_, err := e.Run(ctx, plugin.RunRequest{Target: target}, nil)
		if f := failureOf(t, err); f.Kind != plugin.FailureAborted {
			t.Errorf("kind %s, want aborted (%v)", f.Kind, f)
		}
		// docs/writing-plugins.md: a cancelled Run stops within 3 s.
		if el := time.Since(begin); el > 3*time.Second {
			t.Errorf("took %v", el)
		}
	})
	t.Run("output cap", func(t *testing.T) {
		t.Parallel()
		e := engineWith(t, map[string]any{"command": fakeArgv("spew"), "max_output_bytes": 4096})
		_, err := e.Run(context.Background(), plugin.RunRequest{Target: target}, nil)
		f := failureOf(t, err)
		if f.Kind != plugin.FailureUnknown || !strings.Contains(f.Message, "OUTPUT_LIMIT") {
			t.Errorf("failure %v, want unknown with OUTPUT_LIMIT", f)
		}
	})
	t.Run("unconfigured", func(t *testing.T) {
		t.Parallel()
		_, err := NewEngine().Run(context.Background(), plugin.RunRequest{Target: target}, nil)
		if f := failureOf(t, err); f.Kind != plugin.FailureInvalidConfig {
			t.Errorf("kind %s, want invalid_config", f.Kind)
		}
	})
}

func TestEngineAdmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command []string
		target  plugin.Identity
		kind    plugin.FailureKind
	}{
		{"found", fakeArgv("echo"), target, ""},
		{"found on PATH", []string{"sh", "-c", "exit 1"}, target, ""},
		{"missing", []string{"obversa-no-such-cli-xyz", "-p"}, target, plugin.FailureMissingCLI},
		{"missing path", []string{"/nonexistent/obversa"}, target, plugin.FailureMissingCLI},
		{"model needed", fakeArgv("args", "{model}"), plugin.Identity{Provider: "anthropic"}, plugin.FailureInvalidConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := engineWith(t, map[string]any{"command": tc.command})
			got, err := e.Admit(context.Background(), plugin.AdmitRequest{Target: tc.target})
			if tc.kind != "" {
				if f := failureOf(t, err); f.Kind != tc.kind {
					t.Errorf("kind %s, want %s (%v)", f.Kind, tc.kind, f)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&plugin.AdmitResponse{Supported: true, Selection: tc.target}, got); diff != "" {
				t.Errorf("Admit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEngineAdmitRunsNothing(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	e := engineWith(t, map[string]any{"command": []string{"touch", marker}})
	if _, err := e.Admit(context.Background(), plugin.AdmitRequest{Target: target}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Admit ran the command: %v", err)
	}
}

func TestEngineRedactsSecrets(t *testing.T) {
	t.Parallel()
	cfg := func(cmd []string) map[string]any {
		return map[string]any{"command": cmd, "env": []string{fakeEnv, secretEnv}, "secrets_from_env": []string{secretEnv}}
	}
	res, err := engineWith(t, cfg(fakeArgv("secret"))).Run(context.Background(), plugin.RunRequest{Target: target}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := res.Final(); p.Text != "token="+Redacted {
		t.Errorf("text %q, want the secret redacted", p.Text)
	}
	_, err = engineWith(t, cfg(fakeArgv("secret", "1"))).Run(context.Background(), plugin.RunRequest{Target: target}, nil)
	f := failureOf(t, err)
	if strings.Contains(f.Message, secretValue) || !strings.Contains(f.Message, "auth failed for "+Redacted) {
		t.Errorf("failure message %q", f.Message)
	}
	// JSON output: the escaped spelling of the secret is redacted too.
	js := engineWith(t, map[string]any{"command": fakeArgv("json"), "output": "json", "env": []string{fakeEnv},
		"secrets_from_env": []string{secretEnv}, "fields": map[string]any{"structured": "structured_output"}})
	res, err = js.Run(context.Background(), plugin.RunRequest{Prompt: "key " + secretValue, Target: target}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := res.Final(); strings.Contains(string(p.JSON), "quoted") || !json.Valid(p.JSON) {
		t.Errorf("structured %s leaks the secret or is invalid", p.JSON)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, d := range []func(context.Context) (*plugin.Description, error){NewEngine().Describe, NewNode().Describe} {
		got, err := d(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := &plugin.Description{Name: "cmd", Version: Version, Types: []plugin.Type{plugin.TypeEngine, plugin.TypeNode},
			Capabilities: plugin.Capabilities{Admit: true, StructuredOutput: true}, FailureKinds: plugin.FailureKinds}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Describe (-want +got):\n%s", diff)
		}
	}
}
