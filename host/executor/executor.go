package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// Options configures one execution of a stored run.
type Options struct {
	// Run is the open run record. Execute appends to it, so it must hold
	// the run's ownership then (store.ErrNotOwner otherwise); reading
	// (New, State, Finished) needs none.
	Run store.Record
	// Engines and Bindings are the run's launched plugins, by plugin name
	// (an engine's name is the adapter of the lane targets it serves).
	Engines  map[string]plugin.Engine
	Bindings map[string]plugin.NodeBinding
	// Logger receives progress; nil discards.
	Logger hclog.Logger
	// Start is the run's checked graph:run-started when the caller has
	// already loaded it (LoadRunStarted); nil loads it from Run.
	Start *plan.RunStarted
	// Fault injects crashes for tests; nil in production.
	Fault Fault
	// Probes gives preflight what it checks of each launched engine
	// plugin, by plugin name: its binary and health (see SetProbes).
	Probes map[string]PluginProbe
}

// Executor runs one stored run. Create it with New; call Execute once.
type Executor struct {
	o     Options
	start *plan.RunStarted
	def   *graph.Definition
	plan  *plan.Plan
	state *graph.State
	rev   int64
	log   hclog.Logger

	seq        map[string]int // last engine-attempt sequence per position
	retiredMu  sync.Mutex     // retired is read by attempt goroutines
	retired    []graph.RetiredTarget
	budgetStop bool
	finished   *graph.RunResult
	waiting    *graph.RunResult // set while the last event is graph:run-waiting
	pf         *PreflightFold   // preflight events folded (preflight_fold.go)

	ctx     context.Context // the run's context while Execute runs
	msgs    chan message
	fatal   chan error // an attempt found its plugin dead
	wg      sync.WaitGroup
	active  int
	loopEnd chan struct{}
}

// message is what an attempt goroutine hands to the loop: events to append
// and, when settle is set, the attempt is over.
type message struct {
	node     string // the attempt's node and position
	position string
	events   []store.NewEvent
	settle   bool
	ack      chan error
}

// LoadRunStarted reads and checks the run's first event.
func LoadRunStarted(ctx context.Context, run store.Record) (*plan.RunStarted, error) {
	var rs *plan.RunStarted
	stop := errors.New("stop")
	err := run.Read(ctx, 1, func(e store.Event) error {
		if e.Type != graph.EventRunStarted {
			return fmt.Errorf("%w: first event is %s", ErrNotStarted, e.Type)
		}
		rs = &plan.RunStarted{}
		if err := json.Unmarshal(e.Data, rs); err != nil {
			return fmt.Errorf("%w: %v", graph.ErrInvalidEvent, err)
		}
		return stop
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, err
	}
	if rs == nil {
		return nil, ErrNotStarted
	}
	if err := rs.Check(); err != nil {
		return nil, err
	}
	return rs, nil
}

// New folds the record of o.Run and returns an executor ready to carry the
// run on. It fails with graph.ErrInvalidEvent when the record does not
// replay (a dispatch differs from the graph's decision at its prefix).
func New(ctx context.Context, o Options) (*Executor, error) {
	rs := o.Start
	if rs == nil {
		var err error
		if rs, err = LoadRunStarted(ctx, o.Run); err != nil {
			return nil, err
		}
	}
	st, err := graph.New(rs.Definition)
	if err != nil {
		return nil, err
	}
	x := &Executor{
		o: o, start: rs, def: rs.Definition, plan: rs.Plan, state: st,
		log: o.Logger, seq: map[string]int{},
		msgs: make(chan message), loopEnd: make(chan struct{}), fatal: make(chan error, 1),
	}
	if x.log == nil {
		x.log = hclog.NewNullLogger()
	}
	err = x.o.Run.Read(ctx, 1, func(e store.Event) error {
		x.rev = e.Rev
		if e.Rev == 1 {
			return nil
		}
		if err := x.fold(e.Type, e.Data); err != nil {
			return fmt.Errorf("rev %d (%s): %w", e.Rev, e.Type, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}

// fold applies one event to the graph state and the executor's own
// bookkeeping (engine sequences, retired targets, dispatch count).
func (x *Executor) fold(typ string, data json.RawMessage) error {
	if err := x.state.Apply(typ, data); err != nil {
		return err
	}
	if err := x.foldPreflight(typ, data); err != nil {
		return err
	}
	switch typ {
	case graph.EventEngineAttempt:
		// Only the sequence matters here; the parts are left undecoded.
		var d struct {
			Position string `json:"position"`
			Sequence int    `json:"sequence"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("%w: %v", graph.ErrInvalidEvent, err)
		}
		if d.Sequence > x.seq[d.Position] {
			x.seq[d.Position] = d.Sequence
		}
	case graph.EventModelUnavailable:
		var d graph.ModelUnavailableData
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("%w: %v", graph.ErrInvalidEvent, err)
		}
		x.retiredMu.Lock()
		x.retired = append(x.retired, d.Retired...)
		x.retiredMu.Unlock()
	case graph.EventRunFinished:
		var d graph.RunResult
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("%w: %v", graph.ErrInvalidEvent, err)
		}
		x.finished = &d
	case graph.EventRunWaiting:
		var d graph.RunResult
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("%w: %v", graph.ErrInvalidEvent, err)
		}
		x.waiting = &d
		return nil
	case graph.EventRunResumed:
		x.finished = nil
	}
	x.waiting = nil
	return nil
}

// SetPlugins gives the executor the launched plugins, by plugin name.
func (x *Executor) SetPlugins(engines map[string]plugin.Engine, bindings map[string]plugin.NodeBinding) {
	x.o.Engines, x.o.Bindings = engines, bindings
}

// State returns the folded graph state (read-only use).
func (x *Executor) State() *graph.State { return x.state }

// Finished returns the recorded result when the run already ended.
func (x *Executor) Finished() *graph.RunResult { return x.finished }

// newEvent marshals data once, for both the record and the fold.
func newEvent(typ string, data any) (store.NewEvent, json.RawMessage) {
	b, err := json.Marshal(data)
	if err != nil {
		// Every event payload is a plain struct of ours.
		panic(fmt.Sprintf("marshal %s: %v", typ, err))
	}
	return store.NewEvent{Type: typ, Data: json.RawMessage(b)}, b
}

// batch collects events folded into the state and waiting to be appended.
type batch []store.NewEvent

// add records an event in the batch and folds it.
func (x *Executor) add(b *batch, typ string, data any) error {
	e, _ := newEvent(typ, data)
	return x.addEvent(b, e)
}

// addEvent folds an event made by newEvent (its Data is the marshalled
// json.RawMessage, folded as is) and records it in the batch.
func (x *Executor) addEvent(b *batch, e store.NewEvent) error {
	if err := x.fold(e.Type, e.Data.(json.RawMessage)); err != nil {
		return err
	}
	*b = append(*b, e)
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

// commit appends a batch with one conditional write.
func (x *Executor) commit(ctx context.Context, b batch) error {
	if len(b) == 0 {
		return nil
	}
	rev, err := x.o.Run.Append(ctx, x.rev, b...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	x.rev = rev
	return nil
}
