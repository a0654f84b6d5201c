package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// Fault is why a worker stopped that no restart can mend: the record could
// not be written or read (a full device, an I/O error), or artifacts the
// run needs are missing from it or damaged; or, the one a restart mends
// (Restarts), that a plugin died under an attempt (ReportOf). Nothing is decided from it in
// the worker; the watchdog records it as the run's pause once the worker
// is gone (docs/decisions.md, "Storage faults pause the run"). It travels
// from the worker to its watchdog as JSON.
type Fault struct {
	// Code is the pause's code: STORAGE_FULL, RUN_STORAGE,
	// ARTIFACT_NOT_FOUND or ARTIFACT_INTEGRITY.
	Code string `json:"code"`
	// Message says what failed and what to do, naming the path or the
	// digests.
	Message string `json:"message"`
	// Problem is what failed, without the advice: the start of Message
	// for storage codes ("the run's record could not write P: no space
	// left on device").
	Problem string `json:"problem,omitempty"`
	// Path is the file the record could not write or read (storage codes).
	Path string `json:"path,omitempty"`
	// Artifacts are the artifacts the run needs that the record cannot
	// give back (artifact codes).
	Artifacts []runstate.ArtifactProblem `json:"artifacts,omitempty"`
	// Position is, for PLUGIN_DIED, the position whose attempt the
	// plugin died under ("" for other codes).
	Position string `json:"position,omitempty"`

	err error
}

// Error returns the message.
func (f *Fault) Error() string { return f.Message }

// Unwrap returns the store's error the fault was made from, if any.
func (f *Fault) Unwrap() error { return f.err }

// Result returns the pause the fault stands for.
func (f *Fault) Result(runID string) *runstate.Result {
	res := runstate.Message(runID, runstate.KindPaused, f.Code, f.Message)
	res.Output.Path, res.Output.Artifacts = f.Path, f.Artifacts
	return res
}

// FaultOf returns the fault err stands for, or nil when it is none: a
// *Fault as it is, a storage error of the record (*store.StorageError,
// store.ErrStoreFailed) as STORAGE_FULL when the device or quota was full
// and RUN_STORAGE otherwise, naming the path.
func FaultOf(err error) *Fault {
	var f *Fault
	if errors.As(err, &f) {
		return f
	}
	var se *store.StorageError
	if !errors.As(err, &se) && !errors.Is(err, store.ErrStoreFailed) {
		return nil
	}
	f = &Fault{Code: runstate.CodeRunStorage, err: err}
	if errors.Is(err, store.ErrStorageFull) {
		f.Code = runstate.CodeStorageFull
	}
	// The problem is said once, from its parts: the wrapping errors'
	// text would repeat the code and the path.
	f.Problem = fmt.Sprintf("the run's record could not be written or read (%v)", err)
	if se != nil {
		f.Path = se.Path
		cause := se.Err
		var pe *fs.PathError
		if errors.As(cause, &pe) && pe.Path == se.Path {
			cause = pe.Err
		}
		f.Problem = fmt.Sprintf("the run's record could not %s %s: %v", se.Op, se.Path, cause)
	}
	hint := "fix the storage, then carry the run on with `obversa resume`"
	switch {
	case f.Code == runstate.CodeStorageFull:
		hint = "free space on that file system, then carry the run on with `obversa resume`"
	case errors.Is(err, store.ErrUnavailable):
		hint = "once the database is back, carry the run on with `obversa resume`"
	}
	f.Message = f.Problem + "; " + hint
	return f
}

// isFault reports whether err is one the record cannot mend by a node's
// failure: a storage error or missing or damaged artifacts. The policy's
// refusals (a limit, a known secret) are not: they are the node's.
func isFault(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, store.ErrStorageLimitExceeded) || errors.Is(err, store.ErrKnownSecret) {
		return false
	}
	return FaultOf(err) != nil || errors.Is(err, store.ErrArtifactNotFound) || errors.Is(err, store.ErrArtifactIntegrity)
}

// codeFault is what render returns when the record, not the node, is at
// fault; it is never recorded.
const codeFault = "fault"

// stop ends the run's loop with err, as when a plugin dies under an
// attempt: the attempt settles nothing and stays started in the record.
func (x *Executor) stop(err error) {
	select {
	case x.fatal <- err:
	default:
	}
}

// checkInputs reads back every artifact that holds the result of a passed
// node a node yet to pass may read, before anything is dispatched: a
// missing or damaged one is an *Fault naming every such artifact
// (ARTIFACT_NOT_FOUND when one is missing, else ARTIFACT_INTEGRITY, or
// the storage code when the record could not be read), so that a paused
// run whose artifacts were deleted pauses again instead of failing its
// nodes INPUT_RENDER.
func (x *Executor) checkInputs(ctx context.Context) error {
	g := x.rs.Graph()
	if !x.resultArtifacts() {
		// Nothing to read back: listing every node's upstream would cost
		// the square of a chain's length before the first dispatch.
		return nil
	}
	need := map[string]string{} // digest → node
	refs := map[string]graph.ArtifactRef{}
	for _, n := range g.Nodes() {
		if n.Status == graph.StatusPassed {
			continue
		}
		for _, dep := range x.upstreamIDs(g.Vertex(n.Vertex).Def) {
			d := g.Node(dep)
			if d != nil && d.Status == graph.StatusPassed && d.ResultArtifact != nil {
				need[d.ResultArtifact.Digest], refs[d.ResultArtifact.Digest] = dep, *d.ResultArtifact
			}
		}
	}
	var problems []runstate.ArtifactProblem
	var cause error
	for digest, node := range need {
		_, err := x.o.Run.ReadArtifact(ctx, store.ArtifactRef(refs[digest]))
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if cause == nil {
			cause = err
		}
		problems = append(problems, runstate.ArtifactProblem{Digest: digest, Node: node, Problem: err.Error()})
	}
	if len(problems) == 0 {
		return nil
	}
	return artifactFault(problems, cause)
}

// resultArtifacts reports whether a vertex passed with its result kept
// as an artifact: only such a result is read back by checkInputs.
func (x *Executor) resultArtifacts() bool {
	g := x.rs.Graph()
	for _, v := range x.def.Nodes {
		if d := g.Node(v.ID); d != nil && d.Status == graph.StatusPassed && d.ResultArtifact != nil {
			return true
		}
	}
	return false
}

// artifactFault is the fault of artifacts the run needs and cannot read.
func artifactFault(problems []runstate.ArtifactProblem, cause error) *Fault {
	sort.Slice(problems, func(i, j int) bool { return problems[i].Digest < problems[j].Digest })
	code := runstate.CodeArtifactIntegrity
	for _, p := range problems {
		if strings.HasPrefix(p.Problem, runstate.CodeArtifactNotFound) {
			code = runstate.CodeArtifactNotFound
		}
	}
	if f := FaultOf(cause); f != nil && !errors.Is(cause, store.ErrArtifactNotFound) && !errors.Is(cause, store.ErrArtifactIntegrity) {
		code = f.Code
	}
	var names []string
	for _, p := range problems {
		names = append(names, fmt.Sprintf("%s (result of %q)", p.Digest, p.Node))
	}
	return &Fault{Code: code, Artifacts: problems, err: cause, Message: fmt.Sprintf(
		"the record cannot give back %d artifacts the run needs: %s; restore them under the run's artifacts/ directory (obversa verify lists what is damaged), then carry the run on with `obversa resume`",
		len(problems), strings.Join(names, ", "))}
}

// SetUnlaunched tells the executor which of the plan's plugins did not
// start in this worker, by plugin name, with why. Preflight sees an
// engine among them fail its health check with that cause (a
// PREFLIGHT_PAUSED pause); past preflight, Execute records a
// PLUGIN_START_FAILED pause naming them before anything is dispatched
// (docs/decisions.md, "A plugin that does not start in the worker").
func (x *Executor) SetUnlaunched(failed map[string]error) { x.o.Unlaunched = failed }

// pauseUnlaunched records graph:run-waiting PLUGIN_START_FAILED when a
// plugin did not start in this worker, quoting each cause, and returns
// that result; nil, nil when every plugin started.
func (x *Executor) pauseUnlaunched(ctx context.Context) (*runstate.Result, error) {
	if len(x.o.Unlaunched) == 0 {
		return nil, nil
	}
	var names, causes []string
	for name := range x.o.Unlaunched {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		causes = append(causes, x.o.Unlaunched[name].Error())
	}
	res := runstate.Message(x.plan.RunID, runstate.KindPaused, runstate.CodePluginStartFailed, fmt.Sprintf(
		"%d plugins did not start in the worker: %s; fix the cause, then carry the run on with `obversa resume` (plugins.log and worker.log hold the rest)",
		len(names), strings.Join(causes, "; ")))
	res.Output.Plugins = names
	return x.recordResult(ctx, nil, graph.EventRunWaiting, res)
}
