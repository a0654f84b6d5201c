package plugin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/plugin"
)

// waitSawCancel waits until the fake engine reports that a "wait-cancel"
// Run saw its context end.
func waitSawCancel(t *testing.T, e plugin.Engine) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		r, err := e.Admit(context.Background(), plugin.AdmitRequest{Target: plugin.Identity{Model: "saw-cancel"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Supported {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin never saw the call's context end")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAttemptsCancelOneCallOfMany cancels one call on the shared stream
// while another runs: the cancelled call ends at once and its handler in
// the plugin sees the cancellation, and the others are not disturbed.
func TestAttemptsCancelOneCallOfMany(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	served, err := plugin.ServesAttempts(context.Background(), e)
	if err != nil || !served {
		t.Fatalf("ServesAttempts = %v, %v; want true (the Go server shim serves the attempt stream)", served, err)
	}
	cancel, ended := startWaiting(e)
	defer cancel()
	// Other calls go on while the first one waits.
	for range 3 {
		res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "big:4"}, nil)
		if err != nil {
			t.Fatalf("call beside a waiting one: %v", err)
		}
		if f, _ := res.Final(); f.Text != "xxxx" {
			t.Fatalf("call beside a waiting one: final %q", f.Text)
		}
	}
	select {
	case err := <-ended:
		t.Fatalf("the waiting call ended before it was cancelled: %v", err)
	default:
	}
	cancel()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) || errors.Is(err, plugin.ErrPluginTransport) {
			t.Errorf("cancelled call: %v, want context.Canceled and no transport error", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the cancelled call did not return within 3 s")
	}
	waitSawCancel(t, e)
	if _, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "big:1"}, nil); err != nil {
		t.Fatalf("call after a cancelled one: %v", err)
	}
}

// TestAttemptsDeadline gives a call a deadline: the host returns when it
// passes, reporting the deadline, and the plugin's handler sees its
// context end as well, on either path.
func TestAttemptsDeadline(t *testing.T) {
	t.Parallel()
	for path, e := range callPaths(launchEngine(t)) {
		t.Run(path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := e.Run(ctx, plugin.RunRequest{Prompt: "wait-cancel"}, nil)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error = %v, want context.DeadlineExceeded", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("Run returned after %s, want about 300 ms", took)
			}
			waitSawCancel(t, e)
		})
	}
}

// TestAttemptsInvalidUTF8EndsOneCall: a request with a string field that
// is not valid UTF-8, which gRPC cannot encode, fails its own call with
// ErrInvalidRequest naming the field before anything is sent, and does
// not end the shared stream (aloneBesideWaiting).
func TestAttemptsInvalidUTF8EndsOneCall(t *testing.T) {
	t.Parallel()
	aloneBesideWaiting(t, map[string]plugin.RunRequest{
		"prompt":        {Prompt: "big:4\xff"},
		"tools[1]":      {Prompt: "big:4", Tools: []string{"read", "\xc3("}},
		"workspace_dir": {Prompt: "big:4", WorkspaceDir: "/tmp/\xed\xa0\x80"},
	}, func(field string, err error) string {
		if !errors.Is(err, plugin.ErrInvalidRequest) || errors.Is(err, plugin.ErrPluginTransport) || !strings.Contains(err.Error(), "field "+field+" ") {
			return "want ErrInvalidRequest naming the field"
		}
		return ""
	})
}

// TestAttemptsOversizeEndsOneCall: a request or a result over the message
// limit ends its own call with ErrMessageTooLarge, as on a Run stream of
// its own, and not the shared stream (aloneBesideWaiting).
func TestAttemptsOversizeEndsOneCall(t *testing.T) {
	t.Parallel()
	over := plugin.MaxMessageBytes + 1<<20
	aloneBesideWaiting(t, map[string]plugin.RunRequest{
		"request": {Prompt: strings.Repeat("p", over)},
		"result":  {Prompt: "big:" + itoa(over)},
	}, func(_ string, err error) string {
		if !errors.Is(err, plugin.ErrMessageTooLarge) {
			return "want ErrMessageTooLarge"
		}
		return ""
	})
}

// startWaiting starts a call on e that waits until it is cancelled and
// returns once the plugin has begun it; ended receives the call's error.
func startWaiting(e plugin.Engine) (cancel context.CancelFunc, ended <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(ctx, plugin.RunRequest{Prompt: "wait-cancel"}, func(plugin.RunEvent) error {
			close(waiting)
			return nil
		})
		done <- err
	}()
	<-waiting
	return cancel, done
}

// aloneBesideWaiting makes each of bad's calls while another call waits
// on the same attempt stream; refused says what is wrong with a bad
// call's error ("" for nothing). The waiting call must not be disturbed
// (it would otherwise end with the other call's error while its engine
// may still be working) and must end only when it is cancelled.
func aloneBesideWaiting(t *testing.T, bad map[string]plugin.RunRequest, refused func(name string, err error) string) {
	t.Helper()
	e := launchEngine(t)
	cancel, ended := startWaiting(e)
	defer cancel()
	for name, req := range bad {
		if _, err := e.Run(context.Background(), req, nil); refused(name, err) != "" {
			t.Errorf("%s beside a waiting call: %v, %s", name, err, refused(name, err))
		}
		// A round trip after it gives a broken stream's end time to
		// reach the waiting call.
		if _, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "big:4"}, nil); err != nil {
			t.Fatalf("call after the bad %s: %v", name, err)
		}
		select {
		case err := <-ended:
			t.Fatalf("the waiting call ended with the bad %s's call: %v", name, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	if err := <-ended; !errors.Is(err, context.Canceled) || errors.Is(err, plugin.ErrPluginTransport) {
		t.Errorf("the waiting call, cancelled: %v, want context.Canceled and no transport error", err)
	}
}
