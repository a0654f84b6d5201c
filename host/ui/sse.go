package ui

import (
	"bytes"
	"fmt"
	"net/http"
	"time"
)

// message is one server-sent event: its name and its JSON data.
type message struct {
	event string
	data  []byte
}

// subscriber is one live page: a buffered queue of messages. A page that
// falls behind by subBuffer messages is not waited for, which would slow
// the follower every page shares: it is sent what resync returns instead
// of what it missed, or, without resync, its stream ends (its
// EventSource reconnects and starts from a fresh snapshot).
type subscriber struct {
	ch chan message
	// behind gets a signal when the subscriber fell behind.
	behind chan struct{}
	// lagging is set when the subscriber fell behind and is sent nothing
	// until it is resynced (guarded by its publisher's lock).
	lagging bool
	// resync, if set, drops what is queued and returns the messages to
	// start again from, clearing lagging.
	resync func() []message
}

const subBuffer = 256

func newSubscriber() *subscriber {
	return &subscriber{ch: make(chan message, subBuffer), behind: make(chan struct{}, 1)}
}

// fallBehind marks the subscriber lagging and wakes its stream (the
// caller holds its publisher's lock).
func (s *subscriber) fallBehind() {
	s.lagging = true
	select {
	case s.behind <- struct{}{}:
	default:
	}
}

// drain drops every queued message.
func (s *subscriber) drain() {
	for {
		select {
		case <-s.ch:
		default:
			return
		}
	}
}

// send queues m without blocking; false when the subscriber is full.
func (s *subscriber) send(m message) bool {
	select {
	case s.ch <- m:
		return true
	default:
		return false
	}
}

// keepAlive is how often an idle event stream gets a comment line, so
// that proxies and browsers keep it open.
const keepAlive = 15 * time.Second

// serveSSE writes the initial messages, then what sub receives, until the
// request or the server ends, the subscriber falls behind without a
// resync, or an "end" message was written.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request, initial []message, sub *subscriber) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	for _, m := range initial {
		writeSSE(w, m)
	}
	fl.Flush()
	if ended(initial) {
		return
	}
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-sub.behind:
			if sub.resync == nil {
				return
			}
			batch := sub.resync()
			for _, m := range batch {
				writeSSE(w, m)
			}
			fl.Flush()
			if ended(batch) {
				return
			}
		case m := <-sub.ch:
			batch := []message{m}
			// Send what else is queued in the same flush.
			for more := true; more; {
				select {
				case m := <-sub.ch:
					batch = append(batch, m)
				default:
					more = false
				}
			}
			for _, m := range batch {
				writeSSE(w, m)
			}
			fl.Flush()
			if ended(batch) {
				return
			}
		case <-t.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}

// ended reports whether ms hold the "end" message, after which a stream
// closes.
func ended(ms []message) bool {
	for _, m := range ms {
		if m.event == endMessage.event {
			return true
		}
	}
	return false
}

// writeSSE writes one event; data is JSON (one line), so it needs one
// data: field.
func writeSSE(w http.ResponseWriter, m message) {
	data := bytes.ReplaceAll(m.data, []byte("\n"), []byte("\\n"))
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", m.event, data)
}
