package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/store"
)

// RunsList is the runs page's data (GET /api/runs, and the "runs"
// server-sent event): every run of the storage newest first, and those
// whose record cannot be read.
type RunsList struct {
	Runs   []runview.Summary `json:"runs"`
	Broken []runview.Broken  `json:"broken"`
	// Phases are the phases a run can be in, for the filter.
	Phases []string `json:"phases"`
}

// listPoll is how often the runs poller looks at the storage while a
// runs page is open.
const listPoll = time.Second

// runsWatcher keeps the runs list for every runs page: one poller while
// any page is open, folding only the records that grew since it last
// looked (a finished run that did not change is not read again).
type runsWatcher struct {
	s *Server

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	cancel  context.CancelFunc
	last    []byte
	cache   map[string]*listed
	polling bool
}

// listed is one run as the poller last folded it.
type listed struct {
	size  int64
	mtime time.Time
	st    *runstate.State
	live  bool
}

func newRunsWatcher(s *Server) *runsWatcher {
	return &runsWatcher{s: s, subs: map[*subscriber]struct{}{}, cache: map[string]*listed{}}
}

// list folds what changed and returns the runs newest first.
func (w *runsWatcher) list(ctx context.Context) (RunsList, error) {
	ids, err := w.s.st.ids(ctx)
	if err != nil {
		return RunsList{}, err
	}
	for id := range w.cache {
		if _, ok := slices.BinarySearch(ids, id); !ok {
			delete(w.cache, id)
		}
	}
	runs, broken := runview.List(ctx, ids, func(ctx context.Context, id string) (*runstate.State, string, bool, error) {
		dir := w.s.st.st.RunDir(id)
		l, err := w.fold(ctx, id, dir)
		if errors.Is(err, ErrOutside) {
			// Say no more about where the link leads.
			err = ErrOutside
		}
		if err != nil {
			return nil, dir, false, err
		}
		return l.st, dir, l.live, nil
	}, time.Now(), nil)
	out := RunsList{Runs: runs, Broken: broken, Phases: runview.Phases}
	if out.Runs == nil {
		out.Runs = []runview.Summary{}
	}
	if out.Broken == nil {
		out.Broken = []runview.Broken{}
	}
	return out, nil
}

// fold brings the cached fold of run id, one the storage lists, up to
// date: a record that did not change is not read; a live run's watchdog
// is looked at each time.
func (w *runsWatcher) fold(ctx context.Context, id, dir string) (*listed, error) {
	if err := w.s.st.checkRecord(id, dir); err != nil {
		return nil, err
	}
	fi, err := os.Stat(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, err
	}
	l := w.cache[id]
	if l != nil && l.size == fi.Size() && l.mtime.Equal(fi.ModTime()) && l.st.Result() != nil {
		return l, nil
	}
	rec, err := store.OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	if l == nil || fi.Size() < l.size {
		l = &listed{}
		l.st, err = runstate.LoadWithSnapshot(ctx, rec, dir)
	} else {
		err = l.st.CatchUp(ctx, rec)
	}
	if err != nil {
		delete(w.cache, id)
		return nil, err
	}
	if l.st.Start() == nil {
		return nil, runstate.ErrNotStarted
	}
	l.size, l.mtime, l.live = fi.Size(), fi.ModTime(), holderAlive(ctx, rec)
	w.cache[id] = l
	return l, nil
}

// json is the list as the page gets it, redacted of every listed run's
// known secrets.
func (w *runsWatcher) json(ctx context.Context) ([]byte, error) {
	l, err := w.list(ctx)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	for _, c := range w.cache {
		b = redactorOf(c.st).Redact(b)
	}
	return b, nil
}

// subscribe adds a runs page, starting the poller for the first one.
func (w *runsWatcher) subscribe(ctx context.Context) (*subscriber, []byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, err := w.json(ctx)
	if err != nil {
		return nil, nil, err
	}
	w.last = b
	sub := newSubscriber()
	w.subs[sub] = struct{}{}
	if !w.polling {
		pctx, cancel := context.WithCancel(w.s.ctx)
		w.cancel, w.polling = cancel, true
		go w.poll(pctx)
	}
	return sub, b, nil
}

func (w *runsWatcher) unsubscribe(sub *subscriber) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.subs, sub)
	if len(w.subs) == 0 && w.polling {
		w.cancel()
		w.polling = false
	}
}

func (w *runsWatcher) poll(ctx context.Context) {
	t := time.NewTicker(listPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		if ctx.Err() != nil {
			w.mu.Unlock()
			return
		}
		b, err := w.json(ctx)
		if err != nil {
			w.s.o.Log.Printf("listing runs: %v", err)
		}
		if err == nil && !bytes.Equal(b, w.last) {
			w.last = b
			for sub := range w.subs {
				if !sub.send(message{"runs", b}) {
					delete(w.subs, sub)
					sub.fallBehind()
				}
			}
		}
		w.mu.Unlock()
	}
}

// apiRuns answers GET /api/runs[?phase=P,…].
func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	var keep []string
	if p := r.URL.Query().Get("phase"); p != "" {
		keep = strings.Split(p, ",")
		if err := runview.CheckPhases(keep, func(p string) string { return "phase " + strconv.Quote(p) }); err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	s.runs.mu.Lock()
	l, err := s.runs.list(r.Context())
	var reds []func([]byte) []byte
	for _, c := range s.runs.cache {
		reds = append(reds, redactorOf(c.st).Redact)
	}
	s.runs.mu.Unlock()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if keep != nil {
		l.Runs = slices.DeleteFunc(l.Runs, func(s runview.Summary) bool { return !slices.Contains(keep, s.Phase) })
	}
	b, err := json.Marshal(l)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, red := range reds {
		b = red(b)
	}
	writeJSONBytes(w, b)
}

// liveRuns answers GET /api/live/runs: the "runs" event with the list,
// then again whenever it changes.
func (s *Server) liveRuns(w http.ResponseWriter, r *http.Request) {
	sub, b, err := s.runs.subscribe(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer s.runs.unsubscribe(sub)
	s.serveSSE(w, r, []message{{"runs", b}}, sub)
}

func writeJSONBytes(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
	_, _ = w.Write([]byte("\n"))
}
