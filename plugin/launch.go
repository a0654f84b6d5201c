package plugin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	"github.com/obversa/obversa/plugin/confine"
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
	// Type is the plugin-set key to dispense: TypeEngine, TypeNode or
	// TypePolicy.
	Type Type
	// Path is the absolute path of the plugin binary.
	Path string
	// SHA256 is the expected digest of the binary as 64 lower-case hex
	// digits; required. A binary with another digest is never executed.
	SHA256 string
	// Verified says that Path is a content-addressed copy whose bytes were
	// already checked against SHA256 by this host (CopyBinary, or the run's
	// plugin cache); Launch then executes it without reading it again.
	// false = Launch copies Path into CacheDir with CopyBinary first and
	// executes the copy, never Path itself.
	Verified bool
	// CacheDir is where Launch places the verified copy when Verified is
	// false; empty = a new private temporary directory, removed when the
	// Client closes.
	CacheDir string
	// Redact, when set, is applied to the plugin's stderr before a start
	// error quotes it (the host passes its known-secret redaction).
	Redact func(string) string
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
	// Confine, when set, starts the plugin confined (plugin/confine):
	// through this running binary as the shim, which joins the plugin's
	// cgroup, applies the Landlock rules (with the plugin's socket
	// directory writable) and executes exactly the verified binary. The
	// caller releases it once the Client is closed. nil = unconfined.
	Confine *confine.Prepared
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
	policy *policyClient
	proc   *os.Process
	logger hclog.Logger
	// stopProc cancels the exec context, which kills the process if it is
	// still running.
	stopProc  context.CancelFunc
	closeOnce sync.Once
	// tmpDir is the private copy's directory to remove on Close, if any.
	tmpDir string
}

// Launch starts a plugin from a verified copy of its binary and completes
// the go-plugin handshake (docs/writing-plugins.md, docs/plugins.md). Unless cfg.Verified, it first
// copies cfg.Path into cfg.CacheDir with CopyBinary, hashing while copying:
// a missing file gives an error wrapping ErrPluginMissing, another digest a
// *DigestMismatchError (ErrDigestMismatch), a device or pipe a
// *NotRegularError; in each case nothing is executed. Only the copy is ever
// executed, directly (no shell), gRPC only, with automatic mTLS, exactly
// cfg.Env as environment, its unix socket in a short private directory
// (so a long TMPDIR does not matter) and, on Linux, SIGKILL when the
// launching thread dies. A failed handshake is a *StartError (ErrHandshake)
// that says why: the plugin's exit code or signal, a first stdout line that
// is not a handshake or is too long, and the end of its stderr. A binary
// the kernel refuses to execute gives the *fs.PathError from exec,
// wrapped; an invalid cfg gives ErrLaunchConfig. If ctx ends first the
// process is killed and the error wraps ctx.Err(). ctx does not bound the
// life of the plugin: Close does.
func Launch(ctx context.Context, cfg LaunchConfig) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	path, tmpDir, err := cfg.binary()
	if err != nil {
		return nil, err
	}
	c, err := launch(ctx, cfg, path)
	if err != nil {
		if tmpDir != "" {
			_ = os.RemoveAll(tmpDir)
		}
		return nil, err
	}
	c.tmpDir = tmpDir
	return c, nil
}

// binary returns the verified copy to execute and, when Launch made a
// private directory for it, that directory.
func (cfg *LaunchConfig) binary() (path, tmpDir string, err error) {
	if cfg.Verified {
		return cfg.Path, "", nil
	}
	dir := cfg.CacheDir
	if dir == "" {
		if tmpDir, err = os.MkdirTemp("", "obversa-plugin-"); err != nil {
			return "", "", err
		}
		dir = tmpDir
	}
	copied, err := CopyBinary(cfg.Name, cfg.Path, dir, CopyOptions{Expected: cfg.SHA256})
	if err != nil {
		if tmpDir != "" {
			_ = os.RemoveAll(tmpDir)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("plugin %q: binary %s does not exist: %w", cfg.Name, cfg.Path, ErrPluginMissing)
		}
		return "", "", err
	}
	return copied.Path, tmpDir, nil
}

// launch executes the verified binary at path and completes the handshake.
func launch(ctx context.Context, cfg LaunchConfig, path string) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("plugin %q: launch: %w", cfg.Name, err)
	}
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
	env := append(make([]string, 0, len(cfg.Env)+8), cfg.Env...)
	newCmd := func() (*exec.Cmd, error) {
		cmd := exec.CommandContext(procCtx, path, cfg.Args...)
		if cfg.Confine != nil {
			shim, err := cfg.Confine.Command(path, cfg.Args, envValue(env, envUnixSocketDir))
			if err != nil {
				return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
			}
			cmd = exec.CommandContext(procCtx, shim.Path)
			cmd.Args, cmd.ExtraFiles = shim.Args, shim.ExtraFiles
		}
		cmd.Env = env
		setProcAttr(cmd)
		if cfg.Confine != nil {
			setUnshare(cmd, cfg.Confine.Unshareflags())
		}
		return cmd, nil
	}
	var run *procRunner
	sockets, err := socketDir()
	if err != nil {
		stopProc()
		return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
	}

	gp := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: VersionedPlugins(),
		// go-plugin hands its own variables (protocol versions, client
		// certificate, socket directory) on a command of its own; the
		// plugin runs as cmd with them added. Its stdin is /dev/null,
		// never the host's.
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			env = append(env, spec.Env...)
			var err error
			run, err = newProcRunner(newCmd, logger, cfg.Redact)
			return run, err
		},
		UnixSocketConfig: &goplugin.UnixSocketConfig{TempDir: sockets},
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
	kill := func() {
		if run != nil {
			killGroup(run.cmd)
		}
	}
	fail := func(err error) (*Client, error) {
		stopProc()
		kill()
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
		kill()
		err = <-started
		if err == nil {
			err = fmt.Errorf("timeout while waiting for plugin to start")
		}
	case <-ctx.Done():
		stopProc()
		kill()
		<-started
		return fail(fmt.Errorf("plugin %q: launch: %w", cfg.Name, ctx.Err()))
	}
	if err != nil {
		return fail(startError(cfg, path, startTimeout, err, run))
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
		proc:     run.cmd.Process,
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
	case *policyClient:
		shim.name = cfg.Name
		c.policy, c.remote = shim, shim.remote
	default:
		return fail(fmt.Errorf("plugin %q: dispensed %T: %w", cfg.Name, raw, ErrWrongType))
	}
	return c, nil
}

func (cfg *LaunchConfig) validate() error {
	switch {
	case cfg.Name == "":
		return fmt.Errorf("plugin name is empty: %w", ErrLaunchConfig)
	case cfg.Type != TypeEngine && cfg.Type != TypeNode && cfg.Type != TypePolicy:
		return fmt.Errorf("plugin %q: unknown type %q: %w", cfg.Name, cfg.Type, ErrLaunchConfig)
	case !filepath.IsAbs(cfg.Path):
		return fmt.Errorf("plugin %q: path %q is not absolute: %w", cfg.Name, cfg.Path, ErrLaunchConfig)
	case !isHexDigest(cfg.SHA256):
		return fmt.Errorf("plugin %q: sha256 %q is not 64 lower-case hex digits: %w", cfg.Name, cfg.SHA256, ErrLaunchConfig)
	}
	return nil
}

// envValue returns the value of the last key=value entry of env.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
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

// Policy returns the plugin as a Policy. It returns an error wrapping
// ErrWrongType when the plugin was launched with another Type.
func (c *Client) Policy() (Policy, error) {
	if c.policy == nil {
		return nil, fmt.Errorf("plugin %q was launched as %s, not %s: %w", c.name, c.typ, TypePolicy, ErrWrongType)
	}
	return c.policy, nil
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
		if c.tmpDir != "" {
			defer os.RemoveAll(c.tmpDir)
		}
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
