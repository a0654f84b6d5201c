package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/obversa/obversa/internal/runecut"
	"github.com/obversa/obversa/plugin"
)

// transcript is everything a Run stream carried, read at the wire level.
type transcript struct {
	// events are the streamed events before the terminal message.
	events []plugin.RunEvent
	// terminal is the first terminal message, nil when there was none.
	terminal *plugin.WireMessage
	// after counts messages after the terminal one; empty counts messages
	// with no field set.
	after, empty int
	// end is how the stream ended: io.EOF, a *plugin.CallStatus, or
	// another error.
	end error
	// elapsed is the time from opening the stream to its end.
	elapsed time.Duration
}

// collect runs req on s and reads the whole stream.
func collect(ctx context.Context, s *session, req plugin.RunRequest) transcript {
	start := time.Now()
	var t transcript
	w, err := s.c.RunWire(ctx, req)
	if err != nil {
		t.end = err
		t.elapsed = time.Since(start)
		return t
	}
	defer w.Close()
	for {
		m, err := w.Recv()
		if err != nil {
			t.end = err
			break
		}
		switch {
		case t.terminal != nil:
			t.after++
		case m.Terminal():
			t.terminal = &m
			recordCheckOf(ctx).note("", m.Result)
		case m.Empty:
			t.empty++
		default:
			t.events = append(t.events, *m.Event)
		}
	}
	t.elapsed = time.Since(start)
	return t
}

// status returns the gRPC status the stream ended with, nil when it ended
// cleanly or otherwise.
func (t *transcript) status() *plugin.CallStatus {
	var st *plugin.CallStatus
	if errors.As(t.end, &st) {
		return st
	}
	return nil
}

// result is the terminal result, nil when there was none.
func (t *transcript) result() *plugin.RunResult {
	if t.terminal == nil {
		return nil
	}
	return t.terminal.Result
}

// failure is the typed failure the Run ended with, whether as the
// terminal message or as a status detail (how the Go SDK reports a
// recovered panic); nil when there was none.
func (t *transcript) failure() *plugin.Failure {
	if t.terminal != nil && t.terminal.Failure != nil {
		return t.terminal.Failure
	}
	if t.terminal == nil {
		if st := t.status(); st != nil {
			return st.Failure
		}
	}
	return nil
}

// outcome describes how the Run ended, for the report.
func (t *transcript) outcome() string {
	switch {
	case t.result() != nil:
		r := t.result()
		final, _ := r.Final()
		return fmt.Sprintf("a result with %d part(s), final %s", len(r.Parts), describePart(final))
	case t.failure() != nil:
		f := t.failure()
		where := "terminal failure"
		if t.terminal == nil {
			where = "failure in the gRPC status"
		}
		return fmt.Sprintf("a %s %s: %q", where, f.Kind, cut(f.Message, 160))
	case t.end == nil || errors.Is(t.end, io.EOF):
		return "a stream that ended without a terminal message"
	default:
		return fmt.Sprintf("a stream that ended with %v before a terminal message", t.end)
	}
}

func describePart(p plugin.Part) string {
	switch {
	case p.Kind == "":
		return "(none)"
	case len(p.JSON) > 0:
		return fmt.Sprintf("%s %s", p.Kind, cut(string(p.JSON), 80))
	default:
		return fmt.Sprintf("%s %q", p.Kind, cut(p.Text, 80))
	}
}

// cut bounds text quoted in a report to n bytes, on a rune boundary, and
// marks the cut with "…".
func cut(s string, n int) string {
	if len(s) > n {
		return runecut.Prefix(s, n) + "…"
	}
	return s
}

// usageString writes usage as the report shows it.
func usageString(u plugin.Usage) string {
	if !u.Known {
		return "unknown"
	}
	return fmt.Sprintf("{input %d output %d cache_read %d cache_creation %d}", u.Input, u.Output, u.CacheRead, u.CacheCreation)
}

// answerText is the text of a result's final part (its JSON for a
// structured part).
func answerText(r *plugin.RunResult) string {
	var b strings.Builder
	for _, p := range r.Parts {
		if p.Final {
			b.WriteString(p.Text)
			b.Write(p.JSON)
		}
	}
	return b.String()
}
