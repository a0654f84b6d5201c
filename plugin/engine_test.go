package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

func TestEngineDescribe(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	got, err := e.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&fakeDescription, got); diff != "" {
		t.Errorf("Describe (-want +got):\n%s", diff)
	}
}

func TestEngineConfigure(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	diags := []plugin.Diagnostic{
		{Severity: plugin.SeverityError, Summary: "bad command", Detail: "no such file", Attribute: "command"},
		{Severity: plugin.SeverityWarning, Summary: "deprecated"},
	}
	cfg, err := json.Marshal(map[string]any{"diags": diags})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		config json.RawMessage
		want   []plugin.Diagnostic
	}{
		{name: "absent", config: nil, want: nil},
		{name: "clean", config: json.RawMessage(`{}`), want: nil},
		{name: "diagnostics", config: cfg, want: diags},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Configure(context.Background(), tt.config)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Configure (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEngineAdmit(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	target := plugin.Identity{Adapter: "fake", ModelFamily: "f", Model: "ok", Tools: []string{"read"}}
	got, err := e.Admit(context.Background(), plugin.AdmitRequest{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	wantSel := target
	wantSel.Provider = "fake-provider"
	if diff := cmp.Diff(&plugin.AdmitResponse{Supported: true, Selection: wantSel}, got); diff != "" {
		t.Errorf("supported (-want +got):\n%s", diff)
	}

	got, err = e.Admit(context.Background(), plugin.AdmitRequest{Target: plugin.Identity{Model: "static-unknown"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&plugin.AdmitResponse{Reason: "no static check"}, got); diff != "" {
		t.Errorf("unsupported (-want +got):\n%s", diff)
	}
}

func TestEngineRunStreamsEventsAndResult(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	var events []plugin.RunEvent
	target := plugin.Identity{Adapter: "fake", Provider: "p", Model: "m"}
	res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "hello", Target: target}, func(ev plugin.RunEvent) error {
		events = append(events, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantEvents := []plugin.RunEvent{
		{Kind: plugin.EventThinking, Text: "hmm"},
		{Kind: plugin.EventToolUse, ToolName: "read", ToolID: "t1", ToolJSON: json.RawMessage(`{"path":"a"}`)},
		{Kind: plugin.EventToolResult, ToolName: "read", ToolID: "t1", ToolJSON: json.RawMessage(`"contents"`)},
		{Kind: plugin.EventText, Text: "hel"},
		{Kind: plugin.EventText, Text: "lo"},
		{Kind: plugin.EventUsage, Usage: plugin.Usage{Known: true, Input: 10, Output: 20}},
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	want := &plugin.RunResult{
		Parts: []plugin.Part{
			{Kind: plugin.PartThinking, Text: "hmm"},
			{Kind: plugin.PartToolUse, ToolName: "read", ToolID: "t1", JSON: json.RawMessage(`{"path":"a"}`)},
			{Kind: plugin.PartText, Text: "hello", Final: true},
		},
		Usage:      plugin.Usage{Known: true, Input: 10, Output: 20, CacheRead: 3, CacheCreation: 4},
		Requested:  target,
		Effective:  plugin.Identity{Adapter: "fake", Provider: "fake-provider", Model: "m1"},
		StopReason: "end_turn",
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestEngineRunUnknownUsageStaysUnknown(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "unknown-usage"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage != (plugin.Usage{}) {
		t.Errorf("usage = %+v, want unknown", res.Usage)
	}
	final, ok := res.Final()
	if diff := cmp.Diff(plugin.Part{Kind: plugin.PartStructured, JSON: json.RawMessage(`{"a":1}`), Final: true}, final); !ok || diff != "" {
		t.Errorf("final part (-want +got):\n%s", diff)
	}
}

func TestEngineRunRequestRoundTrips(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	req := plugin.RunRequest{
		Purpose:       plugin.PurposePreflight,
		RunID:         "run-1",
		NodeID:        "draft",
		Position:      "dag/draft/1",
		AttemptID:     "sha256:abc",
		Target:        plugin.Identity{Adapter: "fake", Provider: "p", ModelFamily: "f", Model: "m", Tools: []string{"a", "b"}},
		Prompt:        "request",
		OutputSchema:  json.RawMessage(`{"type":"object"}`),
		Tools:         []string{"a"},
		WorkspaceDir:  "/tmp/ws",
		WorkspaceMode: "git",
		Timeout:       90 * time.Second,
	}
	res, err := e.Run(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	final, _ := res.Final()
	var got plugin.RunRequest
	if err := json.Unmarshal(final.JSON, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req, got); diff != "" {
		t.Errorf("request seen by the plugin (-want +got):\n%s", diff)
	}

	// With no Timeout, the context's deadline is sent.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req.Timeout = 0
	res, err = e.Run(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	final, _ = res.Final()
	if err := json.Unmarshal(final.JSON, &got); err != nil {
		t.Fatal(err)
	}
	if got.Timeout <= 50*time.Second || got.Timeout > time.Minute {
		t.Errorf("timeout seen by the plugin = %s, want about 1m from the context deadline", got.Timeout)
	}
}

func TestFailureKindsRoundTrip(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	n := launchNode(t)
	calls := []struct {
		name string
		call func(plugin.FailureKind) error
	}{
		{"Admit", func(k plugin.FailureKind) error {
			_, err := e.Admit(context.Background(), plugin.AdmitRequest{Target: plugin.Identity{Model: "fail:" + string(k)}})
			return err
		}},
		{"Run", func(k plugin.FailureKind) error {
			_, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "fail:" + string(k)}, nil)
			return err
		}},
		{"Configure", func(k plugin.FailureKind) error {
			_, err := e.Configure(context.Background(), json.RawMessage(`{"fail":"`+string(k)+`"}`))
			return err
		}},
		{"Invoke", func(k plugin.FailureKind) error {
			_, err := n.Invoke(context.Background(), plugin.InvokeRequest{Input: json.RawMessage(`{"op":"fail","kind":"` + string(k) + `"}`)})
			return err
		}},
	}
	for _, c := range calls {
		for _, kind := range plugin.FailureKinds {
			t.Run(c.name+"/"+string(kind), func(t *testing.T) {
				err := c.call(kind)
				var f *plugin.Failure
				if !errors.As(err, &f) {
					t.Fatalf("error %v (%T) is not a *plugin.Failure", err, err)
				}
				if diff := cmp.Diff(testFailure(kind), f); diff != "" {
					t.Errorf("failure (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestHandlerPanicIsUnknownFailureAndPluginKeepsServing(t *testing.T) {
	t.Parallel()
	c := launch(t, "both", plugin.TypeEngine)
	e, _ := c.Engine()
	ctx := context.Background()
	check := func(name string, err error, wantText string) {
		t.Helper()
		var f *plugin.Failure
		if !errors.As(err, &f) || f.Kind != plugin.FailureUnknown || !strings.Contains(f.Message, wantText) {
			t.Errorf("%s: error = %v, want an unknown failure mentioning %q", name, err, wantText)
		}
	}
	_, err := e.Admit(ctx, plugin.AdmitRequest{Target: plugin.Identity{Model: "panic"}})
	check("Admit", err, "admit exploded")
	for path, eng := range callPaths(e) {
		_, err = eng.Run(ctx, plugin.RunRequest{Prompt: "panic"}, nil)
		check("Run ("+path+")", err, "run exploded")
	}
	if _, err := e.Describe(ctx); err != nil {
		t.Fatalf("Describe after panics: %v", err)
	}
	if err := c.Health(ctx); err != nil {
		t.Fatalf("Health after panics: %v", err)
	}
	if c.Exited() {
		t.Fatal("plugin exited after a handler panic")
	}
}

func TestNilAnswersAreUnknownFailures(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	_, err := e.Admit(context.Background(), plugin.AdmitRequest{Target: plugin.Identity{Model: "nil"}})
	var f *plugin.Failure
	if !errors.As(err, &f) || f.Kind != plugin.FailureUnknown {
		t.Errorf("Admit returning nil, nil: error = %v, want unknown failure", err)
	}
	_, err = e.Run(context.Background(), plugin.RunRequest{Prompt: "nil"}, nil)
	if !errors.As(err, &f) || f.Kind != plugin.FailureUnknown {
		t.Errorf("Run returning nil, nil: error = %v, want unknown failure", err)
	}
}

func TestRunInvalidResultIsProtocolError(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	_, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "invalid"}, nil)
	if !errors.Is(err, plugin.ErrProtocol) || !strings.Contains(err.Error(), "2 final parts") {
		t.Fatalf("error = %v, want ErrProtocol about 2 final parts", err)
	}
}

func TestRunEmitterErrorStopsRun(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	hostGone := errors.New("host gone")
	for path, eng := range callPaths(e) {
		_, err := eng.Run(context.Background(), plugin.RunRequest{Prompt: "hello"}, func(plugin.RunEvent) error { return hostGone })
		if !errors.Is(err, hostGone) {
			t.Fatalf("%s: error = %v, want it to wrap the emitter's error", path, err)
		}
		if _, err := eng.Run(context.Background(), plugin.RunRequest{Prompt: "big:3"}, nil); err != nil {
			t.Fatalf("%s: Run after aborted call: %v", path, err)
		}
	}
	if _, err := e.Describe(context.Background()); err != nil {
		t.Fatalf("Describe after aborted stream: %v", err)
	}
}

// runUntilFirstEvent starts Run with prompt, cancels its context when the
// first event arrives and returns the error and how long Run took to return
// after the cancel.
func runUntilFirstEvent(t *testing.T, e plugin.Engine, prompt string) (error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	var cancelled time.Time
	_, err := e.Run(ctx, plugin.RunRequest{Prompt: prompt}, func(plugin.RunEvent) error {
		once.Do(func() {
			cancelled = time.Now()
			cancel()
		})
		return nil
	})
	if cancelled.IsZero() {
		t.Fatalf("Run returned %v before any event", err)
	}
	return err, time.Since(cancelled)
}

func TestRunCancellation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ prompt, path string }{
		{"wait-cancel", "stream"}, {"ignore-cancel", "stream"}, {"wait-cancel", "per-call"}, {"ignore-cancel", "per-call"},
	} {
		prompt := tc.prompt
		t.Run(prompt+"/"+tc.path, func(t *testing.T) {
			t.Parallel()
			c := launch(t, "both", plugin.TypeEngine)
			e, _ := c.Engine()
			e = callPaths(e)[tc.path]
			err, took := runUntilFirstEvent(t, e, prompt)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error = %v, want context.Canceled", err)
			}
			if errors.Is(err, plugin.ErrPluginExited) {
				t.Errorf("cancelled request reported as a dead plugin: %v", err)
			}
			if took > 3*time.Second {
				t.Errorf("Run returned %s after cancel, want within 3s", took)
			}
			if prompt == "wait-cancel" {
				// The plugin's context must have ended too.
				waitSawCancel(t, e)
			}
			if _, err := e.Describe(context.Background()); err != nil {
				t.Errorf("Describe after cancelled Run: %v", err)
			}
		})
	}
}

func TestRunPluginCrashIsExited(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"stream", "per-call"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			testRunPluginCrashIsExited(t, path)
		})
	}
}

func testRunPluginCrashIsExited(t *testing.T, path string) {
	c := launch(t, "both", plugin.TypeEngine)
	e, _ := c.Engine()
	e = callPaths(e)[path]
	_, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "crash"}, nil)
	if !errors.Is(err, plugin.ErrPluginExited) || !errors.Is(err, plugin.ErrPluginTransport) {
		t.Fatalf("error = %v, want ErrPluginExited (and ErrPluginTransport)", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("dead plugin reported as a cancelled request: %v", err)
	}
	if !c.Exited() {
		t.Error("Exited() = false after the plugin died")
	}
	_, err = e.Describe(context.Background())
	if !errors.Is(err, plugin.ErrPluginExited) {
		t.Errorf("Describe on a dead plugin: %v, want ErrPluginExited", err)
	}
}

func TestMessageSizeLimits(t *testing.T) {
	t.Parallel()
	for path, e := range callPaths(launchEngine(t)) {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			testMessageSizeLimits(t, e)
		})
	}
}

func testMessageSizeLimits(t *testing.T, e plugin.Engine) {
	ctx := context.Background()

	// Above gRPC's 4 MiB default, below the limit: fine both ways.
	const tenMiB = 10 << 20
	res, err := e.Run(ctx, plugin.RunRequest{Prompt: strings.Repeat("p", tenMiB)}, nil)
	if err != nil {
		t.Fatalf("10 MiB prompt: %v", err)
	}
	if f, _ := res.Final(); f.Text != "prompt of 10485760 bytes" {
		t.Errorf("10 MiB prompt: final = %.40q", f.Text)
	}
	res, err = e.Run(ctx, plugin.RunRequest{Prompt: "big:10485760"}, nil)
	if err != nil {
		t.Fatalf("10 MiB result: %v", err)
	}
	if f, _ := res.Final(); len(f.Text) != tenMiB {
		t.Errorf("10 MiB result: final has %d bytes", len(f.Text))
	}

	// Beyond the limit: a clear error naming it, in both directions.
	over := plugin.MaxMessageBytes + 1<<20
	_, err = e.Run(ctx, plugin.RunRequest{Prompt: "big:" + itoa(over)}, nil)
	if !errors.Is(err, plugin.ErrMessageTooLarge) || !strings.Contains(err.Error(), "64 MiB") {
		t.Errorf("oversize result: %v, want ErrMessageTooLarge naming 64 MiB", err)
	}
	_, err = e.Run(ctx, plugin.RunRequest{Prompt: strings.Repeat("p", over)}, nil)
	if !errors.Is(err, plugin.ErrMessageTooLarge) || !strings.Contains(err.Error(), "64 MiB") {
		t.Errorf("oversize request: %v, want ErrMessageTooLarge naming 64 MiB", err)
	}
	if _, err := e.Describe(ctx); err != nil {
		t.Errorf("Describe after oversize messages: %v", err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// callPaths returns e (from Client.Engine) by the way it makes Run calls:
// on the plugin's Attempts stream ("stream") and as a Run RPC each
// ("per-call").
func callPaths(e plugin.Engine) map[string]plugin.Engine {
	return map[string]plugin.Engine{"stream": e, "per-call": plugin.RunPerCall(e)}
}
