package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ScenarioKind names a behaviour the conformance kit (sdk/conformance) asks
// a plugin to produce through the optional Conformance service.
type ScenarioKind string

// Scenario kinds (plugin.proto, enum ScenarioKind).
const (
	// ScenarioFailure: the Run fails with Scenario.Failure.
	ScenarioFailure ScenarioKind = "failure"
	// ScenarioDelay: the Run streams one event, then waits Scenario.Delay
	// before answering; a cancellation ends the wait at once with an
	// aborted failure.
	ScenarioDelay ScenarioKind = "delay"
	// ScenarioUnknownUsage: the Run succeeds without measuring usage, so
	// the result's usage is unknown and no reported usage event is sent.
	ScenarioUnknownUsage ScenarioKind = "unknown_usage"
	// ScenarioToolEvents: the Run streams a tool use and its tool result
	// before the answer and keeps both as result parts, in stream order,
	// before the final part.
	ScenarioToolEvents ScenarioKind = "tool_events"
	// ScenarioLateFinal: the engine's upstream reports a transport failure,
	// after which the final answer still arrives; the Run returns a result
	// with that answer instead of a failure.
	ScenarioLateFinal ScenarioKind = "late_final"
	// ScenarioPanic: the Run handler panics (in Go; an exception in other
	// languages). It reaches the host as an unknown failure and the plugin
	// keeps serving.
	ScenarioPanic ScenarioKind = "panic"
)

// ScenarioKinds lists every scenario kind in wire order.
var ScenarioKinds = []ScenarioKind{
	ScenarioFailure, ScenarioDelay, ScenarioUnknownUsage, ScenarioToolEvents, ScenarioLateFinal, ScenarioPanic,
}

// Valid reports whether k is one of ScenarioKinds.
func (k ScenarioKind) Valid() bool {
	for _, v := range ScenarioKinds {
		if v == k {
			return true
		}
	}
	return false
}

// Scenario is one behaviour the kit asks for.
type Scenario struct {
	Kind ScenarioKind
	// Failure is the kind to fail with, for ScenarioFailure.
	Failure FailureKind
	// Delay is how long to wait, for ScenarioDelay (millisecond precision
	// on the wire).
	Delay time.Duration
}

// String names the scenario as the kit reports it: "failure:<kind>" for a
// failure scenario, the kind otherwise.
func (s Scenario) String() string {
	if s.Kind == ScenarioFailure {
		return string(ScenarioFailure) + ":" + string(s.Failure)
	}
	return string(s.Kind)
}

// ParseScenario parses a scenario name as String writes it ("delay",
// "failure:rate_limit"). A Delay is not part of the name and stays 0. It
// returns an error wrapping ErrInvalidRequest for an unknown kind or
// failure kind.
func ParseScenario(name string) (Scenario, error) {
	kind, failure, hasFailure := strings.Cut(name, ":")
	s := Scenario{Kind: ScenarioKind(kind)}
	switch {
	case !s.Kind.Valid():
		return Scenario{}, fmt.Errorf("unknown scenario %q: %w", name, ErrInvalidRequest)
	case s.Kind == ScenarioFailure:
		s.Failure = FailureKind(failure)
		if !s.Failure.Valid() {
			return Scenario{}, fmt.Errorf("scenario %q: unknown failure kind %q: %w", name, failure, ErrInvalidRequest)
		}
	case hasFailure:
		return Scenario{}, fmt.Errorf("scenario %q: only %q takes a failure kind: %w", name, ScenarioFailure, ErrInvalidRequest)
	}
	return s, nil
}

// Conformance is the optional scenario control a plugin may serve for the
// conformance kit (plugin.proto, service Conformance). Serve serves it when
// ServeConfig.Conformance is set, or when the Engine implements it. Serve
// itself answers the service's Settled call by recording what each Run
// handler returned, so implementations only produce scenarios and count
// model calls. The host never calls it during a run.
type Conformance interface {
	// Scenarios lists the scenario kinds the plugin can produce. Failure
	// scenarios are asked for every kind in Description.FailureKinds.
	Scenarios(ctx context.Context) ([]ScenarioKind, error)
	// Arm makes the next Run whose AttemptID equals attemptID produce s;
	// that Run consumes the arming. An error (a scenario the plugin
	// cannot produce) reaches the kit as a typed failure.
	Arm(ctx context.Context, attemptID string, s Scenario) error
	// ModelCalls returns how many model calls (CLI executions, API
	// requests) the plugin has made since it started; the kit checks that
	// Admit makes none.
	ModelCalls(ctx context.Context) (int64, error)
}

// Settlement is the plugin's side of one Run attempt, as reported by the
// Conformance service's Settled call.
type Settlement struct {
	// Started is true once a Run with the attempt id reached the plugin's
	// handler.
	Started bool
	// Settled is true once that handler returned.
	Settled bool
	// Result or Failure is the terminal message the handler produced when
	// Settled; the result is not validated.
	Result  *RunResult
	Failure *Failure
}

// WorkspaceModeRead is the RunRequest.WorkspaceMode that asks the engine to
// let the model read the workspace. Reading needs a tool, so a read request
// with no tools is contradictory: Serve answers it with a FailureInvalidConfig
// failure before the engine sees it, and the conformance kit checks that
// every plugin does the same.
const WorkspaceModeRead = "read"
