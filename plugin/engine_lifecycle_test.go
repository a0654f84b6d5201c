package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/obversa/obversa/plugin"
)

// runUntilFirstEvent starts Run with prompt, cancels its context when the
// first event arrives and returns the error and how long Run took to return
// after the cancel.
func runUntilFirstEvent(t *testing.T, e plugin.Engine, prompt string) (error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	var cancelled time.Time
	_, err := e.Run(ctx, plugin.RunRequest{Prompt: prompt}, func(plugin.RunEvent) error {
		once.Do(func() {
			cancelled = time.Now()
			cancel()
		})
		return nil
	})
	if cancelled.IsZero() {
		t.Fatalf("Run returned %v before any event", err)
	}
	return err, time.Since(cancelled)
}

func TestRunCancellation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ prompt, path string }{
		{"wait-cancel", "stream"}, {"ignore-cancel", "stream"}, {"wait-cancel", "per-call"}, {"ignore-cancel", "per-call"},
	} {
		prompt := tc.prompt
		t.Run(prompt+"/"+tc.path, func(t *testing.T) {
			t.Parallel()
			c := launch(t, "both", plugin.TypeEngine)
			e, _ := c.Engine()
			e = callPaths(e)[tc.path]
			err, took := runUntilFirstEvent(t, e, prompt)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error = %v, want context.Canceled", err)
			}
			if errors.Is(err, plugin.ErrPluginExited) {
				t.Errorf("cancelled request reported as a dead plugin: %v", err)
			}
			if took > 3*time.Second {
				t.Errorf("Run returned %s after cancel, want within 3s", took)
			}
			if prompt == "wait-cancel" {
				// The plugin's context must have ended too.
				waitSawCancel(t, e)
			}
			if _, err := e.Describe(context.Background()); err != nil {
				t.Errorf("Describe after cancelled Run: %v", err)
			}
		})
	}
}

func TestRunPluginCrashIsExited(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"stream", "per-call"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			testRunPluginCrashIsExited(t, path)
		})
	}
}

func testRunPluginCrashIsExited(t *testing.T, path string) {
	c := launch(t, "both", plugin.TypeEngine)
	e, _ := c.Engine()
	e = callPaths(e)[path]
	_, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "crash"}, nil)
	if !errors.Is(err, plugin.ErrPluginExited) || !errors.Is(err, plugin.ErrPluginTransport) {
		t.Fatalf("error = %v, want ErrPluginExited (and ErrPluginTransport)", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("dead plugin reported as a cancelled request: %v", err)
	}
	var ee *plugin.ExitedError
	if !errors.As(err, &ee) || ee.Name != "fake" || ee.Method != "Run" || ee.Status != "exit code 7" || !filepath.IsAbs(ee.Path) {
		t.Errorf("error = %#v, want an *ExitedError naming plugin fake, Run, exit code 7 and the binary's path", err)
	}
	if !c.Exited() {
		t.Error("Exited() = false after the plugin died")
	}
	_, err = e.Describe(context.Background())
	if !errors.Is(err, plugin.ErrPluginExited) {
		t.Errorf("Describe on a dead plugin: %v, want ErrPluginExited", err)
	}
}

func TestMessageSizeLimits(t *testing.T) {
	t.Parallel()
	for path, e := range callPaths(launchEngine(t)) {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			testMessageSizeLimits(t, e)
		})
	}
}

func testMessageSizeLimits(t *testing.T, e plugin.Engine) {
	ctx := context.Background()

	// Above gRPC's 4 MiB default, below the limit: fine both ways.
	const tenMiB = 10 << 20
	res, err := e.Run(ctx, plugin.RunRequest{Prompt: strings.Repeat("p", tenMiB)}, nil)
	if err != nil {
		t.Fatalf("10 MiB prompt: %v", err)
	}
	if f, _ := res.Final(); f.Text != "prompt of 10485760 bytes" {
		t.Errorf("10 MiB prompt: final = %.40q", f.Text)
	}
	res, err = e.Run(ctx, plugin.RunRequest{Prompt: "big:10485760"}, nil)
	if err != nil {
		t.Fatalf("10 MiB result: %v", err)
	}
	if f, _ := res.Final(); len(f.Text) != tenMiB {
		t.Errorf("10 MiB result: final has %d bytes", len(f.Text))
	}

	// Beyond the limit: a clear error naming it, in both directions.
	over := plugin.MaxMessageBytes + 1<<20
	_, err = e.Run(ctx, plugin.RunRequest{Prompt: "big:" + itoa(over)}, nil)
	if !errors.Is(err, plugin.ErrMessageTooLarge) || !strings.Contains(err.Error(), "64 MiB") {
		t.Errorf("oversize result: %v, want ErrMessageTooLarge naming 64 MiB", err)
	}
	_, err = e.Run(ctx, plugin.RunRequest{Prompt: strings.Repeat("p", over)}, nil)
	if !errors.Is(err, plugin.ErrMessageTooLarge) || !strings.Contains(err.Error(), "64 MiB") {
		t.Errorf("oversize request: %v, want ErrMessageTooLarge naming 64 MiB", err)
	}
	if _, err := e.Describe(ctx); err != nil {
		t.Errorf("Describe after oversize messages: %v", err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
