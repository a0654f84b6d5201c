package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

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
