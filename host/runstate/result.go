package runstate

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/plugin"
)

// Kind is what a run's result says: complete, fail or paused.
type Kind string

// Result kinds (docs/decisions.md, "Vocabulary"). A result of kind
// KindPaused, or one recorded as graph:run-waiting, is not terminal: the
// run carries on once a person answers it.
const (
	KindComplete Kind = "complete"
	KindFail     Kind = "fail"
	KindPaused   Kind = "paused"
)

// kindPauseV0 is how records written before the vocabulary was settled
// spell KindPaused; it is read, never written.
const kindPauseV0 = "pause"

// UnmarshalJSON reads a kind, accepting the older spelling "pause". Any
// other unknown value is an error wrapping graph.ErrInvalidEvent.
func (k *Kind) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	switch s {
	case string(KindComplete), string(KindFail), string(KindPaused):
		*k = Kind(s)
	case kindPauseV0:
		*k = KindPaused
	default:
		return fmt.Errorf("%w: result kind %q", graph.ErrInvalidEvent, s)
	}
	return nil
}

// Result is the data of graph:run-finished and graph:run-waiting, and the
// result object the CLI prints (`run --json`).
type Result struct {
	RunID  string  `json:"run_id"`
	Kind   Kind    `json:"kind"`
	Code   string  `json:"code"`
	Output *Output `json:"output,omitempty"`
	// Usage is the token usage of the run's engine calls when the result
	// was recorded: totals, per lane, and the calls that measured none.
	// Absent from records written before it existed.
	Usage *RunUsage `json:"usage,omitempty"`
}

// check refuses a result that is null or has no kind (the field left
// out: UnmarshalJSON refuses every kind it is given but cannot see an
// absent one). Such a result would encode as kind "", which neither the
// fold nor a snapshot restore reads back. Errors wrap
// graph.ErrInvalidEvent.
func (r *Result) check() error {
	switch {
	case r == nil:
		return fmt.Errorf("%w: null result", graph.ErrInvalidEvent)
	case r.Kind == "":
		return fmt.Errorf("%w: result without a kind", graph.ErrInvalidEvent)
	}
	return nil
}

// Terminal reports whether the result ends the run for good: complete, or
// fail with any code but PROTOCOL (a start refused until a person closes
// an open probe; recorded as graph:run-waiting).
func (r *Result) Terminal() bool { return r.Kind != KindPaused && r.Code != CodeProtocol }

// Phase is the phase the result leaves a run in: completed, stopped,
// failed, or paused for a result that is not terminal.
func (r *Result) Phase() Phase {
	switch {
	case !r.Terminal():
		return PhasePaused
	case r.Kind == KindComplete:
		return PhaseCompleted
	case r.Code == CodeStopped:
		return PhaseStopped
	}
	return PhaseFailed
}

// Output is a result's output. Which members are set depends on the kind
// and code:
//   - complete: Nodes, each node's result (or {"result_artifact": ref});
//   - fail DAG_NODE_FAILED: Failed, Errors and Passed;
//   - fail BUDGET_STOP: Budget (the budget that stopped the run), Limit
//     and Used, and for max_dispatches MaxDispatches and Dispatched too;
//   - paused at positions: Paused;
//   - paused by preflight: PreflightEventID and Message;
//   - fail PROTOCOL (an open probe): Message, ProbeID, Lane, Check, Target;
//   - fail PREFLIGHT_FAILED: Message and Lanes;
//   - codes the watchdog decides: Message (and Changes for WORKSPACE_DRIFT);
//   - paused STORAGE_FULL or RUN_STORAGE: Message and Path, the file the
//     record could not write or read;
//   - paused ARTIFACT_NOT_FOUND or ARTIFACT_INTEGRITY: Message and
//     Artifacts, each artifact the run needs that the record cannot give
//     back;
//   - paused PLUGIN_START_FAILED: Message and Plugins, the plugins that did
//     not start in the worker.
//
// The graph members (Nodes, Passed, Failed, Errors, Paused) are views of
// what the record already holds — node results inline or as artifacts,
// failures, pauses. When they would not fit in the result's event they are
// left out of it and FromRecord is set: the fold puts them back from the
// graph's state at that event (State.Result), so every reader sees the
// whole output and recording a result never copies what was recorded
// (docs/decisions.md, "The run output"). Records written before then may
// hold a large output as an artifact instead (Artifact).
type Output struct {
	Nodes            map[string]json.RawMessage `json:"nodes,omitempty"`
	Passed           []string                   `json:"passed,omitempty"`
	Failed           []string                   `json:"failed,omitempty"`
	Errors           map[string]NodeError       `json:"errors,omitempty"`
	Paused           []graph.PauseRequest       `json:"paused,omitempty"`
	Message          string                     `json:"message,omitempty"`
	PreflightEventID string                     `json:"preflight_event_id,omitempty"`
	ProbeID          string                     `json:"probe_id,omitempty"`
	Lane             string                     `json:"lane,omitempty"`
	Check            string                     `json:"check,omitempty"`
	Target           *plugin.Identity           `json:"target,omitempty"`
	Lanes            []string                   `json:"lanes,omitempty"`
	// Changes lists the workspace changes of a WORKSPACE_DRIFT pause
	// (host/workspace.Change values).
	Changes       json.RawMessage `json:"changes,omitempty"`
	MaxDispatches int             `json:"max_dispatches,omitempty"`
	Dispatched    int             `json:"dispatched,omitempty"`
	// Budget names the limit a BUDGET_STOP passed: max_dispatches,
	// max_input_tokens, max_output_tokens or stop_on_unmeasured; Limit
	// is its value and Used what the run had used (dispatches, tokens, or
	// unmeasured calls).
	Budget string `json:"budget,omitempty"`
	Limit  int64  `json:"limit,omitempty"`
	Used   int64  `json:"used,omitempty"`
	// FromRecord says the graph members were left out of the event
	// because they did not fit in it: they are the graph's state at the
	// event, which the fold restores. Set only in the record, never in a
	// folded result.
	FromRecord bool `json:"from_record,omitempty"`
	// Artifact references the whole output when a record written before
	// FromRecord existed kept a large output as an artifact; the CLI reads
	// it back. Nothing writes it any more.
	Artifact *graph.ArtifactRef `json:"output_artifact,omitempty"`
	// Path is the file a storage pause (STORAGE_FULL, RUN_STORAGE) could
	// not write or read.
	Path string `json:"path,omitempty"`
	// Artifacts are the artifacts an ARTIFACT_NOT_FOUND or
	// ARTIFACT_INTEGRITY pause names.
	Artifacts []ArtifactProblem `json:"artifacts,omitempty"`
	// Plugins names the plugins a PLUGIN_START_FAILED pause is about.
	Plugins []string `json:"plugins,omitempty"`
}

// ArtifactProblem is an artifact a run needs that its record cannot give
// back: missing, damaged or unreadable.
type ArtifactProblem struct {
	// Digest is the artifact's "sha256:<hex>".
	Digest string `json:"digest"`
	// Node is the node whose result the artifact holds.
	Node string `json:"node,omitempty"`
	// Problem is ARTIFACT_NOT_FOUND, ARTIFACT_INTEGRITY or the storage
	// error's code, then what the store said.
	Problem string `json:"problem"`
}

// UnmarshalJSON reads an output, accepting the older member names of
// records written before the vocabulary was settled: "waiting" for
// Paused, and "nodes" as a list (the passed nodes of a failed graph).
func (o *Output) UnmarshalJSON(b []byte) error {
	type plain Output
	var v struct {
		plain
		Nodes   json.RawMessage      `json:"nodes"`
		Waiting []graph.PauseRequest `json:"waiting"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = Output(v.plain)
	if len(v.Waiting) > 0 && len(o.Paused) == 0 {
		o.Paused = v.Waiting
	}
	switch {
	case len(v.Nodes) == 0 || string(v.Nodes) == "null":
	case v.Nodes[0] == '[':
		if err := json.Unmarshal(v.Nodes, &o.Passed); err != nil {
			return err
		}
	default:
		if err := json.Unmarshal(v.Nodes, &o.Nodes); err != nil {
			return err
		}
	}
	return nil
}

// Message returns a result whose output is only a message: what the
// watchdog and the commands record when they decide the result.
func Message(runID string, kind Kind, code, message string) *Result {
	return &Result{RunID: runID, Kind: kind, Code: code, Output: &Output{Message: message}}
}

// OutcomeResult is the result a graph outcome records (docs/decisions.md,
// "The run output"): complete with each passed node's result (a result
// kept as an artifact stays a reference, {"result_artifact": ref}; a
// loop's is its last round's member results by id, a for_each node's its
// instance results by key); fail DAG_NODE_FAILED with the failed and
// blocked nodes, why each failed and the nodes that passed; or paused
// with what each paused position waits for.
func OutcomeResult(runID string, g *graph.State, out *graph.Outcome) *Result {
	res := &Result{RunID: runID, Output: &Output{}}
	switch out.Kind {
	case graph.OutcomeComplete:
		res.Kind = KindComplete
		res.Output.Nodes = map[string]json.RawMessage{}
		for _, id := range out.Nodes {
			if r, ok := vertexOutput(g.Vertex(id)); ok {
				res.Output.Nodes[id] = r
			}
		}
	case graph.OutcomeFail:
		res.Kind, res.Code = KindFail, out.Code
		res.Output.Failed, res.Output.Passed = out.Failed, out.Nodes
		res.Output.Errors = map[string]NodeError{}
		for _, id := range out.Failed {
			if f := g.Vertex(id).Failure(); f != nil {
				res.Output.Errors[id] = NodeError{Code: f.Code, Message: f.Message, Position: f.Position}
			} else {
				res.Output.Errors[id] = UnfinishedError(g, id)
			}
		}
	default:
		res.Kind = KindPaused
		res.Output.Paused = out.Paused
	}
	return res
}

// vertexOutput is a passed vertex's result in an output: a node's result;
// a loop's last round's passed members by id; a for_each node's passed
// instances by key. ok is false when there is none.
func vertexOutput(v *graph.VertexState) (json.RawMessage, bool) {
	var units []*graph.NodeState
	switch {
	case v == nil:
		return nil, false
	case v.Unit != nil:
		return unitOutput(v.Unit)
	case v.Loop != nil:
		if r := v.Loop.Current(); r != nil {
			units = r.Members
		}
	default:
		units = v.Instances
	}
	obj := make(map[string]json.RawMessage, len(units))
	for _, u := range units {
		key := u.Key
		if u.Loop != "" {
			key = u.Def.ID
		}
		if r, ok := unitOutput(u); ok {
			obj[key] = r
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err) // JSON values by string keys
	}
	return b, true
}

// unitOutput is a passed unit's result, or a reference to the artifact
// that keeps it.
func unitOutput(n *graph.NodeState) (json.RawMessage, bool) {
	switch {
	case n.Status != graph.StatusPassed:
		return nil, false
	case n.ResultArtifact != nil:
		return resultRef(n.ResultArtifact), true
	case n.Result != nil:
		return n.Result, true
	}
	return nil, false
}

// resultRef is how an output names a node result kept as an artifact.
func resultRef(ref *graph.ArtifactRef) json.RawMessage {
	b, err := json.Marshal(struct {
		ResultArtifact *graph.ArtifactRef `json:"result_artifact"`
	}{ref})
	if err != nil {
		panic(err) // a struct of strings and numbers
	}
	return b
}

// Compact returns a copy of r whose output leaves the graph members out
// and says so (FromRecord): what a result records when its whole output
// would not fit in an event. r is not changed.
func (r *Result) Compact() *Result {
	c := *r
	if r.Output == nil {
		return &c
	}
	o := *r.Output
	o.Nodes, o.Passed, o.Failed, o.Errors, o.Paused = nil, nil, nil, nil, nil
	o.FromRecord = true
	c.Output = &o
	return &c
}

// restore returns r with the graph members FromRecord left out put back
// from g, the graph's state at r's event, and each BLOCKED node error
// explained again by g (UnfinishedError); r itself when it left nothing
// out and explains nothing differently (or g has no outcome to take them
// from). Records written before STOPPED_ON_ERROR say BLOCKED "a
// dependency failed" of nodes that stop_on_error kept from running: the
// error is derived from the graph, never an engine's, so the fold shows
// the true one and the record stays as it was written.
func restore(r *Result, g *graph.State) *Result {
	if r.Output == nil {
		return r
	}
	if !r.Output.FromRecord {
		return explainBlocked(r, g)
	}
	out := g.Decide().Outcome
	if out == nil {
		return r
	}
	full := OutcomeResult(r.RunID, g, out).Output
	c := *r
	o := *r.Output
	o.Nodes, o.Passed, o.Failed, o.Errors, o.Paused = full.Nodes, full.Passed, full.Failed, full.Errors, full.Paused
	o.FromRecord = false
	c.Output = &o
	return &c
}

// explainBlocked returns r with its BLOCKED node errors replaced by
// UnfinishedError's, copying the output only when one differs.
func explainBlocked(r *Result, g *graph.State) *Result {
	var errs map[string]NodeError
	for id, e := range r.Output.Errors {
		if e.Code != CodeBlocked || e.Position != "" || g.Vertex(id) == nil {
			continue
		}
		if now := UnfinishedError(g, id); now != e {
			if errs == nil {
				errs = maps.Clone(r.Output.Errors)
			}
			errs[id] = now
		}
	}
	if errs == nil {
		return r
	}
	c, o := *r, *r.Output
	o.Errors = errs
	c.Output = &o
	return &c
}
