package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

func TestNodeInvoke(t *testing.T) {
	t.Parallel()
	n := launchNode(t)
	ctx := context.Background()

	d, err := n.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&plugin.Description{Name: "fake-node", Version: "0.1.0", Types: []plugin.Type{plugin.TypeNode}}, d); diff != "" {
		t.Errorf("Describe (-want +got):\n%s", diff)
	}

	in := json.RawMessage(`{"op":"echo","n":[1,2,3]}`)
	out, err := n.Invoke(ctx, plugin.InvokeRequest{Input: in})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(in) {
		t.Errorf("echo = %s, want %s", out, in)
	}

	req := plugin.InvokeRequest{
		RunID: "r", NodeID: "vet", Position: "dag/vet/1", AttemptID: "a",
		Input: json.RawMessage(`{"op":"request"}`), WorkspaceDir: "/ws", Timeout: 5 * time.Second,
	}
	out, err = n.Invoke(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var got plugin.InvokeRequest
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req, got); diff != "" {
		t.Errorf("request seen by the plugin (-want +got):\n%s", diff)
	}

	out, err = n.Invoke(ctx, plugin.InvokeRequest{Input: json.RawMessage(`{"op":"nil"}`)})
	if err != nil || string(out) != "null" {
		t.Errorf("nil output: %s, %v; want null", out, err)
	}
}

func TestNodeInvokeErrors(t *testing.T) {
	t.Parallel()
	n := launchNode(t)
	ctx := context.Background()

	_, err := n.Invoke(ctx, plugin.InvokeRequest{Input: json.RawMessage(`{"op":"bad-json"}`)})
	if !errors.Is(err, plugin.ErrProtocol) {
		t.Errorf("invalid output JSON: %v, want ErrProtocol", err)
	}
	_, err = n.Invoke(ctx, plugin.InvokeRequest{Input: json.RawMessage(`{"op":"panic"}`)})
	var f *plugin.Failure
	if !errors.As(err, &f) || f.Kind != plugin.FailureUnknown {
		t.Errorf("panic: %v, want unknown failure", err)
	}
	// A plain Go error from the binding is an unknown failure too.
	_, err = n.Invoke(ctx, plugin.InvokeRequest{Input: json.RawMessage(`{"op":"what"}`)})
	if !errors.As(err, &f) || f.Kind != plugin.FailureUnknown || f.Message != "unexpected op what" {
		t.Errorf("plain error: %v, want unknown failure with its text", err)
	}
	// A cancelled context is the caller's error, before anything is sent.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = n.Invoke(cctx, plugin.InvokeRequest{Input: json.RawMessage(`{"op":"echo"}`)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v, want context.Canceled", err)
	}
}
