package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
	"github.com/obversa/obversa/sdk"
)

// modeEnv selects what the re-executed test binary serves.
const modeEnv = "OBVERSA_SDK_TEST_MODE"

var testBin, testBinSHA string

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		os.Exit(serveHelper(mode))
	}
	var err error
	if testBin, err = os.Executable(); err == nil {
		testBinSHA, err = plugin.FileSHA256(testBin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "locating test binary:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func serveHelper(mode string) int {
	var err error
	switch mode {
	case "engine":
		err = sdk.ServeEngine(echoEngine{})
	case "node":
		err = sdk.ServeNode(echoNode{})
	case "both":
		err = sdk.Serve(sdk.WithEngine(echoEngine{}), sdk.WithNode(echoNode{}), sdk.WithLogger(sdk.Logger("custom")))
	case "policy":
		err = sdk.ServePolicy(wordPolicy{})
	case "not-serving":
		err = sdk.ServeEngine(echoEngine{}, sdk.WithHealth(func(context.Context) bool { return false }))
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// echoEngine answers Run with the prompt, or fails as asked.
type echoEngine struct{}

func (echoEngine) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{Name: "echo", Version: "1", Types: []sdk.Type{sdk.TypeEngine}}, nil
}

func (echoEngine) Configure(context.Context, json.RawMessage) ([]sdk.Diagnostic, error) {
	return []sdk.Diagnostic{{Severity: sdk.SeverityWarning, Summary: "configured"}}, nil
}

func (echoEngine) Admit(_ context.Context, req sdk.AdmitRequest) (*sdk.AdmitResponse, error) {
	return &sdk.AdmitResponse{Supported: true, Selection: req.Target}, nil
}

func (echoEngine) Run(_ context.Context, req sdk.RunRequest, emit sdk.Emitter) (*sdk.RunResult, error) {
	// A logger made after Serve started must still reach the host.
	sdk.Logger("echo-run").Info("run started", "prompt", req.Prompt)
	if req.Prompt == "quota" {
		return nil, sdk.Fail(sdk.FailureQuota, "out of %s: %w", "credits", errors.New("402"))
	}
	if err := emit(sdk.RunEvent{Kind: sdk.EventText, Text: req.Prompt}); err != nil {
		return nil, err
	}
	return &sdk.RunResult{Parts: []sdk.Part{{Kind: sdk.PartText, Text: req.Prompt, Final: true}}}, nil
}

// echoNode returns its input.
type echoNode struct{}

func (echoNode) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{Name: "echo-node", Types: []sdk.Type{sdk.TypeNode}}, nil
}

func (echoNode) Configure(context.Context, json.RawMessage) ([]sdk.Diagnostic, error) {
	return nil, nil
}

func (echoNode) Invoke(_ context.Context, req sdk.InvokeRequest) (json.RawMessage, error) {
	return req.Input, nil
}

// wordPolicy waits on a prompt or input holding "push", denies one holding
// "wipe", answers nothing for "mute", panics on "panic", and allows the
// rest.
type wordPolicy struct{}

func (wordPolicy) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{Name: "words", Version: "1", Types: []sdk.Type{sdk.TypePolicy}}, nil
}

func (wordPolicy) Configure(context.Context, json.RawMessage) ([]sdk.Diagnostic, error) {
	return nil, nil
}

func (wordPolicy) Decide(_ context.Context, req sdk.DecideRequest) (*sdk.Decision, error) {
	text := req.Prompt + string(req.Input)
	switch {
	case strings.Contains(text, "panic"):
		panic("a policy bug")
	case strings.Contains(text, "mute"):
		return nil, nil
	case strings.Contains(text, "bad"):
		return &sdk.Decision{Verdict: "perhaps"}, nil
	case strings.Contains(text, "push"):
		return &sdk.Decision{Verdict: sdk.VerdictWait, Reason: "pushes leave the machine"}, nil
	case strings.Contains(text, "wipe"):
		return &sdk.Decision{Verdict: sdk.VerdictDeny, Reason: "never wipe"}, nil
	}
	return &sdk.Decision{Verdict: sdk.VerdictAllow}, nil
}

func launch(t *testing.T, mode string, typ plugin.Type, logOut io.Writer) *plugin.Client {
	t.Helper()
	if logOut == nil {
		logOut = io.Discard
	}
	c, err := pluginhost.Launch(context.Background(), plugin.LaunchConfig{
		Name: "sdk-" + mode, Type: typ, Path: testBin, SHA256: testBinSHA,
		Env:    []string{modeEnv + "=" + mode},
		Logger: hclog.New(&hclog.LoggerOptions{Output: logOut, Level: hclog.Info}),
	})
	if err != nil {
		t.Fatalf("Launch(%s): %v", mode, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestServeEngine(t *testing.T) {
	t.Parallel()
	var logs testutil.SyncBuffer
	c := launch(t, "engine", plugin.TypeEngine, &logs)
	e, err := c.Engine()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Health(ctx); err != nil {
		t.Errorf("Health: %v", err)
	}
	diags, err := e.Configure(ctx, nil)
	if diff := cmp.Diff([]sdk.Diagnostic{{Severity: sdk.SeverityWarning, Summary: "configured"}}, diags); err != nil || diff != "" {
		t.Errorf("Configure: %v (-want +got):\n%s", err, diff)
	}
	var streamed []string
	res, err := e.Run(ctx, sdk.RunRequest{Prompt: "hi"}, func(ev sdk.RunEvent) error {
		streamed = append(streamed, ev.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := res.Final(); f.Text != "hi" || !cmp.Equal(streamed, []string{"hi"}) {
		t.Errorf("Run: final %q, streamed %q", f.Text, streamed)
	}

	// The plugin's JSON log line is parsed and re-logged at its level,
	// under the plugin's name.
	deadline := time.Now().Add(5 * time.Second)
	var line string
	for line == "" {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "run started") {
				line = l
			}
		}
		if line == "" && time.Now().After(deadline) {
			t.Fatalf("plugin log line not re-logged; host logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{"[INFO]", " sdk-engine.", "prompt=hi"} {
		if !strings.Contains(line, want) {
			t.Errorf("re-logged line lacks %q: %s", want, line)
		}
	}

	// Not served: the node binding.
	n, err := launch(t, "engine", plugin.TypeNode, nil).Node()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Describe(ctx); !errors.Is(err, plugin.ErrWrongType) {
		t.Errorf("node Describe on an engine-only plugin: %v, want ErrWrongType", err)
	}
}

func TestServeFailReachesHostTyped(t *testing.T) {
	t.Parallel()
	e, _ := launch(t, "engine", plugin.TypeEngine, nil).Engine()
	_, err := e.Run(context.Background(), sdk.RunRequest{Prompt: "quota"}, nil)
	var f *sdk.Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v is not a *sdk.Failure", err)
	}
	if diff := cmp.Diff(&sdk.Failure{Kind: sdk.FailureQuota, Message: "out of credits: 402"}, f); diff != "" {
		t.Errorf("failure (-want +got):\n%s", diff)
	}
}

func TestServeNode(t *testing.T) {
	t.Parallel()
	n, err := launch(t, "node", plugin.TypeNode, nil).Node()
	if err != nil {
		t.Fatal(err)
	}
	out, err := n.Invoke(context.Background(), sdk.InvokeRequest{Input: json.RawMessage(`{"x":1}`)})
	if err != nil || string(out) != `{"x":1}` {
		t.Errorf("Invoke = %s, %v", out, err)
	}
}

func TestServeBoth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, _ := launch(t, "both", plugin.TypeEngine, nil).Engine()
	if d, err := e.Describe(ctx); err != nil || d.Name != "echo" {
		t.Errorf("engine Describe = %+v, %v", d, err)
	}
	n, _ := launch(t, "both", plugin.TypeNode, nil).Node()
	if d, err := n.Describe(ctx); err != nil || d.Name != "echo-node" {
		t.Errorf("node Describe = %+v, %v", d, err)
	}
}

func TestWithHealth(t *testing.T) {
	t.Parallel()
	c := launch(t, "not-serving", plugin.TypeEngine, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Health(ctx); !errors.Is(err, plugin.ErrNotServing) {
		t.Errorf("Health = %v, want ErrNotServing", err)
	}
}

func TestServeNothing(t *testing.T) {
	t.Parallel()
	if err := sdk.Serve(); !errors.Is(err, plugin.ErrServeConfig) {
		t.Errorf("Serve() = %v, want ErrServeConfig", err)
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want *sdk.Failure
	}{
		{"plain", sdk.Fail(sdk.FailureAuth, "bad key"), &sdk.Failure{Kind: sdk.FailureAuth, Message: "bad key"}},
		{"formatted", sdk.Fail(sdk.FailureMissingCLI, "%s not found in %d dirs", "claude", 3),
			&sdk.Failure{Kind: sdk.FailureMissingCLI, Message: "claude not found in 3 dirs"}},
		{"wrapped text", sdk.Fail(sdk.FailureTransient, "call: %w", io.ErrUnexpectedEOF),
			&sdk.Failure{Kind: sdk.FailureTransient, Message: "call: unexpected EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f *sdk.Failure
			if !errors.As(tt.err, &f) {
				t.Fatalf("%v is not a *Failure", tt.err)
			}
			if diff := cmp.Diff(tt.want, f); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestServePolicy(t *testing.T) {
	t.Parallel()
	c := launch(t, "policy", plugin.TypePolicy, nil)
	p, err := c.Policy()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d, err := c.Describer().Describe(ctx); err != nil || d.Name != "words" || !cmp.Equal(d.Types, []sdk.Type{sdk.TypePolicy}) {
		t.Errorf("Describe = %+v, %v", d, err)
	}
	engine := func(prompt string) sdk.DecideRequest {
		return sdk.DecideRequest{RunID: "r", NodeID: "n", Position: "dag/n/1", Attempt: 1, Kind: sdk.ActionEngine, NodeKind: "required",
			Lane: "w", Target: sdk.Identity{Adapter: "mock", Provider: "local"}, Prompt: prompt}
	}
	binding := func(input string) sdk.DecideRequest {
		return sdk.DecideRequest{NodeID: "n", Kind: sdk.ActionBinding, Binding: "shell", Input: json.RawMessage(input), Attempt: 2}
	}
	tests := []struct {
		name string
		req  sdk.DecideRequest
		want *sdk.Decision
		err  error
	}{
		{"allow", engine("say hello"), &sdk.Decision{Verdict: sdk.VerdictAllow}, nil},
		{"wait", binding(`{"command":["git","push"]}`), &sdk.Decision{Verdict: sdk.VerdictWait, Reason: "pushes leave the machine"}, nil},
		{"deny", engine("wipe the disk"), &sdk.Decision{Verdict: sdk.VerdictDeny, Reason: "never wipe"}, nil},
		// What cannot be taken for an answer is an error, never an allow.
		{"nil answer", engine("mute"), nil, nil},
		{"unknown verdict", engine("bad"), nil, plugin.ErrProtocol},
		{"panic", engine("panic"), nil, nil},
		{"no action kind", sdk.DecideRequest{NodeID: "n"}, nil, plugin.ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Decide(ctx, tt.req)
			if tt.want != nil {
				if err != nil || !cmp.Equal(got, tt.want) {
					t.Errorf("Decide = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			var f *sdk.Failure
			switch {
			case got != nil || err == nil:
				t.Errorf("Decide = %+v, %v; want an error", got, err)
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Errorf("Decide error %v, want %v", err, tt.err)
			case tt.err == nil && (!errors.As(err, &f) || f.Kind != sdk.FailureUnknown):
				t.Errorf("Decide error %v, want an unknown failure", err)
			}
		})
	}
	// The plugin kept serving after the panic.
	if d, err := p.Decide(ctx, engine("hi")); err != nil || d.Verdict != sdk.VerdictAllow {
		t.Errorf("Decide after a panic = %+v, %v", d, err)
	}
	// An engine-only plugin does not serve the Policy service.
	other, err := launch(t, "engine", plugin.TypePolicy, nil).Policy()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Decide(ctx, engine("hi")); !errors.Is(err, plugin.ErrWrongType) {
		t.Errorf("Decide on an engine-only plugin: %v, want ErrWrongType", err)
	}
}
