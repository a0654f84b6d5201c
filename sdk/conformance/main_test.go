package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

// modeEnv makes the re-executed test binary a plugin: the mock engine, or
// one broken in exactly one way.
const modeEnv = "OBVERSA_CONFORMANCE_TEST_MODE"

// binDir holds mock-engine, cmd-engine and obversa, built once by TestMain; repoRoot
// is the module root.
var binDir, repoRoot string

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		os.Exit(servePlugin(mode))
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = filepath.Dir(filepath.Dir(wd))
	dir, err := os.MkdirTemp("", "obversa-conformance-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	pkgs := map[string]string{"mock-engine": "./plugins/mock-engine", "cmd-engine": "./plugins/cmd-engine", "obversa": "./cmd/obversa"}
	if err := testutil.BuildBinaries(dir, pkgs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// servePlugin serves the mock engine broken as mode says.
func servePlugin(mode string) int {
	var err error
	if code, ok := zooPlugin(mode); ok {
		return code
	}
	if code, ok := badResultPlugin(mode); ok {
		return code
	}
	switch mode {
	case "mock":
		err = sdk.ServeEngine(enginetest.New())
	case "not-serving":
		err = sdk.ServeEngine(enginetest.New(), sdk.WithHealth(func(context.Context) bool { return false }))
	case "ignores-cancel":
		err = sdk.ServeEngine(&ignoresCancel{Engine: enginetest.New(), delays: map[string]time.Duration{}})
	case "zero-usage":
		err = sdk.ServeEngine(&zeroUsage{enginetest.New()})
	case "two-finals":
		err = sdk.ServeEngine(&twoFinals{enginetest.New()})
	case "wrapper":
		return serveThroughChild()
	case "orphanable":
		go exitSoonAfterOrphaned()
		err = sdk.ServeEngine(enginetest.New())
	case "plain":
		err = sdk.ServeEngine(plainEngine{enginetest.New()})
	case "with-conformance":
		mock := enginetest.New()
		err = sdk.ServeEngine(plainEngine{mock}, sdk.WithConformance(mock))
	case "policy":
		err = sdk.ServePolicy(&pushPolicy{})
	case "policy-flaky":
		err = sdk.ServePolicy(&pushPolicy{flaky: true})
	case "policy-no-reason":
		err = sdk.ServePolicy(&pushPolicy{mute: true})
	case "never-exits":
		err = sdk.ServeEngine(enginetest.New())
		if err == nil {
			select {} // the controller stopped the server; the process stays
		}
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serveThroughChild is a wrapper that serves the plugin from a child
// process instead of itself, as a wrapper script without exec does: the
// child inherits stdout and serves, the wrapper waits for it.
func serveThroughChild() int {
	self, err := os.Executable()
	if err != nil {
		return 1
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), modeEnv+"=orphanable")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return 1
	}
	return 0
}

// exitSoonAfterOrphaned ends the wrapper's child 3 s after the wrapper
// died, so that the test leaves nothing behind.
func exitSoonAfterOrphaned() {
	parent := os.Getppid()
	for os.Getppid() == parent {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	os.Exit(0)
}

// ignoresCancel waits out a delay scenario, or 10 s for the prompt
// "hello", whatever its context says.
type ignoresCancel struct {
	*enginetest.Engine
	mu     sync.Mutex
	delays map[string]time.Duration // armed delay scenarios by attempt id
}

func (e *ignoresCancel) Arm(ctx context.Context, id string, s plugin.Scenario) error {
	if s.Kind != plugin.ScenarioDelay {
		return e.Engine.Arm(ctx, id, s)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.delays[id] = s.Delay
	return nil
}

func (e *ignoresCancel) Run(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter) (*plugin.RunResult, error) {
	e.mu.Lock()
	d, ok := e.delays[req.AttemptID]
	delete(e.delays, req.AttemptID)
	e.mu.Unlock()
	if req.Prompt == "hello" {
		// A run's node (zoo_test.go): as slow as a delay scenario.
		d, ok = 10*time.Second, true
	}
	if !ok {
		return e.Engine.Run(ctx, req, emit)
	}
	_ = emit(plugin.RunEvent{Kind: plugin.EventText, Text: "waiting"})
	time.Sleep(min(d, 10*time.Second))
	return &plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "done", Final: true}},
		Usage: plugin.Usage{Known: true, Input: 1, Output: 1}}, nil
}

// plainEngine hides the mock engine's Conformance methods, so that only
// sdk.WithConformance can serve them.
type plainEngine struct{ plugin.Engine }

// zeroUsage reports zero tokens where it measured none.
type zeroUsage struct{ *enginetest.Engine }

func (e *zeroUsage) Run(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter) (*plugin.RunResult, error) {
	res, err := e.Engine.Run(ctx, req, emit)
	if res != nil && !res.Usage.Known {
		res.Usage = plugin.Usage{Known: true}
	}
	return res, err
}

// twoFinals marks its final part twice.
type twoFinals struct{ *enginetest.Engine }

func (e *twoFinals) Run(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter) (*plugin.RunResult, error) {
	res, err := e.Engine.Run(ctx, req, emit)
	if res != nil {
		if f, ok := res.Final(); ok {
			res.Parts = append(res.Parts, f)
		}
	}
	return res, err
}

// helperEnv is the plugin environment that selects a helper mode. A race
// build would otherwise sleep a second at every exit (GORACE's
// atexit_sleep_ms), which the shutdown and host-death cases time.
func helperEnv(mode string) map[string]string {
	return map[string]string{modeEnv: mode, "GORACE": "atexit_sleep_ms=0"}
}

// self returns the test binary, which serves a plugin in a helper mode.
func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// pushPolicy waits for a person before a prompt or input that mentions a
// push and allows the rest; flaky, it answers the opposite every second
// time; mute, it waits without saying why.
type pushPolicy struct {
	flaky, mute bool
	calls       atomic.Int64
}

func (p *pushPolicy) Describe(context.Context) (*plugin.Description, error) {
	return &plugin.Description{Name: "push", Version: "1", Types: []plugin.Type{plugin.TypePolicy}}, nil
}

func (p *pushPolicy) Configure(_ context.Context, raw json.RawMessage) ([]plugin.Diagnostic, error) {
	if len(raw) > 0 && raw[0] != '{' {
		return []plugin.Diagnostic{{Severity: plugin.SeverityError, Summary: "config must be an object"}}, nil
	}
	return nil, nil
}

func (p *pushPolicy) Decide(_ context.Context, req plugin.DecideRequest) (*plugin.Decision, error) {
	push := strings.Contains(req.Prompt+string(req.Input), "push") || p.mute
	if p.flaky && p.calls.Add(1)%2 == 0 {
		push = !push
	}
	switch {
	case p.mute:
		return &plugin.Decision{Verdict: plugin.VerdictWait}, nil
	case push:
		return &plugin.Decision{Verdict: plugin.VerdictWait, Reason: "a push leaves the machine"}, nil
	}
	return &plugin.Decision{Verdict: plugin.VerdictAllow}, nil
}
