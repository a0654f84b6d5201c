package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/conformance"
	"github.com/obversa/obversa/sdk/enginetest"
)

// Plugins whose ordinary Runs end with a result a run cannot record, and
// one that hangs: each is the mock engine changed in one way.

// badResultPlugin serves the plugin for mode; ok is false for a mode that
// is not one of these.
func badResultPlugin(mode string) (code int, ok bool) {
	var err error
	switch mode {
	case "hangs":
		err = sdk.ServeEngine(&hangs{enginetest.New()})
	case "huge-number", "bad-utf8", "oversize", "duplicate-member":
		err = sdk.ServeEngine(&badResult{Engine: enginetest.New(), mode: mode, armed: map[string]bool{}})
	default:
		return 0, false
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	return 0, true
}

// hangs answers Describe and Configure, and never returns from Admit or
// Run, whatever the host does: a plugin stuck on its model's connection.
type hangs struct{ *enginetest.Engine }

func (e *hangs) Admit(context.Context, plugin.AdmitRequest) (*plugin.AdmitResponse, error) {
	select {}
}

func (e *hangs) Run(context.Context, plugin.RunRequest, plugin.Emitter) (*plugin.RunResult, error) {
	select {}
}

// badResult ends each ordinary Run (no scenario armed, no output schema)
// with the mock's result changed as its mode says.
type badResult struct {
	*enginetest.Engine
	mode  string
	mu    sync.Mutex
	armed map[string]bool
}

func (e *badResult) Arm(ctx context.Context, id string, s plugin.Scenario) error {
	e.mu.Lock()
	e.armed[id] = true
	e.mu.Unlock()
	return e.Engine.Arm(ctx, id, s)
}

func (e *badResult) Run(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter) (*plugin.RunResult, error) {
	res, err := e.Engine.Run(ctx, req, emit)
	e.mu.Lock()
	armed := e.armed[req.AttemptID]
	e.mu.Unlock()
	if err != nil || armed || len(req.OutputSchema) > 0 || len(req.Prompt) > 1<<20 {
		return res, err
	}
	structured := func(text string) {
		res.Parts = []plugin.Part{{Kind: plugin.PartStructured, JSON: json.RawMessage(text), Final: true}}
	}
	switch e.mode {
	case "huge-number":
		// A 64-bit id as a CLI prints it: no double holds it exactly.
		structured(`{"answer":"hello","id":12345678901234567890}`)
	case "bad-utf8":
		structured("{\"answer\":\"hello \xff\"}")
	case "duplicate-member":
		structured(`{"answer":"hello","answer":"again"}`)
	case "oversize":
		res.Parts = []plugin.Part{{Kind: plugin.PartText, Text: strings.Repeat("hello ", 400_000), Final: true}}
	}
	return res, nil
}

// TestUnrecordableResults: a result a run cannot record — a number no
// double holds exactly, invalid UTF-8 or a member name twice in its JSON,
// parts beyond the record's default artifact size — fails the cases that received it, naming the check
// ("record") and the cause, though the protocol is otherwise followed.
func TestUnrecordableResults(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ mode, cause string }{
		{"huge-number", "a number cannot be represented exactly"},
		{"bad-utf8", "cannot be put in RFC 8785 canonical form"},
		{"duplicate-member", "cannot be put in RFC 8785 canonical form"},
		{"oversize", "more than the 1048576 a run keeps by default"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			rep, err := conformance.Check(ctx, self(t), conformance.Options{Env: helperEnv(tt.mode),
				Only: []string{"handshake.line", "configure.valid", "run.parts", "run.attempts", "run.structured"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"run.parts", "run.attempts"} {
				r, _ := rep.Result(name)
				if r.Status != conformance.Fail || !strings.Contains(r.Seen, "check record failed") || !strings.Contains(r.Seen, tt.cause) {
					t.Errorf("%s: %s %q, want a failure of the check record saying %q", name, r.Status, r.Seen, tt.cause)
				}
			}
			// A structured answer to a schema is left as the mock gives it.
			if r, _ := rep.Result("run.structured"); r.Status != conformance.Pass {
				t.Errorf("run.structured: %s %q", r.Status, r.Seen)
			}
		})
	}
}

// TestCheckTimeBound: against an engine whose Admit and Runs never return,
// the check ends soon after its overall bound (Options.Timeout) instead
// of holding each case to its own: the case under way and every case
// after it fail, saying the bound passed.
func TestCheckTimeBound(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const bound = 15 * time.Second
	start := time.Now()
	rep, err := conformance.Check(ctx, self(t), conformance.Options{Env: helperEnv("hangs"), Timeout: bound})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("the check ran until the test's own 5-minute deadline (%s)", took)
	}
	over := 0
	for _, r := range rep.Results {
		if strings.Contains(r.Seen, "the check's time bound of 15s passed") {
			over++
			if r.Status != conformance.Fail {
				t.Errorf("%s: %s after the bound passed: %q", r.Case, r.Status, r.Seen)
			}
		}
	}
	if over == 0 {
		for _, r := range rep.Results {
			t.Logf("%s %s: %s", r.Case, r.Status, r.Seen)
		}
		t.Fatalf("no case says the check's time bound passed (the check took %s)", took)
	}
	if last := rep.Results[len(rep.Results)-1]; !strings.HasPrefix(last.Seen, "not run: ") {
		t.Errorf("the last case, %s, ran after the bound passed: %q", last.Case, last.Seen)
	}
	t.Logf("the check took %s with a bound of %s; %d cases cut off", took, bound, over)
}
