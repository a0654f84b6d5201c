package plugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// longTempDir makes a directory whose path is n bytes long.
func longTempDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	long := filepath.Join(dir, strings.Repeat("d", n-len(dir)-1))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	if len(long) != n {
		t.Fatalf("made a path of %d bytes, want %d", len(long), n)
	}
	return long
}

// TestStartFailuresCarryTheirCause: every way a plugin can fail its start
// is reported with what happened, how the process ended and the end of
// its stderr (redacted), not as a bare "handshake failed".
func TestStartFailuresCarryTheirCause(t *testing.T) {
	t.Parallel()
	long := longTempDir(t, 110)
	redact := func(s string) string { return strings.ReplaceAll(s, "sekrit-123", "[REDACTED]") }
	tests := []struct {
		mode    string
		env     []string
		mention []string
		absent  []string
	}{
		{"long-line", nil, []string{"wrote a line of 102400 bytes on stdout before its handshake"}, []string{"check that the path names"}},
		{"exit-message", nil, []string{"exited before its handshake (exit code 1)", "cannot read config /etc/fake.conf", "[REDACTED]",
			// The binary it was given, not only the copy it executed, and how to check it.
			`plugin "fake": ` + testBin + " (executed as its verified copy ", "check that the path names an Obversa plugin"}, []string{"sekrit-123"}},
		{"kill-self", nil, []string{"(killed by signal SIGKILL)", "about to die"}, nil},
		{"bind-long", []string{"TMPDIR=" + long}, []string{"bind: invalid argument", "socket path is over 107 bytes"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			_, err := pluginhost.Launch(context.Background(), plugin.LaunchConfig{
				Name: "fake", Type: plugin.TypeEngine, Path: testBin, SHA256: testBinSHA,
				Env: append([]string{modeEnv + "=" + tt.mode}, tt.env...), Redact: redact,
			})
			var se *plugin.StartError
			if !errors.As(err, &se) || !errors.Is(err, plugin.ErrHandshake) {
				t.Fatalf("error = %v, want a *StartError (ErrHandshake)", err)
			}
			for _, m := range append(tt.mention, `plugin "fake"`) {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error lacks %q:\n%v", m, err)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(err.Error(), a) {
					t.Errorf("error holds %q:\n%v", a, err)
				}
			}
		})
	}
}

// TestLongTMPDIRDoesNotMatter: with a TMPDIR of 110 bytes, where a socket
// path cannot be bound, a plugin still starts: its socket lives in the
// host's short private directory.
func TestLongTMPDIRDoesNotMatter(t *testing.T) {
	t.Parallel()
	long := longTempDir(t, 110)
	c := launch(t, "both", plugin.TypeEngine, func(cfg *plugin.LaunchConfig) {
		cfg.Env = append(cfg.Env, "TMPDIR="+long)
	})
	if _, err := c.Engine(); err != nil {
		t.Fatal(err)
	}
}

// TestStdoutAfterHandshake: what a plugin writes to its real stdout after
// the handshake reaches the plugin log line by line, a 1 MiB line without
// a newline is logged cut and marked, and Close does not stall on it.
func TestStdoutAfterHandshake(t *testing.T) {
	t.Parallel()
	var logs testutil.SyncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace, JSONFormat: true})
	c := launch(t, "stdout-after", plugin.TypeEngine, func(cfg *plugin.LaunchConfig) { cfg.Logger = logger })
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "after the handshake") {
		if time.Now().After(deadline) {
			t.Fatalf("stdout line not logged; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the 1 MiB arrive
	start := time.Now()
	c.Close()
	// closeGrace is 5 s per stage; the stall this guards against took two.
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("Close took %s", took)
	}
	out := logs.String()
	if !strings.Contains(out, `"@level":"warn","@message":"`+plugin.StdoutAfterHandshake) {
		t.Errorf("the stray stdout is not logged as a warning naming the fault; logs:\n%.2000s", out)
	}
	if !strings.Contains(out, `"truncated":true`) || !strings.Contains(out, `"line_bytes":1048576`) {
		t.Errorf("the 1 MiB line is not logged as cut and marked; logs:\n%.2000s", out)
	}
	if len(out) > 256<<10 {
		t.Errorf("the log holds %d bytes; a cut line keeps at most 16 KiB", len(out))
	}
}
