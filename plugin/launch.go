package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

const (
	// defaultStartTimeout bounds the handshake when LaunchConfig.StartTimeout
	// is zero.
	defaultStartTimeout = 10 * time.Second
	// closeGrace bounds each stage of Client.Close: the graceful go-plugin
	// shutdown, then the cleanup after a forced kill.
	closeGrace = 5 * time.Second
)

// LaunchConfig says which verified binary to start as which plugin.
type LaunchConfig struct {
	// Name is the plugin name from the run file, used in logs and errors;
	// required.
	Name string
	// Type is the plugin-set key to dispense: TypeEngine or TypeNode.
	Type Type
	// Path is the absolute path of the binary to execute.
	Path string
	// SHA256 is the expected digest of the binary as 64 lower-case hex
	// digits; required. A binary with another digest is never executed.
	SHA256 string
	// Args are the arguments after the program name.
	Args []string
	// Env is the complete environment of the plugin process ("KEY=value");
	// the host builds it from an allow-list. nil = empty, except for the
	// variables go-plugin adds for the handshake and mTLS. The host's own
	// environment is never inherited.
	Env []string
	// Logger receives go-plugin's messages and the plugin's stderr lines
	// (hclog JSON is parsed and re-logged at its level) under
	// Logger.Named(Name), with go-plugin appending the binary's base name
	// for stderr lines. Stray output the plugin writes to os.Stdout or
	// os.Stderr after the handshake is logged line by line with a "stream"
	// field. nil = discard.
	Logger hclog.Logger
	// StartTimeout bounds the wait for the handshake; 0 = 10 s.
	StartTimeout time.Duration
}

// Client is a running plugin process started by Launch. It is safe for
// concurrent use; Close ends it.
type Client struct {
	name   string
	typ    Type
	gp     *goplugin.Client
	conn   *grpc.ClientConn
	remote remote
	engine *engineClient
	node   *nodeClient
	proc   *os.Process
	logger hclog.Logger
	// stopProc cancels the exec context, which kills the process if it is
	// still running.
	stopProc  context.CancelFunc
	closeOnce sync.Once
}

// FileSHA256 returns the SHA-256 of the file at path as lower-case hex. It
// returns the error from opening or reading the file (an *fs.PathError for
// os errors).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Launch verifies and starts a plugin binary and completes the go-plugin
// handshake (DESIGN §3, §7). It first hashes cfg.Path: a missing file gives
// an error wrapping ErrPluginMissing, another digest a *DigestMismatchError
// (matching ErrDigestMismatch); in both cases nothing is executed. It then
// executes the binary directly (no shell) through go-plugin with the same
// digest re-checked by go-plugin's SecureConfig, gRPC only, automatic mTLS,
// exactly cfg.Env as environment and, on Linux, SIGKILL when the launching
// thread dies. Handshake failures wrap ErrHandshake; a binary the kernel
// refuses to execute gives the *fs.PathError from exec, wrapped; an invalid
// cfg gives ErrLaunchConfig. If ctx ends first the process is killed and the error
// wraps ctx.Err(). ctx does not bound the life of the plugin: Close does.
func Launch(ctx context.Context, cfg LaunchConfig) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	actual, err := FileSHA256(cfg.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("plugin %q: binary %s does not exist: %w", cfg.Name, cfg.Path, ErrPluginMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
	}
	if actual != cfg.SHA256 {
		return nil, &DigestMismatchError{Name: cfg.Name, Path: cfg.Path, Expected: cfg.SHA256, Actual: actual}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("plugin %q: launch: %w", cfg.Name, err)
	}
	sum, _ := hex.DecodeString(cfg.SHA256) // validated above

	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	logger = logger.Named(cfg.Name)
	startTimeout := cfg.StartTimeout
	if startTimeout <= 0 {
		startTimeout = defaultStartTimeout
	}

	// The exec context is detached from ctx: it lives as long as the
	// plugin and is cancelled only to kill the process.
	procCtx, stopProc := context.WithCancel(context.Background())
	cmd := exec.CommandContext(procCtx, cfg.Path, cfg.Args...)
	cmd.Env = append(make([]string, 0, len(cfg.Env)), cfg.Env...)
	setProcAttr(cmd)

	gp := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: VersionedPlugins(),
		Cmd:              cmd,
		SecureConfig:     &goplugin.SecureConfig{Checksum: sum, Hash: sha256.New()},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Managed:          false,
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     startTimeout,
		Logger:           logger,
		SyncStdout:       newLineLogger(logger, "stdout"),
		SyncStderr:       newLineLogger(logger, "stderr"),
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(MaxMessageBytes),
			grpc.MaxCallSendMsgSize(MaxMessageBytes),
		)},
	})
	fail := func(err error) (*Client, error) {
		stopProc()
		killGroup(cmd)
		gp.Kill()
		return nil, err
	}

	started := make(chan error, 1)
	go func() {
		_, err := gp.Start()
		started <- err
	}()
	// go-plugin's own start timeout waits for the plugin's stdout to close,
	// which a child of the plugin can hold open: past the timeout the whole
	// process group is killed so the wait ends.
	overdue := time.NewTimer(startTimeout + time.Second)
	defer overdue.Stop()
	select {
	case err = <-started:
	case <-overdue.C:
		stopProc()
		killGroup(cmd)
		err = <-started
		if err == nil {
			err = fmt.Errorf("timeout while waiting for plugin to start")
		}
	case <-ctx.Done():
		stopProc()
		killGroup(cmd)
		<-started
		return fail(fmt.Errorf("plugin %q: launch: %w", cfg.Name, ctx.Err()))
	}
	if err != nil {
		return fail(startError(cfg, startTimeout, err))
	}

	rpc, err := gp.Client()
	if err != nil {
		return fail(fmt.Errorf("plugin %q: connecting: %v: %w", cfg.Name, err, ErrPluginTransport))
	}
	grpcClient, ok := rpc.(*goplugin.GRPCClient)
	if !ok {
		return fail(fmt.Errorf("plugin %q: negotiated a non-gRPC protocol: %w", cfg.Name, ErrHandshake))
	}
	c := &Client{
		name:     cfg.Name,
		typ:      cfg.Type,
		gp:       gp,
		conn:     grpcClient.Conn,
		proc:     cmd.Process,
		logger:   logger,
		stopProc: stopProc,
	}
	raw, err := rpc.Dispense(string(cfg.Type))
	if err != nil {
		return fail(fmt.Errorf("plugin %q: dispensing %s: %v: %w", cfg.Name, cfg.Type, err, ErrWrongType))
	}
	switch shim := raw.(type) {
	case *engineClient:
		shim.name = cfg.Name
		c.engine, c.remote = shim, shim.remote
	case *nodeClient:
		shim.name = cfg.Name
		c.node, c.remote = shim, shim.remote
	default:
		return fail(fmt.Errorf("plugin %q: dispensed %T: %w", cfg.Name, raw, ErrWrongType))
	}
	return c, nil
}

func (cfg *LaunchConfig) validate() error {
	switch {
	case cfg.Name == "":
		return fmt.Errorf("plugin name is empty: %w", ErrLaunchConfig)
	case cfg.Type != TypeEngine && cfg.Type != TypeNode:
		return fmt.Errorf("plugin %q: unknown type %q: %w", cfg.Name, cfg.Type, ErrLaunchConfig)
	case !filepath.IsAbs(cfg.Path):
		return fmt.Errorf("plugin %q: path %q is not absolute: %w", cfg.Name, cfg.Path, ErrLaunchConfig)
	case !isHexDigest(cfg.SHA256):
		return fmt.Errorf("plugin %q: sha256 %q is not 64 lower-case hex digits: %w", cfg.Name, cfg.SHA256, ErrLaunchConfig)
	}
	return nil
}

func isHexDigest(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// go-plugin reports handshake problems only as text; these are the texts
// of the pinned go-plugin version (client.go), checked by tests.
const (
	gpUnrecognized = "Unrecognized remote plugin message: "
	gpExited       = "plugin exited before we could connect"
	gpTimeout      = "timeout while waiting for plugin to start"
)

// startError turns an error of go-plugin's Client.Start into ours.
func startError(cfg LaunchConfig, timeout time.Duration, err error) error {
	msg := err.Error()
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, goplugin.ErrChecksumsDoNotMatch):
		return fmt.Errorf("plugin %q: binary %s changed between the digest check and exec: %w",
			cfg.Name, cfg.Path, ErrDigestMismatch)
	case errors.As(err, &pathErr):
		return fmt.Errorf("plugin %q: executing %s: %w", cfg.Name, cfg.Path, err)
	case strings.HasPrefix(msg, gpUnrecognized):
		line, _, _ := strings.Cut(strings.TrimPrefix(msg, gpUnrecognized), "\n")
		if line == "" {
			return fmt.Errorf("plugin %q: %s exited before its handshake: %w", cfg.Name, cfg.Path, ErrHandshake)
		}
		return fmt.Errorf("plugin %q printed to stdout before its handshake: %q: %w", cfg.Name, line, ErrHandshake)
	case msg == gpExited:
		return fmt.Errorf("plugin %q: %s exited before its handshake: %w", cfg.Name, cfg.Path, ErrHandshake)
	case msg == gpTimeout:
		return fmt.Errorf("plugin %q: %s did not complete its handshake within %s: %w", cfg.Name, cfg.Path, timeout, ErrHandshake)
	default:
		return fmt.Errorf("plugin %q: starting %s: %v: %w", cfg.Name, cfg.Path, err, ErrHandshake)
	}
}

// Engine returns the plugin as an Engine. It returns an error wrapping
// ErrWrongType when the plugin was launched with another Type. Calls on a
// closed Client fail with ErrPluginTransport or ErrPluginExited.
func (c *Client) Engine() (Engine, error) {
	if c.engine == nil {
		return nil, fmt.Errorf("plugin %q was launched as %s, not %s: %w", c.name, c.typ, TypeEngine, ErrWrongType)
	}
	return c.engine, nil
}

// Node returns the plugin as a NodeBinding. It returns an error wrapping
// ErrWrongType when the plugin was launched with another Type.
func (c *Client) Node() (NodeBinding, error) {
	if c.node == nil {
		return nil, fmt.Errorf("plugin %q was launched as %s, not %s: %w", c.name, c.typ, TypeNode, ErrWrongType)
	}
	return c.node, nil
}

// Pid returns the process id of the plugin.
func (c *Client) Pid() int { return c.proc.Pid }

// Exited reports whether the plugin process has exited (and been reaped).
func (c *Client) Exited() bool { return c.gp.Exited() }

// Close stops the plugin: gracefully through go-plugin (its controller's
// Shutdown, then up to 2 s for the process to exit), then by SIGKILL. Each
// stage is bounded by 5 s so that a hung plugin cannot hang the host; if
// cleanup is still blocked after the kill (a child of the plugin holding its
// stderr open), Close logs it and returns. Close is idempotent.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		defer c.stopProc()
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.gp.Kill()
		}()
		t := time.NewTimer(closeGrace)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-t.C:
		}
		c.logger.Warn("plugin did not stop gracefully; killing it", "pid", c.Pid())
		c.stopProc()
		t.Reset(closeGrace)
		select {
		case <-done:
		case <-t.C:
			c.logger.Error("plugin cleanup still blocked after kill; abandoning it", "pid", c.Pid())
		}
	})
}
