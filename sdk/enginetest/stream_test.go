package enginetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/obversa/obversa/plugin"
)

func TestRunDelayAndContext(t *testing.T) {
	t.Parallel()
	e := configured(t, `{"responses": [{"node": "slow", "delay": "10s", "text": "late"}, {"node": "quick", "delay": "30ms", "text": "late"}]}`)
	t.Run("delay elapses", func(t *testing.T) {
		t.Parallel()
		begin := time.Now()
		res, _, err := run(t, e, plugin.RunRequest{NodeID: "quick"})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(begin); el < 30*time.Millisecond {
			t.Errorf("answered after %v, before the 30ms delay", el)
		}
		if p, _ := res.Final(); p.Text != "late" {
			t.Errorf("text %q", p.Text)
		}
	})
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		kind plugin.FailureKind
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}, plugin.FailureAborted},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, plugin.FailureTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := tc.ctx()
			defer cancel()
			begin := time.Now()
			_, err := e.Run(ctx, plugin.RunRequest{NodeID: "slow", Target: target}, nil)
			var f *plugin.Failure
			if !errors.As(err, &f) || f.Kind != tc.kind {
				t.Fatalf("Run error = %v, want %s failure", err, tc.kind)
			}
			if el := time.Since(begin); el > time.Second {
				t.Errorf("stopped after %v", el)
			}
		})
	}
	t.Run("emitter error", func(t *testing.T) {
		t.Parallel()
		_, err := e.Run(context.Background(), plugin.RunRequest{NodeID: "n", Prompt: "p", Target: target},
			func(plugin.RunEvent) error { return errors.New("host gone") })
		var f *plugin.Failure
		if !errors.As(err, &f) || f.Kind != plugin.FailureAborted {
			t.Fatalf("Run error = %v, want aborted failure", err)
		}
	})
}

func TestSplitText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "ab", "abc", "héllo wörld ✓", strings.Repeat("x", 100)} {
		parts := splitText(s, 3)
		if strings.Join(parts, "") != s || len(parts) > 3 {
			t.Errorf("splitText(%q) = %q", s, parts)
		}
		for _, p := range parts {
			if p == "" || !utf8.ValidString(p) {
				t.Errorf("splitText(%q) has piece %q", s, p)
			}
		}
	}
}

// TestRunStreamInterval: with stream_interval a text of several lines is
// streamed one line per delta, each after the interval, and the deltas
// still make up the final text.
func TestRunStreamInterval(t *testing.T) {
	t.Parallel()
	e := configured(t, `{"default": {"text": "one\ntwo\nthree", "stream_interval": "20ms"}}`)
	begin := time.Now()
	res, events, err := run(t, e, plugin.RunRequest{Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(begin); el < 40*time.Millisecond {
		t.Errorf("answered after %v, before two intervals", el)
	}
	var deltas []string
	for _, ev := range events {
		if ev.Kind == plugin.EventText {
			deltas = append(deltas, ev.Text)
		}
	}
	if want := []string{"one\n", "two\n", "three"}; !cmp.Equal(deltas, want) {
		t.Errorf("deltas %q, want %q", deltas, want)
	}
	checkStream(t, res, events)
}
