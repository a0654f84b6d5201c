package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// binary is the plugin built once for the whole test run.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mock-engine-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "mock-engine")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the plugin: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// launch starts the built plugin as an engine over the real transport.
func launch(t *testing.T) plugin.Engine {
	t.Helper()
	sum, err := plugin.FileSHA256(binary)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pluginhost.Launch(context.Background(), plugin.LaunchConfig{Name: "mock", Type: plugin.TypeEngine, Path: binary, SHA256: sum})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	e, err := c.Engine()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var target = plugin.Identity{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{}}

func TestOverTransport(t *testing.T) {
	t.Parallel()
	e := launch(t)
	ctx := context.Background()
	desc, err := e.Describe(ctx)
	if err != nil || desc.Name != "mock" || !desc.Capabilities.Admit {
		t.Fatalf("Describe = %+v, %v", desc, err)
	}
	d, err := e.Configure(ctx, json.RawMessage(`{"responses": [
		{"node": "x", "fail": {"kind": "rate_limit", "message": "slow down", "retry_after": "2s"}},
		{"node": "slow", "delay": "1m"},
		{"node": "s", "json": {"ok": true}}]}`))
	if err != nil || len(d) > 0 {
		t.Fatalf("Configure = %+v, %v", d, err)
	}
	if d, _ := e.Configure(ctx, json.RawMessage(`{"responses": [{"fail": {"kind": "nope"}}]}`)); len(d) != 1 || d[0].Attribute != "responses[0].fail.kind" {
		t.Errorf("bad config diagnostics = %+v", d)
	}

	var events []plugin.RunEvent
	res, err := e.Run(ctx, plugin.RunRequest{NodeID: "a", Prompt: "hello there", Target: target}, func(ev plugin.RunEvent) error {
		events = append(events, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	final, _ := res.Final()
	var text strings.Builder
	for _, ev := range events[:len(events)-1] {
		text.WriteString(ev.Text)
	}
	if final.Text != `mock answer to: "hello there"` || text.String() != final.Text {
		t.Errorf("final %q, streamed %q", final.Text, text.String())
	}
	if last := events[len(events)-1]; last.Kind != plugin.EventUsage || last.Usage != res.Usage || !res.Usage.Known {
		t.Errorf("last event %+v, usage %+v", last, res.Usage)
	}

	res, err = e.Run(ctx, plugin.RunRequest{NodeID: "s", Target: target}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]plugin.Part{{Kind: plugin.PartStructured, JSON: json.RawMessage(`{"ok":true}`), Final: true}}, res.Parts); diff != "" {
		t.Errorf("structured parts (-want +got):\n%s", diff)
	}

	_, err = e.Run(ctx, plugin.RunRequest{NodeID: "x", Target: target}, nil)
	var f *plugin.Failure
	if !errors.As(err, &f) || f.Kind != plugin.FailureRateLimit || f.RetryAfter != 2*time.Second {
		t.Errorf("Run(x) = %v, want rate_limit with retry after 2s", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	begin := time.Now()
	_, err = e.Run(cctx, plugin.RunRequest{NodeID: "slow", Target: target}, nil)
	// The host side reports its own cancellation as context.Canceled;
	// what matters is that the plugin stops promptly.
	if !errors.Is(err, context.Canceled) && (!errors.As(err, &f) || f.Kind != plugin.FailureAborted) {
		t.Errorf("cancelled Run = %v, want cancelled or aborted", err)
	}
	if el := time.Since(begin); el > 3*time.Second {
		t.Errorf("cancelled Run took %v", el)
	}
}

// TestOnePBeforeGRPC checks that the mock takes its one P before gRPC and
// protobuf initialise (plugins/mock-engine/internal/onep): the binary run
// by hand with GODEBUG=inittrace=1 lists onep's initialisation before
// protobuf's first package and gRPC's own.
func TestOnePBeforeGRPC(t *testing.T) {
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
	out, _ := cmd.CombinedOutput() // run by hand, it exits 1
	onep, first := -1, -1
	for i, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		switch {
		case strings.HasSuffix(f[1], "/mock-engine/internal/onep"):
			onep = i
		case first < 0 && (f[1] == "google.golang.org/grpc" || strings.HasPrefix(f[1], "google.golang.org/protobuf/")):
			first = i
		}
	}
	if onep < 0 || first < 0 || onep > first {
		t.Fatalf("onep initialised at line %d, gRPC or protobuf first at %d (want onep first):\n%s", onep, first, out)
	}
}

// hostOnly are packages a plugin binary must neither link nor initialise:
// go-plugin is the host's (plugin/pluginhost), and these are the costly
// initialisations it brings (docs/decisions.md, "Go plugins serve
// go-plugin's protocol themselves").
var hostOnly = []string{"github.com/hashicorp/go-plugin", "google.golang.org/protobuf/reflect/protodesc",
	"google.golang.org/protobuf/types/descriptorpb", "encoding/gob", "net/rpc", "github.com/hashicorp/yamux"}

// TestNoGoPlugin: the built plugin does not link go-plugin (its build
// information, go version -m, names no such module), and run with
// GODEBUG=inittrace=1 it initialises none of hostOnly.
func TestNoGoPlugin(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", binary).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "google.golang.org/grpc") {
		t.Fatalf("go version -m lists no modules:\n%s", out)
	}
	for _, mod := range []string{"github.com/hashicorp/go-plugin", "github.com/hashicorp/yamux"} {
		if strings.Contains(string(out), mod) {
			t.Errorf("the plugin links %s:\n%s", mod, out)
		}
	}
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	trace, _ := cmd.CombinedOutput() // run by hand, it exits 1
	inits := 0
	for _, line := range strings.Split(string(trace), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		inits++
		for _, p := range hostOnly {
			if f[1] == p || strings.HasPrefix(f[1], p+"/") {
				t.Errorf("the plugin initialises %s: %s", f[1], line)
			}
		}
	}
	if inits == 0 {
		t.Fatalf("no init trace:\n%s", trace)
	}
}
