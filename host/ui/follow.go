package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/stream"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

// Live run pages get these server-sent events:
//   - "run": the whole RunView (a Snapshot), first, and again when a
//     page fell too far behind to be sent what changed;
//   - "change": what changed in the RunView (a Change, live.go),
//     whenever the fold changed (coalesced to one per tick);
//   - "timeline": recorded events (Entry, as a Timeline) not sent before;
//   - "output": lines of what the agents streamed (stream.Shown);
//   - "end": the run is over (watchdog.Over) and everything above has
//     been sent; the stream closes after it, and the page stops
//     listening (docs/decisions.md, "Following a run to its end").
//
// A "run" message is followed by "timeline" and "output" messages that
// carry everything kept so far: a page replaces what it shows with
// them.
const (
	// tick is how often a follower sends what changed.
	tick = 250 * time.Millisecond
	// holderCheck is how often a follower looks whether the run's
	// watchdog still lives: its death changes the phase (interrupted)
	// without a recorded event.
	holderCheck = 2 * time.Second
	// maxTimeline and maxOutput bound what a follower keeps for pages
	// that open later; `obversa events` and `obversa logs` show it all.
	maxTimeline = 2000
	maxOutput   = 2000
)

// follower follows one run's record and live output for every page that
// watches it: there is at most one per run (Server.followers), started by
// the first page and stopped when the last one leaves.
type follower struct {
	s       *Server
	id, dir string
	cancel  context.CancelFunc
	rec     *store.Run
	red     *store.Redactor
	// ended is closed when the record's follow returns because the run
	// is over; streamDone when the stream's follow has returned.
	ended, streamDone chan struct{}

	mu       sync.Mutex
	subs     map[*subscriber]struct{}
	st       *runstate.State
	live     bool
	timeline []Entry
	output   []stream.Shown
	lines    stream.Lines
	// newEntries and newOutput are what the next tick sends; dirty says
	// the fold changed since the last "run" message.
	newEntries []Entry
	newOutput  []stream.Shown
	dirty      bool
	view       *liveView // the view pages hold, and its version
	err        error
	// over is set once the "end" message was sent: pages that open
	// later get it with their first messages.
	over bool
}

// subscribe adds a page to run id's follower, starting it if no page
// watches the run yet, and returns the messages the page starts with.
func (s *Server) subscribe(ctx context.Context, id, dir string) (*follower, *subscriber, []message, error) {
	s.mu.Lock()
	f := s.followers[id]
	if f == nil {
		var err error
		if f, err = s.startFollower(ctx, id, dir); err != nil {
			s.mu.Unlock()
			return nil, nil, nil, err
		}
		s.followers[id] = f
		s.started++
	}
	sub := newSubscriber()
	sub.resync = func() []message { return f.resync(sub) }
	f.mu.Lock()
	f.subs[sub] = struct{}{}
	initial := f.initial()
	f.mu.Unlock()
	s.mu.Unlock()
	return f, sub, initial, nil
}

// unsubscribe removes a page; the last one stops the follower.
func (s *Server) unsubscribe(f *follower, sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.mu.Lock()
	delete(f.subs, sub)
	empty := len(f.subs) == 0
	f.mu.Unlock()
	if empty && s.followers[f.id] == f {
		delete(s.followers, f.id)
		f.cancel()
	}
}

// activeFollowers is how many runs have a follower now.
func (s *Server) activeFollowers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.followers)
}

// startFollower folds the run's record so far and starts following it and
// its live output.
func (s *Server) startFollower(ctx context.Context, id, dir string) (*follower, error) {
	if err := s.st.checkRunFiles(dir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	rec, err := store.OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		return nil, err
	}
	f := &follower{s: s, id: id, dir: dir, rec: rec, subs: map[*subscriber]struct{}{}, st: runstate.New(),
		ended: make(chan struct{}), streamDone: make(chan struct{})}
	if err := rec.Read(ctx, 1, f.apply); err != nil {
		rec.Close()
		return nil, err
	}
	if f.st.Start() == nil {
		rec.Close()
		return nil, fmt.Errorf("%w: run %s has an empty record", ErrNotFound, id)
	}
	f.red = redactorOf(f.st)
	f.live = holderAlive(ctx, rec)
	f.newEntries, f.dirty = nil, false
	f.view = newLiveView(f.build(), f.red)
	fctx, cancel := context.WithCancel(s.ctx)
	f.cancel = cancel
	go f.followRecord(fctx)
	go f.followStream(fctx)
	go f.ticker(fctx)
	return f, nil
}

// apply folds one recorded event and keeps it for the timeline.
func (f *follower) apply(e store.Event) error {
	if err := f.st.Apply(e); err != nil {
		return err
	}
	en := entryOf(e)
	f.timeline = appendCapped(f.timeline, en, maxTimeline)
	f.newEntries = append(f.newEntries, en)
	f.dirty = true
	return nil
}

// followRecord folds what the run records until the run is over
// (watchdog.Follow), then closes f.ended.
func (f *follower) followRecord(ctx context.Context) {
	defer f.rec.Close()
	err := watchdog.Follow(ctx, watchdog.DirRef(f.dir), f.rec, f.st.Rev()+1, f.st.Ending(), func(e store.Event) (runstate.Ending, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if err := f.apply(e); err != nil {
			return 0, err
		}
		return f.st.Ending(), nil
	})
	if err == nil {
		close(f.ended)
		return
	}
	if ctx.Err() == nil {
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
		f.s.o.Log.Printf("following run %s: %v", f.id, err)
	}
}

// streamLine takes one line of stream.jsonl (the caller holds f.mu, or
// the follower is not shared yet).
func (f *follower) streamLine(l stream.Line) error {
	for _, sh := range f.lines.Add(l) {
		f.output = appendCapped(f.output, sh, maxOutput)
		f.newOutput = append(f.newOutput, sh)
	}
	return nil
}

// followStream follows stream.jsonl from its beginning: what it holds
// already, then each line as the writer flushes it, until the run is
// over; then it closes f.streamDone.
func (f *follower) followStream(ctx context.Context) {
	defer close(f.streamDone)
	err := stream.FollowUntil(ctx, f.dir, f.ended, func(l stream.Line) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.streamLine(l)
	})
	if err != nil && ctx.Err() == nil {
		f.s.o.Log.Printf("following the output of run %s: %v", f.id, err)
	}
}

// ticker sends, once per tick, what changed: a fresh "run" message when
// the fold changed or the watchdog came or went, and the new timeline
// entries and output lines; once the run is over and both follows have
// returned, what is left and "end", and it stops.
func (f *follower) ticker(ctx context.Context) {
	t := time.NewTicker(tick)
	defer t.Stop()
	lastCheck := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		last := closed(f.ended) && closed(f.streamDone)
		live := f.live
		if last {
			live = false // the run is over: nothing holds it any more
		} else if time.Since(lastCheck) >= holderCheck {
			live, lastCheck = holderAlive(ctx, f.rec), time.Now()
		}
		f.mu.Lock()
		var out []message
		if f.dirty || live != f.live {
			f.live, f.dirty = live, false
			if c := f.view.update(f.build()); c != nil {
				out = append(out, message{"change", c})
			}
		}
		if len(f.newEntries) > 0 {
			out = append(out, message{"timeline", f.redactJSON(compactTimeline(f.newEntries))})
			f.newEntries = nil
		}
		if len(f.newOutput) > 0 {
			out = append(out, message{"output", f.redactJSON(f.newOutput)})
			f.newOutput = nil
		}
		if last {
			f.over = true
			out = append(out, endMessage)
		}
		f.publish(out)
		f.mu.Unlock()
		if last {
			return
		}
	}
}

// endMessage tells a page that the run is over and nothing follows.
var endMessage = message{"end", []byte("{}")}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// publish queues out for every page (the caller holds f.mu). A page
// whose queue is full is sent nothing more until it has been sent a
// snapshot again (resync): it never gets a change it cannot apply.
func (f *follower) publish(out []message) {
	if len(out) == 0 {
		return
	}
	for sub := range f.subs {
		if sub.lagging {
			continue
		}
		for _, m := range out {
			if !sub.send(m) {
				sub.fallBehind()
				break
			}
		}
	}
}

// resync is what a page that fell behind is sent instead of what it
// missed: what is queued for it is dropped and it starts again from
// initial.
func (f *follower) resync(sub *subscriber) []message {
	f.mu.Lock()
	defer f.mu.Unlock()
	sub.drain()
	sub.lagging = false
	return f.initial()
}

// initial is what a page starts with: the view, the timeline and the
// output as the last tick sent them, and "end" when the run is over (the
// caller holds f.mu). What was folded or read since is the next tick's
// to send, to this page as to the others: given here too, the page would
// get it twice.
func (f *follower) initial() []message {
	timeline := f.timeline[:len(f.timeline)-min(len(f.newEntries), len(f.timeline))]
	output := f.output[:len(f.output)-min(len(f.newOutput), len(f.output))]
	m := []message{{"run", f.view.snapshot()}, {"timeline", f.redactJSON(compactTimeline(timeline))}, {"output", f.redactJSON(output)}}
	if f.over {
		m = append(m, endMessage)
	}
	return m
}

// build is the current RunView (the caller holds f.mu).
func (f *follower) build() RunView {
	return buildView(f.st, f.dir, time.Now(), f.live, f.s.o.ReadOnly)
}

func (f *follower) redactJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	if b == nil || string(b) == "null" {
		b = []byte("[]")
	}
	return f.red.Redact(b)
}

// holderAlive says whether a live owner holds the run, by the rule every
// command uses (watchdog.Ref.Owner).
func holderAlive(ctx context.Context, rec *store.Run) bool {
	o, err := watchdog.DirRef(rec.Dir()).Owner(ctx, rec)
	return err == nil && o.Live
}

// appendCapped appends v, dropping the oldest elements past max.
func appendCapped[T any](s []T, v T, max int) []T {
	s = append(s, v)
	if len(s) > max {
		s = append(s[:0:0], s[len(s)-max:]...)
	}
	return s
}
