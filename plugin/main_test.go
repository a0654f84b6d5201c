package plugin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// modeEnv selects a helper-process mode: the test binary re-executes
// itself as a plugin with this variable set (the only variable in its
// environment besides go-plugin's).
const modeEnv = "OBVERSA_TEST_PLUGIN_MODE"

// testBin and testBinSHA are the test binary and its digest, launched as
// the plugin under test.
var testBin, testBinSHA string

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	var err error
	if testBin, err = os.Executable(); err == nil {
		testBinSHA, err = plugin.FileSHA256(testBin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "locating test binary:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// runHelper is the plugin side of the tests.
func runHelper(mode string) int {
	logger := hclog.New(&hclog.LoggerOptions{Output: os.Stderr, JSONFormat: true, Level: hclog.Trace})
	cfg := plugin.ServeConfig{Engine: newFakeEngine(), Node: fakeNode{}, Logger: logger}
	switch mode {
	case "both":
	case "node-only":
		cfg.Engine = nil
	case "noise":
		fmt.Println("hello from a noisy plugin")
	case "exit":
		return 3
	case "long-line":
		// A 100 KiB line where the handshake belongs; still alive.
		fmt.Println(strings.Repeat("x", 100<<10))
		time.Sleep(time.Minute)
	case "exit-message":
		fmt.Fprintln(os.Stderr, "cannot read config /etc/fake.conf; token sekrit-123 rejected")
		return 1
	case "kill-self":
		fmt.Fprintln(os.Stderr, "about to die")
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	case "bind-long":
		// A plugin that ignores the directory the host offers and binds
		// under a long TMPDIR instead.
		_ = os.Setenv("PLUGIN_UNIX_SOCKET_DIR", os.Getenv("TMPDIR"))
	case "stdout-after":
		// Writes to the real stdout after the handshake, as a plugin in
		// another language would: a line, then 1 MiB without a newline.
		// It writes when the host's first health check arrives, which can
		// only follow the handshake, so load cannot reorder the two.
		var once sync.Once
		cfg.Health = func(context.Context) bool {
			once.Do(func() {
				_, _ = syscall.Write(1, []byte("after the handshake\n"))
				_, _ = syscall.Write(1, bytes.Repeat([]byte("y"), 1<<20))
			})
			return true
		}
	case "slow-start":
		time.Sleep(time.Minute)
	case "wrong-version":
		// A handshake in protocol version 2, which the host does not speak.
		fmt.Println("1|2|unix|/nonexistent/plugin.sock|grpc|")
		time.Sleep(time.Minute)
	case "tcp-address":
		// A handshake naming the tcp address in OBVERSA_TEST_ADDR, which
		// nothing serves.
		fmt.Println("1|1|tcp|" + os.Getenv("OBVERSA_TEST_ADDR") + "|grpc|")
		time.Sleep(time.Minute)
	case "silent-tls":
		// A handshake naming a unix socket that accepts connections and
		// never answers: no TLS, no gRPC.
		return silentServer()
	case "not-serving":
		cfg.Health = func(context.Context) bool { return false }
	case "launcher":
		return runLauncher()
	case "hang-health":
		cfg.Health = func(ctx context.Context) bool {
			<-ctx.Done()
			return true
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	if err := plugin.Serve(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// silentServer listens on a unix socket in the directory the host offers,
// prints a handshake naming it, accepts connections and never answers.
func silentServer() int {
	ln, err := net.Listen("unix", filepath.Join(os.Getenv("PLUGIN_UNIX_SOCKET_DIR"), "silent.sock"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("1|1|unix|" + ln.Addr().String() + "|grpc|")
	var held []net.Conn
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		held = append(held, c)
	}
}

// launch starts the test binary as a plugin in mode and closes it when the
// test ends.
func launch(t *testing.T, mode string, typ plugin.Type, opts ...func(*plugin.LaunchConfig)) *plugin.Client {
	t.Helper()
	cfg := plugin.LaunchConfig{
		Name:   "fake",
		Type:   typ,
		Path:   testBin,
		SHA256: testBinSHA,
		Env:    []string{modeEnv + "=" + mode},
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard}),
	}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := pluginhost.Launch(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Launch(%s): %v", mode, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func launchEngine(t *testing.T) plugin.Engine {
	t.Helper()
	e, err := launch(t, "both", plugin.TypeEngine).Engine()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func launchNode(t *testing.T) plugin.NodeBinding {
	t.Helper()
	n, err := launch(t, "both", plugin.TypeNode).Node()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// runLauncher launches the test binary as a plugin (with the launcher's
// TMPDIR), prints the plugin's pid and waits to be killed; it stands for a
// host that crashes.
func runLauncher() int {
	self, err := os.Executable()
	if err != nil {
		return 2
	}
	digest, err := plugin.FileSHA256(self)
	if err != nil {
		return 2
	}
	c, err := pluginhost.Launch(context.Background(), plugin.LaunchConfig{
		Name: "orphan", Type: plugin.TypeEngine, Path: self, SHA256: digest,
		Env: []string{modeEnv + "=both", "TMPDIR=" + os.Getenv("TMPDIR")},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(c.Pid())
	select {}
}
