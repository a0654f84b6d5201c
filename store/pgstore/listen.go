package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgxlisten"
)

// notifyChannel is the channel every append notifies, in its transaction;
// the payload names the schema, namespace and run (notifyPayload).
const notifyChannel = "obversa_events"

// notifyPayload is "<schema>/<namespace>/<run>" (none of them can hold a
// '/').
func (b *Backend) notifyPayload(id string) string {
	return b.cfg.Schema + "/" + b.ns + "/" + id
}

// listener keeps one connection LISTENing for the Backend (started by the
// first Follow) and wakes the followers of the run a notification names.
// pgxlisten reconnects it after a failure; every (re)connection wakes all
// followers, since notifications sent while it was down are lost.
type listener struct {
	b *Backend

	mu      sync.Mutex
	subs    map[string]map[*subscription]struct{} // by notifyPayload
	up      bool                                  // LISTEN is in effect
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// subscription is one Follow's interest in a run.
type subscription struct {
	key  string
	wake chan struct{} // one token: look again
}

func newListener(b *Backend) *listener {
	return &listener{b: b, subs: map[string]map[*subscription]struct{}{}}
}

// subscribe registers interest in run id, starting the listener if needed.
func (l *listener) subscribe(id string) *subscription {
	s := &subscription{key: l.b.notifyPayload(id), wake: make(chan struct{}, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs[s.key] == nil {
		l.subs[s.key] = map[*subscription]struct{}{}
	}
	l.subs[s.key][s] = struct{}{}
	if !l.started {
		l.started = true
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel, l.done = cancel, make(chan struct{})
		go l.run(ctx)
	}
	return s
}

func (l *listener) unsubscribe(s *subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.subs[s.key], s)
	if len(l.subs[s.key]) == 0 {
		delete(l.subs, s.key)
	}
}

// connected reports whether LISTEN is in effect, so that no notification
// can be missed.
func (l *listener) connected() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.up
}

// run listens until ctx ends.
func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	pl := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			return pgx.ConnectConfig(ctx, l.b.pool.Config().ConnConfig.Copy())
		},
		LogError: func(context.Context, error) {
			// The connection failed or could not be made: followers poll
			// until it is back.
			l.setUp(false)
		},
		ReconnectDelay: time.Second,
	}
	pl.Handle(notifyChannel, l)
	pl.Listen(ctx)
	l.setUp(false)
}

// HandleBacklog is called by pgxlisten once LISTEN is in effect on a new
// connection: from now on nothing is missed, and followers look again for
// what was committed before.
func (l *listener) HandleBacklog(context.Context, string, *pgx.Conn) error {
	l.setUp(true)
	return nil
}

// HandleNotification wakes the followers of the run the payload names.
func (l *listener) HandleNotification(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.subs[n.Payload] {
		s.poke()
	}
	return nil
}

// setUp records the connection's state and wakes every follower.
func (l *listener) setUp(up bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.up = up
	for _, set := range l.subs {
		for s := range set {
			s.poke()
		}
	}
}

func (s *subscription) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// stop ends the listener, if it was started.
func (l *listener) stop() {
	l.mu.Lock()
	started, cancel, done := l.started, l.cancel, l.done
	l.mu.Unlock()
	if started {
		cancel()
		<-done
	}
}
