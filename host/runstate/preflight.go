package runstate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
)

// Preflight event types (docs/architecture.md#the-executor "Preflight"). They are recorded before
// any node is dispatched; graph.State ignores them.
const (
	// EventProbeStarted is durable before its check runs.
	EventProbeStarted = "preflight:probe-started"
	// EventProbeFinished closes a probe with its outcome.
	EventProbeFinished = "preflight:probe-finished"
	// EventPreflightPaused stops the run before dispatch; its event id
	// (PausePrefix + n) is what `obversa resume --preflight` names.
	EventPreflightPaused = "preflight:paused"
	// EventPreflightFailed records that a lane has no admissible target.
	EventPreflightFailed = "preflight:failed"
	// EventPreflightAdmitted records the target admitted for every lane;
	// dispatch may start after it.
	EventPreflightAdmitted = "preflight:admitted"
	// EventPreflightResumed answers a preflight pause: the next worker
	// runs the checks again.
	EventPreflightResumed = "preflight:resumed"
)

// Preflight checks, in the order each lane target goes through them.
const (
	CheckDigest = "digest" // the launched binary's SHA-256 equals the plan's
	CheckHealth = "health" // grpc.health.v1 Check("plugin") answers SERVING
	CheckStatic = "static" // Engine.Admit, no model call
	CheckLive   = "live"   // one tool-free Run with purpose PREFLIGHT
)

// Probe outcomes recorded in preflight:probe-finished.
const (
	OutcomePassed      = "passed"
	OutcomeFailed      = "failed"
	OutcomeUnsupported = "unsupported" // the engine cannot check the target statically
	OutcomeDisallowed  = "disallowed"  // Admit selected an identity the lane does not allow
	OutcomeInterrupted = "interrupted" // closed by `obversa preflight interrupt`
)

// Preflight phases as status reports them.
const (
	PreflightDisabled = "disabled" // the plan has no preflight policy
	PreflightPending  = "pending"  // not decided yet (or a probe is open)
	PreflightAdmitted = "admitted"
	PreflightPaused   = "paused"
	PreflightFailed   = "failed"
)

// Run outcome codes of preflight (docs/cli.md#output-and-exit-status).
const (
	CodePreflightPaused = "PREFLIGHT_PAUSED"
	CodePreflightFailed = "PREFLIGHT_FAILED"
	// CodeProtocol is the code of a start refused because a probe was left
	// open by a crash.
	CodeProtocol = "PROTOCOL"
)

// Preflight event id prefixes. Ids are numbered from 1 in record order,
// so every process that folds the record derives the same ones.
const (
	ProbePrefix = "probe-"
	PausePrefix = "preflight-pause-"
)

// ProbeStartedData is the data of preflight:probe-started.
type ProbeStartedData struct {
	Lane    string          `json:"lane"`
	Target  plugin.Identity `json:"target"`
	Check   string          `json:"check"`
	ProbeID string          `json:"probe_id"`
}

// ProbeFinishedData is the data of preflight:probe-finished. Selection is
// the identity a passed static check selected; Usage is set for live
// probes only (unknown when the engine reported none or the call failed).
type ProbeFinishedData struct {
	ProbeID     string           `json:"probe_id"`
	Outcome     string           `json:"outcome"`
	Detail      string           `json:"detail,omitempty"`
	FailureKind string           `json:"failure_kind,omitempty"`
	Selection   *plugin.Identity `json:"selection,omitempty"`
	Usage       *plugin.Usage    `json:"usage,omitempty"`
}

// PreflightPausedData is the data of preflight:paused. Reason is
// "interrupted" when `obversa preflight interrupt` recorded it.
type PreflightPausedData struct {
	Reason  string `json:"reason"`
	ProbeID string `json:"probe_id,omitempty"`
	Lane    string `json:"lane,omitempty"`
	Check   string `json:"check,omitempty"`
}

// ReasonInterrupted is the reason of a pause recorded by
// Executor.InterruptPreflight.
const ReasonInterrupted = "interrupted"

// PreflightFailedData is the data of preflight:failed.
type PreflightFailedData struct {
	Lanes   []string `json:"lanes"`
	Message string   `json:"message"`
}

// AdmittedLane is one lane's entry in preflight:admitted: the target its
// nodes start with, how the static check ended ("passed", or "unsupported"
// under unsupported_static = "allow"), and the live receipt used, if any.
type AdmittedLane struct {
	Target plugin.Identity `json:"target"`
	Static string          `json:"static"`
	// LiveProbe is the probe id of the passed live call; empty when the
	// lane's live policy is "skip".
	LiveProbe string `json:"live_probe,omitempty"`
	// LiveReused reports that LiveProbe is a receipt from an earlier
	// preflight round of the run.
	LiveReused bool `json:"live_reused,omitempty"`
}

// BlockedTarget is a target preflight withheld from the run: its static
// check was unsupported under unsupported_static = "block", or selected an
// identity the lane does not allow.
type BlockedTarget struct {
	Lane   string          `json:"lane"`
	Target plugin.Identity `json:"target"`
	Reason string          `json:"reason"`
}

// PreflightAdmittedData is the data of preflight:admitted.
type PreflightAdmittedData struct {
	Lanes   map[string]AdmittedLane `json:"lanes"`
	Blocked []BlockedTarget         `json:"blocked,omitempty"`
}

// PreflightResumedData is the data of preflight:resumed.
type PreflightResumedData struct {
	PreflightEventID string `json:"preflight_event_id"`
}

// receipt is a passed live probe and the static selection it was made
// under.
type receipt struct {
	probe     string
	selection *plugin.Identity
}

// PreflightFold folds the preflight events of one run's record; it is part
// of State. The zero value is not usable: create it with NewPreflightFold.
type PreflightFold struct {
	enabled   bool
	probes    map[string]ProbeStartedData // every started probe
	open      []string                    // started, not finished, in order
	finished  int
	pauses    int
	pause     string // the open pause's event id
	reason    string // its reason
	lastPause string // the latest pause's event id, open or not
	admitted  *PreflightAdmittedData
	failed    *PreflightFailedData
	selection map[string]*plugin.Identity // lane+target → last static selection
	receipts  map[string]receipt          // lane+target → last passed live probe
	liveSeen  bool
	usage     plugin.Usage // live probes' total; Known false once one is unknown
}

// NewPreflightFold returns the fold of a run whose policy is p (nil: the
// plan has none, the phase is "disabled").
func NewPreflightFold(p *plan.Preflight) *PreflightFold {
	return &PreflightFold{enabled: p != nil, probes: map[string]ProbeStartedData{},
		selection: map[string]*plugin.Identity{}, receipts: map[string]receipt{}, usage: plugin.Usage{Known: true}}
}

// Apply folds one event; other types are ignored. An event that does not
// decode, or a finish for a probe that is not open, returns an error
// wrapping graph.ErrInvalidEvent.
func (f *PreflightFold) Apply(typ string, data json.RawMessage) error {
	switch typ {
	case EventProbeStarted:
		var d ProbeStartedData
		if err := decode(data, &d); err != nil {
			return err
		}
		if _, dup := f.probes[d.ProbeID]; dup || d.ProbeID == "" {
			return fmt.Errorf("%w: probe id %q is empty or already used", graph.ErrInvalidEvent, d.ProbeID)
		}
		f.probes[d.ProbeID] = d
		f.open = append(f.open, d.ProbeID)
	case EventProbeFinished:
		var d ProbeFinishedData
		if err := decode(data, &d); err != nil {
			return err
		}
		i := slices.Index(f.open, d.ProbeID)
		if i < 0 {
			return fmt.Errorf("%w: probe %q finished but is not open", graph.ErrInvalidEvent, d.ProbeID)
		}
		f.open = slices.Delete(f.open, i, i+1)
		f.finished++
		f.finish(f.probes[d.ProbeID], d)
	case EventPreflightPaused:
		var d PreflightPausedData
		if err := decode(data, &d); err != nil {
			return err
		}
		f.pauses++
		f.pause, f.reason = f.PauseID(f.pauses), d.Reason
		f.lastPause = f.pause
	case EventPreflightResumed:
		var d PreflightResumedData
		if err := decode(data, &d); err != nil {
			return err
		}
		f.pause, f.reason = "", ""
	case EventPreflightAdmitted:
		var d PreflightAdmittedData
		if err := decode(data, &d); err != nil {
			return err
		}
		f.admitted = &d
	case EventPreflightFailed:
		var d PreflightFailedData
		if err := decode(data, &d); err != nil {
			return err
		}
		f.failed = &d
	}
	return nil
}

// finish keeps what later rounds need of a finished probe: the static
// selection and live receipts (docs/architecture.md#the-executor: a resume reuses live receipts
// that still apply), and the live probes' usage total.
func (f *PreflightFold) finish(s ProbeStartedData, d ProbeFinishedData) {
	key := TargetKey(s.Lane, s.Target)
	switch s.Check {
	case CheckStatic:
		switch d.Outcome {
		case OutcomePassed, OutcomeUnsupported:
			f.selection[key] = d.Selection
		default:
			delete(f.selection, key)
		}
	case CheckLive:
		f.liveSeen = true
		u := plugin.Usage{}
		if d.Usage != nil {
			u = *d.Usage
		}
		f.usage = SumUsage(f.usage, u)
		if d.Outcome == OutcomePassed {
			f.receipts[key] = receipt{probe: d.ProbeID, selection: f.selection[key]}
		} else {
			delete(f.receipts, key)
		}
	}
}

// PauseID returns the event id of the run's n-th preflight pause (1-based).
func (f *PreflightFold) PauseID(n int) string { return PausePrefix + strconv.Itoa(n) }

// NextPauseID returns the event id the next preflight:paused takes.
func (f *PreflightFold) NextPauseID() string { return f.PauseID(f.pauses + 1) }

// NextProbeID returns the id the next probe-started takes.
func (f *PreflightFold) NextProbeID() string { return ProbePrefix + strconv.Itoa(len(f.probes)+1) }

// Enabled reports whether the plan has a preflight policy.
func (f *PreflightFold) Enabled() bool { return f.enabled }

// Admitted returns the recorded preflight:admitted, or nil.
func (f *PreflightFold) Admitted() *PreflightAdmittedData { return f.admitted }

// Failed returns the recorded preflight:failed, or nil.
func (f *PreflightFold) Failed() *PreflightFailedData { return f.failed }

// OpenPause returns the event id and reason of the preflight pause no
// preflight:resumed has answered yet; id is empty when there is none.
func (f *PreflightFold) OpenPause() (id, reason string) { return f.pause, f.reason }

// Open returns the probes started and not finished, in record order.
func (f *PreflightFold) Open() []ProbeStartedData {
	out := make([]ProbeStartedData, 0, len(f.open))
	for _, id := range f.open {
		out = append(out, f.probes[id])
	}
	return out
}

// ReceiptFor returns the live receipt of a lane target that still applies:
// a passed live probe made under the same static selection as the one the
// current round recorded.
func (f *PreflightFold) ReceiptFor(lane string, t plugin.Identity) (string, bool) {
	key := TargetKey(lane, t)
	r, ok := f.receipts[key]
	if !ok {
		return "", false
	}
	if !sameSelection(r.selection, f.selection[key]) {
		return "", false
	}
	return r.probe, true
}

func decode(data json.RawMessage, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %v", graph.ErrInvalidEvent, err)
	}
	return nil
}

// TargetName is the short form of an identity used in messages:
// adapter/provider/model_family/model, "?" for an unknown part.
func TargetName(t plugin.Identity) string {
	parts := []string{t.Adapter, t.Provider, t.ModelFamily, t.Model}
	for i, p := range parts {
		if p == "" {
			parts[i] = "?"
		}
	}
	return strings.Join(parts, "/")
}

// TargetKey identifies a lane target, tools included.
func TargetKey(lane string, t plugin.Identity) string {
	tools := slices.Clone(t.Tools)
	slices.Sort(tools)
	return lane + "\x00" + TargetName(t) + "\x00" + strings.Join(tools, ",")
}

// sameSelection compares two optional selections.
func sameSelection(a, b *plugin.Identity) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return SameIdentity(*a, *b)
}

// SameIdentity compares identities, tools as sets.
func SameIdentity(a, b plugin.Identity) bool {
	ta, tb := slices.Clone(a.Tools), slices.Clone(b.Tools)
	slices.Sort(ta)
	slices.Sort(tb)
	return a.Adapter == b.Adapter && a.Provider == b.Provider && a.ModelFamily == b.ModelFamily &&
		a.Model == b.Model && slices.Equal(ta, tb)
}

// LaneAllows reports whether sel, the identity a selection or an answer
// names, is the target t itself or one of the lane's known
// substitutions: provider, model family, model and tools as a set (the
// adapter is the engine's own business and is not compared;
// docs/preflight.md, "Allowed selections").
func LaneAllows(substitutions []plugin.Identity, t, sel plugin.Identity) bool {
	same := func(a, b plugin.Identity) bool {
		a.Adapter, b.Adapter = "", ""
		return SameIdentity(a, b)
	}
	if same(sel, t) {
		return true
	}
	for _, s := range substitutions {
		if same(sel, s) {
			return true
		}
	}
	return false
}
