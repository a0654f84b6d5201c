package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// markerScript writes an executable shell script that records that it ran
// by creating "<script>.ran" (wherever the copy it runs as lives); it
// never performs a handshake.
func markerScript(t *testing.T) (path, digest string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "not-a-plugin.sh")
	body := []byte("#!/bin/sh\necho ran > '" + path + ".ran'\n")
	if err := os.WriteFile(path, body, 0o755); err != nil {
		t.Fatal(err)
	}
	return path, sha256Hex(body)
}

func TestLaunchWrongDigestNeverExecutes(t *testing.T) {
	t.Parallel()
	path, digest := markerScript(t)
	wrong := strings.Repeat("0", 64)
	_, err := pluginhost.Launch(context.Background(), plugin.LaunchConfig{Name: "p", Type: plugin.TypeEngine, Path: path, SHA256: wrong})
	var mismatch *plugin.DigestMismatchError
	if !errors.As(err, &mismatch) || !errors.Is(err, plugin.ErrDigestMismatch) {
		t.Fatalf("error = %v, want *DigestMismatchError", err)
	}
	for _, s := range []string{path, wrong, digest} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	if mismatch.Expected != wrong || mismatch.Actual != digest || mismatch.Path != path || mismatch.Name != "p" {
		t.Errorf("mismatch = %+v", mismatch)
	}
	if _, err := os.Stat(path + ".ran"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the binary ran despite the wrong digest (stat: %v)", err)
	}

	// Control: with the right digest the script does run (and fails the
	// handshake), so the check above can see an execution.
	_, err = pluginhost.Launch(context.Background(), plugin.LaunchConfig{Name: "p", Type: plugin.TypeEngine, Path: path, SHA256: digest})
	if !errors.Is(err, plugin.ErrHandshake) || !strings.Contains(err.Error(), "exited before its handshake") {
		t.Errorf("right digest, no handshake: %v, want ErrHandshake (exited before handshake)", err)
	}
	if _, err := os.Stat(path + ".ran"); err != nil {
		t.Errorf("control run did not execute the script: %v", err)
	}
}

func TestLaunchConfigErrors(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope")
	tests := []struct {
		name    string
		cfg     plugin.LaunchConfig
		want    error
		mention string
	}{
		{"missing binary", plugin.LaunchConfig{Name: "p", Type: plugin.TypeEngine, Path: missing, SHA256: testBinSHA}, plugin.ErrPluginMissing, missing},
		{"relative path", plugin.LaunchConfig{Name: "p", Type: plugin.TypeEngine, Path: "bin/p", SHA256: testBinSHA}, plugin.ErrLaunchConfig, "bin/p"},
		{"no digest", plugin.LaunchConfig{Name: "p", Type: plugin.TypeEngine, Path: testBin}, plugin.ErrLaunchConfig, "sha256"},
		{"upper-case digest", plugin.LaunchConfig{Name: "p", Type: plugin.TypeEngine, Path: testBin, SHA256: strings.ToUpper(testBinSHA)}, plugin.ErrLaunchConfig, "sha256"},
		{"unknown type", plugin.LaunchConfig{Name: "p", Type: "tool", Path: testBin, SHA256: testBinSHA}, plugin.ErrLaunchConfig, "tool"},
		{"no name", plugin.LaunchConfig{Type: plugin.TypeEngine, Path: testBin, SHA256: testBinSHA}, plugin.ErrLaunchConfig, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := pluginhost.Launch(context.Background(), tt.cfg)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error = %v, want %v mentioning %q", err, tt.want, tt.mention)
			}
		})
	}
}

func TestLaunchHandshakeFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode    string
		timeout time.Duration
		mention string
	}{
		{"noise", 0, `printed to stdout before its handshake: "hello from a noisy plugin"`},
		{"exit", 0, "exited before its handshake"},
		{"slow-start", 300 * time.Millisecond, "did not complete its handshake within 300ms"},
		{"wrong-version", 0, "answered protocol version 2 in its handshake; this host speaks protocol version 1"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			_, err := pluginhost.Launch(context.Background(), plugin.LaunchConfig{
				Name: "fake", Type: plugin.TypeEngine, Path: testBin, SHA256: testBinSHA,
				Env: []string{modeEnv + "=" + tt.mode}, StartTimeout: tt.timeout,
			})
			if !errors.Is(err, plugin.ErrHandshake) || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error = %v, want ErrHandshake mentioning %q", err, tt.mention)
			}
		})
	}
}

// TestLaunchDialsOnlyLoopback checks that the host dials the tcp address
// a handshake names only when it is a loopback IP: a host name is never
// looked up and another machine is never connected to, so a plugin
// without network cannot reach it through the host (docs/confinement.md).
func TestLaunchDialsOnlyLoopback(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"obversa-handshake-test.invalid:443", "192.0.2.1:9", "[::ffff:192.0.2.1]:9", "localhost:1", "127.0.0.1"} {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			_, err := pluginhost.Launch(context.Background(), plugin.LaunchConfig{
				Name: "fake", Type: plugin.TypeEngine, Path: testBin, SHA256: testBinSHA,
				Env: []string{modeEnv + "=tcp-address", "OBVERSA_TEST_ADDR=" + addr},
			})
			want := fmt.Sprintf("named the address %q in its handshake, which the host does not dial", addr)
			if !errors.Is(err, plugin.ErrHandshake) || !strings.Contains(err.Error(), want) {
				t.Errorf("error = %v, want ErrHandshake mentioning %q", err, want)
			}
		})
	}
}

func TestLaunchHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := pluginhost.Launch(ctx, plugin.LaunchConfig{
		Name: "fake", Type: plugin.TypeEngine, Path: testBin, SHA256: testBinSHA,
		Env: []string{modeEnv + "=slow-start"},
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Launch took %s after its context ended", took)
	}
}

func TestLaunchWrongType(t *testing.T) {
	t.Parallel()
	c := launch(t, "both", plugin.TypeNode)
	if _, err := c.Engine(); !errors.Is(err, plugin.ErrWrongType) {
		t.Errorf("Engine() on a node client: %v, want ErrWrongType", err)
	}
	if _, err := c.Node(); err != nil {
		t.Errorf("Node(): %v", err)
	}

	// A binary that does not serve the Engine service.
	e, err := launch(t, "node-only", plugin.TypeEngine).Engine()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Describe(context.Background()); !errors.Is(err, plugin.ErrWrongType) {
		t.Errorf("Describe on a node-only binary: %v, want ErrWrongType", err)
	}
}

func TestLaunchEnvironmentIsExactlyEnv(t *testing.T) {
	t.Setenv("OBVERSA_TEST_SECRET", "leaked")
	got := finalText(t, launch(t, "both", plugin.TypeEngine, func(cfg *plugin.LaunchConfig) {
		cfg.Env = append(cfg.Env, "OBVERSA_TEST_ALLOWED=allowed")
	}), "env")
	if got != "|allowed" {
		t.Errorf("plugin saw SECRET|ALLOWED = %q, want %q", got, "|allowed")
	}
}

// TestLaunchMutualTLS: the host offers the plugin a P-256 certificate of
// its own making and talks to it over the mutual TLS go-plugin's server
// sets up with it (a plugin serves nothing else once offered one).
func TestLaunchMutualTLS(t *testing.T) {
	t.Parallel()
	if got := finalText(t, launch(t, "both", plugin.TypeEngine), "client-cert"); got != "ECDSA P-256" {
		t.Errorf("the plugin was offered %q, want an ECDSA P-256 certificate", got)
	}
}

// finalText runs prompt on c's engine and returns the final text.
func finalText(t *testing.T, c *plugin.Client, prompt string) string {
	t.Helper()
	e, err := c.Engine()
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: prompt}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := res.Final()
	return f.Text
}

func TestCloseStopsProcess(t *testing.T) {
	t.Parallel()
	c := launch(t, "both", plugin.TypeEngine)
	pid := c.Pid()
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("plugin pid %d not running before Close: %v", pid, err)
	}
	start := time.Now()
	c.Close()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Close took %s", took)
	}
	if !c.Exited() {
		t.Error("Exited() = false after Close")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(%d, 0) after Close = %v, want ESRCH", pid, err)
	}
	c.Close() // idempotent
	e, _ := c.Engine()
	if _, err := e.Describe(context.Background()); err == nil {
		t.Error("Describe after Close succeeded")
	}
}

func TestPluginOutputIsLogged(t *testing.T) {
	t.Parallel()
	var logs testutil.SyncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace, JSONFormat: true})
	e, err := launch(t, "both", plugin.TypeEngine, func(cfg *plugin.LaunchConfig) { cfg.Logger = logger }).Engine()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "stdout"}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "stray stdout line") {
		if time.Now().After(deadline) {
			t.Fatalf("stray stdout line not logged; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), `"@module":"fake`) {
		t.Errorf("plugin lines not logged under the plugin name; logs:\n%s", logs.String())
	}
}

func TestFileSHA256(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := plugin.FileSHA256(path)
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if err != nil || got != want {
		t.Errorf("FileSHA256 = %q, %v; want %q", got, err, want)
	}
	if _, err := plugin.FileSHA256(path + "x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
}

// A plugin that accepts the host's connection and never answers TLS is
// refused naming the plugin, the TLS handshake, the bound and the setting.
// The bound also covers the helper's own start, so it is long enough for a
// loaded machine to start it and print its handshake line.
func TestSilentTLSNamesStartTimeout(t *testing.T) {
	t.Parallel()
	c, err := pluginhost.Launch(context.Background(), plugin.LaunchConfig{
		Name: "fake", Type: plugin.TypeEngine, Path: testBin, SHA256: testBinSHA,
		Env: []string{modeEnv + "=silent-tls"}, StartTimeout: 5 * time.Second,
	})
	if err == nil {
		defer func() { _ = c.Close() }()
		err = c.Health(context.Background())
	}
	want := `plugin fake accepted the host's connection but did not complete the TLS handshake within 5s (the plugin block's start_timeout`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v, want one containing %q", err, want)
	}
}
