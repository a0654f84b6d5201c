package plugin_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/obversa/obversa/plugin"
)

// testFailure is the failure the fakes return for "fail:<kind>".
func testFailure(kind plugin.FailureKind) *plugin.Failure {
	return &plugin.Failure{
		Kind:       kind,
		Message:    "fake " + string(kind),
		RetryAfter: 1500 * time.Millisecond,
		Provider:   "fake-provider",
		Model:      "fake-model",
	}
}

// fakeEngine is the Engine served by the helper process. Its behaviour is
// chosen by the prompt (Run) or the target model (Admit).
type fakeEngine struct {
	// sawCancel is set when a "wait-cancel" Run observed its context end.
	sawCancel atomic.Bool
}

func newFakeEngine() *fakeEngine { return &fakeEngine{} }

var fakeDescription = plugin.Description{
	Name:    "fake",
	Version: "1.2.3",
	Types:   []plugin.Type{plugin.TypeEngine, plugin.TypeNode},
	Capabilities: plugin.Capabilities{
		Admit: true, StructuredOutput: true, Tools: true, MaxConcurrency: 4,
	},
	FailureKinds: []plugin.FailureKind{plugin.FailureAuth, plugin.FailureRateLimit},
}

func (e *fakeEngine) Describe(context.Context) (*plugin.Description, error) {
	d := fakeDescription
	return &d, nil
}

func (e *fakeEngine) Configure(_ context.Context, config json.RawMessage) ([]plugin.Diagnostic, error) {
	return configure(config)
}

// configure returns the diagnostics listed in the config's "diags" field.
func configure(config json.RawMessage) ([]plugin.Diagnostic, error) {
	if config == nil {
		return nil, nil
	}
	var c struct {
		Diags []plugin.Diagnostic `json:"diags"`
		Fail  plugin.FailureKind  `json:"fail"`
	}
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	if c.Fail != "" {
		return nil, testFailure(c.Fail)
	}
	return c.Diags, nil
}

func (e *fakeEngine) Admit(_ context.Context, req plugin.AdmitRequest) (*plugin.AdmitResponse, error) {
	model := req.Target.Model
	switch {
	case model == "ok":
		sel := req.Target
		sel.Provider = "fake-provider"
		return &plugin.AdmitResponse{Supported: true, Selection: sel}, nil
	case model == "static-unknown":
		return &plugin.AdmitResponse{Reason: "no static check"}, nil
	case model == "saw-cancel":
		return &plugin.AdmitResponse{Supported: e.sawCancel.Load()}, nil
	case model == "panic":
		panic("admit exploded")
	case model == "nil":
		return nil, nil
	case strings.HasPrefix(model, "fail:"):
		return nil, fmt.Errorf("wrapped: %w", testFailure(plugin.FailureKind(strings.TrimPrefix(model, "fail:"))))
	}
	return nil, errors.New("unexpected model " + model)
}

func (e *fakeEngine) Run(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter) (*plugin.RunResult, error) {
	ok := func(parts ...plugin.Part) *plugin.RunResult {
		return &plugin.RunResult{
			Parts:      parts,
			Usage:      plugin.Usage{Known: true, Input: 10, Output: 20, CacheRead: 3, CacheCreation: 4},
			Requested:  req.Target,
			Effective:  plugin.Identity{Adapter: "fake", Provider: "fake-provider", Model: "m1"},
			StopReason: "end_turn",
		}
	}
	final := func(text string) plugin.Part { return plugin.Part{Kind: plugin.PartText, Text: text, Final: true} }
	prompt := req.Prompt
	switch {
	case prompt == "hello":
		events := []plugin.RunEvent{
			{Kind: plugin.EventThinking, Text: "hmm"},
			{Kind: plugin.EventToolUse, ToolName: "read", ToolID: "t1", ToolJSON: json.RawMessage(`{"path":"a"}`)},
			{Kind: plugin.EventToolResult, ToolName: "read", ToolID: "t1", ToolJSON: json.RawMessage(`"contents"`)},
			{Kind: plugin.EventText, Text: "hel"},
			{Kind: plugin.EventText, Text: "lo"},
			{Kind: plugin.EventUsage, Usage: plugin.Usage{Known: true, Input: 10, Output: 20}},
		}
		for _, ev := range events {
			if err := emit(ev); err != nil {
				return nil, err
			}
		}
		return ok(plugin.Part{Kind: plugin.PartThinking, Text: "hmm"},
			plugin.Part{Kind: plugin.PartToolUse, ToolName: "read", ToolID: "t1", JSON: json.RawMessage(`{"path":"a"}`)},
			final("hello")), nil
	case prompt == "unknown-usage":
		r := ok(plugin.Part{Kind: plugin.PartStructured, JSON: json.RawMessage(`{"a":1}`), Final: true})
		r.Usage = plugin.Usage{}
		return r, nil
	case prompt == "request":
		b, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		return ok(plugin.Part{Kind: plugin.PartStructured, JSON: b, Final: true}), nil
	case prompt == "env":
		return ok(final(os.Getenv("OBVERSA_TEST_SECRET") + "|" + os.Getenv("OBVERSA_TEST_ALLOWED"))), nil
	case prompt == "client-cert":
		return ok(final(clientCertKey())), nil
	case prompt == "stdout":
		fmt.Println("stray stdout line")
		return ok(final("printed")), nil
	case prompt == "invalid":
		return ok(final("one"), final("two")), nil
	case prompt == "nil":
		return nil, nil
	case prompt == "panic":
		_ = emit(plugin.RunEvent{Kind: plugin.EventText, Text: "before panic"})
		panic("run exploded")
	case prompt == "crash":
		_ = emit(plugin.RunEvent{Kind: plugin.EventText, Text: "before crash"})
		os.Exit(7)
	case prompt == "wait-cancel":
		_ = emit(plugin.RunEvent{Kind: plugin.EventText, Text: "waiting"})
		<-ctx.Done()
		e.sawCancel.Store(true)
		return nil, &plugin.Failure{Kind: plugin.FailureAborted, Message: "cancelled"}
	case prompt == "ignore-cancel":
		_ = emit(plugin.RunEvent{Kind: plugin.EventText, Text: "ignoring"})
		time.Sleep(time.Hour)
		return nil, errors.New("unreachable")
	case strings.HasPrefix(prompt, "big:"):
		n, err := strconv.Atoi(strings.TrimPrefix(prompt, "big:"))
		if err != nil {
			return nil, err
		}
		return ok(final(strings.Repeat("x", n))), nil
	case strings.HasPrefix(prompt, "fail:"):
		_ = emit(plugin.RunEvent{Kind: plugin.EventText, Text: "partial"})
		return nil, testFailure(plugin.FailureKind(strings.TrimPrefix(prompt, "fail:")))
	}
	if len(prompt) > 64 {
		return ok(final(fmt.Sprintf("prompt of %d bytes", len(prompt)))), nil
	}
	return nil, errors.New("unexpected prompt " + prompt)
}

// fakeNode is the NodeBinding served by the helper process; behaviour is
// chosen by the input's "op".
type fakeNode struct{}

func (fakeNode) Describe(context.Context) (*plugin.Description, error) {
	return &plugin.Description{Name: "fake-node", Version: "0.1.0", Types: []plugin.Type{plugin.TypeNode}}, nil
}

func (fakeNode) Configure(_ context.Context, config json.RawMessage) ([]plugin.Diagnostic, error) {
	return configure(config)
}

func (fakeNode) Invoke(_ context.Context, req plugin.InvokeRequest) (json.RawMessage, error) {
	var in struct {
		Op   string             `json:"op"`
		Kind plugin.FailureKind `json:"kind"`
	}
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return nil, err
	}
	switch in.Op {
	case "echo":
		return req.Input, nil
	case "request":
		return json.Marshal(req)
	case "fail":
		return nil, testFailure(in.Kind)
	case "panic":
		panic("invoke exploded")
	case "bad-json":
		return json.RawMessage(`{"unterminated"`), nil
	case "nil":
		return nil, nil
	}
	return nil, errors.New("unexpected op " + in.Op)
}

// clientCertKey names the key of the certificate the host offered in
// PLUGIN_CLIENT_CERT ("ECDSA P-256"), or why there is none.
func clientCertKey() string {
	block, _ := pem.Decode([]byte(os.Getenv("PLUGIN_CLIENT_CERT")))
	if block == nil {
		return "no certificate"
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err.Error()
	}
	key, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return cert.PublicKeyAlgorithm.String()
	}
	return "ECDSA " + key.Curve.Params().Name
}
