package launch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestGreetCallTimeout: a greeting call that outlives its timeout fails
// as ErrStart and as context.DeadlineExceeded, naming the plugin, the
// call and the timeout; one whose caller gave up is the caller's own
// cancellation, not a timeout.
func TestGreetCallTimeout(t *testing.T) {
	t.Parallel()
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	err := greetCall(context.Background(), 10*time.Millisecond, "bad", "Describe", hang)
	if !errors.Is(err, ErrStart) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("greetCall past its timeout = %v; want ErrStart and context.DeadlineExceeded", err)
	}
	if want := `plugin "bad" did not answer Describe within 10ms`; !strings.Contains(err.Error(), want) {
		t.Errorf("greetCall past its timeout = %q; want it to say %q", err, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = greetCall(ctx, time.Minute, "bad", "Configure", hang)
	if !errors.Is(err, ErrStart) || !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("greetCall with its caller gone = %v; want ErrStart and context.Canceled only", err)
	}
}

// TestDescribedNameRefused: a name given in Describe outside the grammar
// is refused naming the plugin block and the name.
func TestDescribedNameRefused(t *testing.T) {
	err := describedNameError("eng", "Not A Valid Name!")
	if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), `plugin "eng" described itself as "Not A Valid Name!"`) {
		t.Errorf("describedNameError = %v", err)
	}
}
