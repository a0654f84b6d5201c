package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/stream"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/confine"
	"github.com/obversa/obversa/store"
)

// Options configures one execution of a stored run.
type Options struct {
	// Run is the open run record. Execute appends to it, so this process
	// must own the run (the worker; store.ErrNotOwner otherwise).
	Run store.Record
	// State is the record folded up to its current revision
	// (runstate.Load); the executor keeps folding into it and appends
	// only at the revision it folded.
	State *runstate.State
	// Engines and Bindings are the run's launched plugins, by plugin name
	// (an engine's name is the adapter of the lane targets it serves).
	Engines  map[string]plugin.Engine
	Bindings map[string]plugin.NodeBinding
	// Policies are the run's policy plugins, by plugin name; the plan's
	// policy list says which are asked, in order (docs/policies.md).
	Policies map[string]plugin.Policy
	// Redactor finds the run's known secrets in a rendered prompt or
	// input, which then fails the node KNOWN_SECRET before any policy or
	// plugin sees it; nil checks nothing.
	Redactor *store.Redactor
	// Unlaunched are the plan's plugins that did not start in this
	// worker, by plugin name, with why (see SetUnlaunched).
	Unlaunched map[string]error
	// Logger receives progress; nil discards.
	Logger hclog.Logger
	// Probes gives preflight what it checks of each launched engine
	// plugin, by plugin name: its binary and health (see SetProbes).
	Probes map[string]PluginProbe
	// Requests is where operators leave approval requests for a live
	// run; nil takes none (see Requests).
	Requests Requests
	// Stream receives each engine call's streamed events (text, thinking,
	// tool use and results, usage) for stream.jsonl beside the record;
	// nil discards them. It is display only: nothing is decided from it.
	Stream *stream.Writer
	// Memory tells whether a plugin's process was ended by the kernel's
	// OOM killer under its memory limit (launch.Set); nil = never.
	Memory MemoryWatch
}

// MemoryWatch tells, after a plugin call failed, whether the kernel's OOM
// killer ended a process of the plugin while the call ran, and the
// plugin's memory limit in bytes (launch.Set): OOMMark is taken before
// the call, OOMKilledSince asked only after it failed. A kill is told to
// every call in flight when it happened, not only the first to ask: the
// plugin's processes share one memory group, so any of them may have been
// the one killed.
type MemoryWatch interface {
	OOMMark(plugin string) uint64
	OOMKilledSince(plugin string, mark uint64) (limitBytes int64, killed bool)
}

// Executor runs one stored run. Create it with New; call Execute once.
type Executor struct {
	o    Options
	rs   *runstate.State
	def  *graph.Definition
	plan *plan.Plan
	rev  int64
	log  hclog.Logger

	// budgetStop names the budget that stopped dispatching (budget.go);
	// "" while none has.
	budgetStop string
	// undecided says that the last decide stopped before the graph had
	// nothing more to dispatch, its batch being full (dispatch.go): the
	// loop decides again into a new batch before it waits.
	undecided bool
	// questions are the policy questions askAll answered for the
	// positions of the decision being recorded, by position.
	questions map[string]*question
	// items caches each dynamic for_each's rendered items (each.value)
	// by node and key, for the worker's life.
	items map[string]map[string]json.RawMessage

	ctx     context.Context // the run's context while Execute runs
	msgs    chan message
	fatal   chan error // an attempt found its plugin dead
	wg      sync.WaitGroup
	active  int
	loopEnd chan struct{}
	// idle hands an attempt to an attempt goroutine waiting for one
	// (launch).
	idle chan launched
	// ownSettle is the settle of the attempt the loop ran itself
	// (runOwn) while owned is set; ownErr is why an append that attempt
	// made failed, which ends the loop as it would end it for a message
	// an attempt goroutine handed over.
	ownSettle message
	owned     bool
	ownErr    error
}

// message is what an attempt goroutine hands to the loop: events to append
// and, when settle is set, the attempt is over. ack, when not nil, is told
// the outcome of the append (a settle has none: settle).
type message struct {
	node     string // the attempt's node and position
	position string
	events   []event
	settle   bool
	ack      chan error
}

// event is an event to record with its typed data, so that folding it
// needs no decoding.
type event struct {
	store.NewEvent
	v any
}

// New returns an executor that carries on the run whose record o.State
// has folded. It reads nothing: the caller folded the record
// (runstate.Load), and the executor's appends are conditional on the
// revision of that fold.
func New(o Options) (*Executor, error) {
	if o.State == nil || o.State.Start() == nil {
		return nil, runstate.ErrNotStarted
	}
	rs := o.State
	x := &Executor{
		o: o, rs: rs, def: rs.Start().Definition, plan: rs.Plan(), rev: rs.Rev(),
		log: o.Logger, items: map[string]map[string]json.RawMessage{},
		msgs: make(chan message), loopEnd: make(chan struct{}), fatal: make(chan error, 1),
		idle: make(chan launched),
	}
	if x.log == nil {
		x.log = hclog.NewNullLogger()
	}
	return x, nil
}

// SetPlugins gives the executor the launched plugins, by plugin name.
func (x *Executor) SetPlugins(engines map[string]plugin.Engine, bindings map[string]plugin.NodeBinding) {
	x.o.Engines, x.o.Bindings = engines, bindings
}

// SetPolicies gives the executor the launched policy plugins, by plugin
// name.
func (x *Executor) SetPolicies(policies map[string]plugin.Policy) { x.o.Policies = policies }

// SetMemoryWatch gives the executor what tells an out-of-memory kill of
// a plugin's process (Options.Memory).
func (x *Executor) SetMemoryWatch(m MemoryWatch) { x.o.Memory = m }

// oomMark is the MemoryWatch mark to take before a call to plugin name.
func (x *Executor) oomMark(name string) uint64 {
	if x.o.Memory == nil {
		return 0
	}
	return x.o.Memory.OOMMark(name)
}

// outOfMemory returns the message of an OUT_OF_MEMORY failure when the
// kernel's OOM killer ended a process of plugin name under its memory
// limit since mark (oomMark, taken before the call); "" otherwise. It is
// asked only after a call failed.
func (x *Executor) outOfMemory(name string, mark uint64, err error) string {
	if x.o.Memory == nil {
		return ""
	}
	limit, killed := x.o.Memory.OOMKilledSince(name, mark)
	if !killed {
		return ""
	}
	return fmt.Sprintf("plugin %q exceeded its memory limit of %s (confine.memory): the kernel's OOM killer ended one of its processes: %v", name, confine.FormatBytes(limit), err)
}

// newEvent marshals data once, for both the record and the fold: the
// events every node records by hand in their canonical form
// (eventjson.go), anything else with encoding/json.
func newEvent(typ string, data any) event {
	if b := scratch(func(b []byte) ([]byte, bool) { return appendData(b, data) }); b != nil {
		return event{NewEvent: store.NewEvent{Type: typ, Data: json.RawMessage(b)}, v: data}
	}
	b, err := marshal(data)
	if err != nil {
		// Every event payload is a plain struct of ours.
		panic(fmt.Sprintf("marshal %s: %v", typ, err))
	}
	return event{NewEvent: store.NewEvent{Type: typ, Data: json.RawMessage(b)}, v: data}
}

// marshal is json.Marshal without escaping '<', '>' and '&' for HTML:
// the record keeps RFC 8785 canonical JSON, which does not escape them,
// and text already in that form needs no canonicalising pass of the
// store (an escaped character sends the whole event through it).
func marshal(v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))), nil
}

// encoder marshals into a reused buffer.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// batch collects events folded into the state and waiting to be appended.
type batch []store.NewEvent

// add records an event in the batch and folds it.
func (x *Executor) add(b *batch, typ string, data any) error {
	return x.addEvent(b, newEvent(typ, data))
}

// addEvent folds an event made by newEvent and records it in the batch.
func (x *Executor) addEvent(b *batch, e event) error {
	if err := x.rs.Fold(e.Type, e.v, e.Data.(json.RawMessage)); err != nil {
		return err
	}
	*b = append(*b, e.NewEvent)
	return nil
}

// eventOverhead is the room kept for an event's other fields when deciding
// whether a value (a result, parts, an output) fits max_event_payload_bytes.
const eventOverhead = 1024

// fitsEvent reports whether a value of n bytes may travel inside an event;
// a larger one becomes an artifact.
func (x *Executor) fitsEvent(n int) bool {
	limit := x.plan.Storage.MaxEventPayloadBytes
	return limit <= 0 || int64(n)+eventOverhead <= limit
}

// commit appends a batch with one write, conditional on the revision the
// executor folded: nothing else appends while a worker owns the run, so a
// conflict means the single-writer rule was broken and the worker stops.
func (x *Executor) commit(ctx context.Context, b batch) error {
	if len(b) == 0 {
		return nil
	}
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.BeforeAppend, b[0].Type)
	}
	rev, err := x.o.Run.Append(ctx, x.rev, b...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	x.rev = rev
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.AfterAppend, b[0].Type)
		loopPoints(ctx, b)
	}
	return nil
}

// loopPoints hits the failpoints of the loop steps a durable batch holds.
func loopPoints(ctx context.Context, b batch) {
	for _, e := range b {
		point := map[string]string{graph.EventLoopReviewed: failpoint.AfterReview, graph.EventRoundStarted: failpoint.AfterRound}[e.Type]
		if point == "" {
			continue
		}
		var d struct {
			Loop string `json:"loop"`
		}
		if raw, ok := e.Data.(json.RawMessage); ok && json.Unmarshal(raw, &d) == nil {
			failpoint.Hit(ctx, point, d.Loop)
		}
	}
}

// crashPoint makes what b holds durable and hits a failpoint (only in a
// binary built with the failpoints tag): a crash test stops the process
// exactly there. Unless the point is armed it does nothing, so that the
// batch stays whole and is appended, or refused, where a release build
// appends it (a refused result is the node's failure only there:
// handleGroup).
func (x *Executor) crashPoint(ctx context.Context, b *batch, point, key string) error {
	if !failpoint.Armed(ctx, point, key) {
		return nil
	}
	if b != nil {
		if err := x.commit(ctx, *b); err != nil {
			return err
		}
		*b = nil
	}
	failpoint.Hit(ctx, point, key)
	return nil
}
