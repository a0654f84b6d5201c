package plugin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/internal/proc"
	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// DefaultStartTimeout bounds the wait for a plugin's handshake when
// LaunchConfig.StartTimeout is zero: go-plugin's own default, which
// Terraform and Nomad plugins start under. It only guards against a
// plugin that never answers; an interpreter starting on a loaded machine
// can take tens of seconds (docs/decisions.md, "The handshake timeout").
// A run file sets it per plugin with start_timeout (docs/run-file.md).
const DefaultStartTimeout = time.Minute

// LaunchWith starts a plugin from a verified copy of its binary and
// completes the go-plugin handshake through the Transport newTransport
// makes (docs/writing-plugins.md, docs/plugins.md); pluginhost.Launch is
// LaunchWith on go-plugin's client. Unless cfg.Verified, it first
// copies cfg.Path into cfg.CacheDir with CopyBinary, hashing while copying:
// a missing file gives an error wrapping ErrPluginMissing, another digest a
// *DigestMismatchError (ErrDigestMismatch), a device or pipe a
// *NotRegularError; in each case nothing is executed. Only the copy is ever
// executed, directly (no shell), gRPC only, with mutual TLS (go-plugin's
// automatic mTLS, the host's certificate from ClientCertificate), exactly
// cfg.Env as environment, its unix socket in a short private directory
// (so a long TMPDIR does not matter; removed when the plugin ends, and
// after a crash of this process by the next sweep: SweepSockets) and, on Linux, SIGKILL when the
// launching thread dies. A failed handshake is a *StartError (ErrHandshake)
// that says why: the plugin's exit code or signal, a first stdout line that
// is not a handshake or is too long, and the end of its stderr. A binary
// the kernel refuses to execute gives the *fs.PathError from exec,
// wrapped; an invalid cfg gives ErrLaunchConfig. If ctx ends first the
// process is killed and the error wraps ctx.Err(). ctx does not bound the
// life of the plugin: Close does.
func LaunchWith(ctx context.Context, cfg LaunchConfig, newTransport NewTransport) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	path, tmpDir, err := cfg.binary()
	if err != nil {
		return nil, err
	}
	c, err := launch(ctx, cfg, path, newTransport)
	if err != nil {
		if tmpDir != "" {
			_ = os.RemoveAll(tmpDir)
		}
		return nil, err
	}
	c.tmpDir = tmpDir
	return c, nil
}

// binary returns the verified copy to execute and, when LaunchWith made a
// private directory for it, that directory.
func (cfg *LaunchConfig) binary() (path, tmpDir string, err error) {
	if cfg.Verified {
		return cfg.Path, "", nil
	}
	dir := cfg.CacheDir
	if dir == "" {
		// In this process's own directory, which a sweep removes should
		// the process die before Close.
		own, err := socketDir()
		if err != nil {
			return "", "", err
		}
		if tmpDir, err = os.MkdirTemp(own, "copy-"); err != nil {
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

// launcher is one launch in progress: the exec context the process lives
// in, the environment the Transport adds its variables to, and the
// process runner once the Transport has asked for it.
type launcher struct {
	cfg          LaunchConfig
	path         string
	logger       hclog.Logger
	startTimeout time.Duration
	// procCtx is detached from the launch's ctx: it lives as long as the
	// plugin and is cancelled (stopProc) only to kill the process.
	procCtx  context.Context
	stopProc context.CancelFunc
	env      []string
	// marker is LaunchEnv=<value>, in env, that marks this launch's
	// processes.
	marker string
	// bare is the launch's cgroup when its confinement makes no v2 group.
	bare *bareGroup
	run  *procRunner
	t    Transport
	// sockets is the plugin's socket directory the Transport made,
	// removed when the plugin ends however it ends (go-plugin removes it
	// only after a process it started).
	sockets string
}

// launch executes the verified binary at path and completes the handshake.
func launch(ctx context.Context, cfg LaunchConfig, path string, newTransport NewTransport) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("plugin %q: launch: %w", cfg.Name, err)
	}
	l := newLauncher(cfg, path)
	sockets, err := socketDir()
	if err != nil {
		l.abandon()
		return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
	}
	tlsConfig, certEnv, err := clientTLS()
	if err != nil {
		l.abandon()
		return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
	}
	l.env = append(l.env, certEnv)
	l.t = newTransport(l.transportConfig(sockets, tlsConfig))
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.BeforeExec, cfg.Name)
	}
	if err := l.start(ctx); err != nil {
		return l.fail(err)
	}
	c, err := l.connect()
	if err != nil {
		return l.fail(err)
	}
	return c, nil
}

// abandon releases what newLauncher made for a launch that fails before
// its process is started: the exec context and the bare cgroup.
func (l *launcher) abandon() {
	l.stopProc()
	l.bare.stop()
}

// newLauncher fills in cfg's defaults (a discarding logger, the default
// start timeout) and makes the exec context.
func newLauncher(cfg LaunchConfig, path string) *launcher {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	startTimeout := cfg.StartTimeout
	if startTimeout <= 0 {
		startTimeout = DefaultStartTimeout
	}
	procCtx, stopProc := context.WithCancel(context.Background())
	marker := newMarker()
	env := append(make([]string, 0, len(cfg.Env)+9), cfg.Env...)
	var bare *bareGroup
	if !cfg.Confine.HasV2Group() {
		bare = newBareGroup(cfg.GroupTag)
	}
	return &launcher{
		bare:         bare,
		cfg:          cfg,
		path:         path,
		logger:       logger.Named(cfg.Name),
		startTimeout: startTimeout,
		procCtx:      procCtx,
		stopProc:     stopProc,
		marker:       marker,
		env:          append(env, marker),
	}
}

// command builds the plugin's command: the verified binary itself or,
// confined, the shim that executes it. Given cfg.File, the kernel
// executes that open file (execFD), not whatever its path names by then.
func (l *launcher) command() (*exec.Cmd, error) {
	cfg := l.cfg
	cmd := exec.CommandContext(l.procCtx, l.path, cfg.Args...)
	if target := execFD(cfg.File, 3); cfg.Confine == nil && target != "" {
		// The file is the child's descriptor 3, open across the exec: a
		// "#!" script's interpreter opens the script by that name.
		// A copy of its own, since the command's files are closed once
		// it started and cfg.File stays the caller's.
		dup, err := proc.DupFile(cfg.File)
		if err != nil {
			return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
		}
		cmd = exec.CommandContext(l.procCtx, target, cfg.Args...)
		cmd.Args[0], cmd.ExtraFiles = l.path, []*os.File{dup}
	}
	if cfg.Confine != nil {
		shim, err := cfg.Confine.CommandFile(cfg.File, l.path, cfg.Args, envValue(l.env, envUnixSocketDir))
		if err != nil {
			return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
		}
		cmd = exec.CommandContext(l.procCtx, shim.Path)
		cmd.Args, cmd.ExtraFiles = shim.Args, shim.ExtraFiles
	}
	cmd.Env = l.env
	setProcAttr(cmd)
	l.bare.apply(cmd)
	if cfg.Confine != nil {
		setUnshare(cmd, cfg.Confine.Unshareflags())
	}
	return cmd, nil
}

// transportConfig is the Transport's configuration for this launch, with
// the plugin's unix socket in sockets and mTLS as tlsConfig sets it up
// (clientTLS): go-plugin's automatic mTLS protocol with the host's
// certificate made here, on P-256, rather than by go-plugin on P-521.
func (l *launcher) transportConfig(sockets string, tlsConfig *tls.Config) TransportConfig {
	dial := []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageBytes),
		grpc.MaxCallSendMsgSize(MaxMessageBytes),
	), grpc.WithInitialWindowSize(WindowBytes), grpc.WithInitialConnWindowSize(WindowBytes),
		// Each connection's TLS handshake is bounded by the start timeout,
		// not by gRPC's own 20 s, and a timed-out one names it.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.DefaultConfig, MinConnectTimeout: l.startTimeout})}
	if tlsConfig != nil {
		// go-plugin's own credentials for tlsConfig, which this option
		// replaces, over raw socket I/O (rawio_linux.go).
		dial = append(dial, grpc.WithTransportCredentials(rawIOCreds{cfg: tlsConfig, name: l.cfg.Name, bound: l.startTimeout}))
	}
	return TransportConfig{
		// The Transport hands its own variables (protocol versions,
		// socket directory); the plugin runs as command() with them
		// added. Its stdin is /dev/null, never the host's.
		Runner: func(env []string, sockets string) (ProcessRunner, error) {
			l.env, l.sockets = append(l.env, env...), sockets
			run, err := newProcRunner(l.command, l.logger, l.cfg.Redact)
			if err != nil {
				return nil, err
			}
			l.run = run
			return run, nil
		},
		SocketDir:    sockets,
		TLS:          tlsConfig,
		StartTimeout: l.startTimeout,
		Logger:       l.logger,
		Stdout:       newLineLogger(l.logger, "stdout"),
		Stderr:       newLineLogger(l.logger, "stderr"),
		Dial:         dial,
	}
}

// start runs the Transport's handshake and waits for it, for ctx, or past the
// start timeout, whichever comes first. A failed handshake is a *StartError.
func (l *launcher) start(ctx context.Context) error {
	started := make(chan error, 1)
	go func() {
		started <- l.t.Start()
	}()
	// go-plugin's own start timeout waits for the plugin's stdout to close,
	// which a child of the plugin can hold open: past the timeout the whole
	// process group is killed so the wait ends.
	overdue := time.NewTimer(l.startTimeout + time.Second)
	defer overdue.Stop()
	var err error
	select {
	case err = <-started:
	case <-overdue.C:
		l.stopProc()
		l.kill()
		err = <-started
		if err == nil {
			err = fmt.Errorf("timeout while waiting for plugin to start")
		}
	case <-ctx.Done():
		l.stopProc()
		l.kill()
		<-started
		return fmt.Errorf("plugin %q: launch: %w", l.cfg.Name, ctx.Err())
	}
	if err != nil {
		return startError(l.cfg, l.path, l.startTimeout, err, l.run)
	}
	return nil
}

// connect takes the started plugin's gRPC connection and makes the
// client shim of cfg.Type on it.
func (l *launcher) connect() (*Client, error) {
	cfg := l.cfg
	conn, done, err := l.t.Conn()
	if err != nil {
		return nil, fmt.Errorf("plugin %q: connecting: %v: %w", cfg.Name, err, ErrPluginTransport)
	}
	c := &Client{
		name:     cfg.Name,
		typ:      cfg.Type,
		t:        l.t,
		conn:     conn,
		proc:     l.run.cmd.Process,
		logger:   l.logger,
		stopProc: l.stopProc,
		sockets:  l.sockets,
		tree: tree{name: cfg.Name, marker: l.marker, pgid: l.run.cmd.Process.Pid,
			confine: cfg.Confine, bare: l.bare, supervised: cfg.Supervised},
	}
	r := remote{name: cfg.Name, done: done, path: cfg.Path, status: l.run.exitWithin}
	switch cfg.Type {
	case TypeEngine:
		c.engine = &engineClient{remote: r, client: pb.NewEngineClient(conn)}
	case TypeNode:
		c.node = &nodeClient{remote: r, client: pb.NewNodeBindingClient(conn)}
	case TypePolicy:
		c.policy = &policyClient{remote: r, client: pb.NewPolicyClient(conn)}
	default:
		return nil, fmt.Errorf("plugin %q: no client for type %q: %w", cfg.Name, cfg.Type, ErrWrongType)
	}
	c.remote = r
	return c, nil
}

// kill SIGKILLs the plugin's process group, if go-plugin has started it.
func (l *launcher) kill() {
	if l.run != nil {
		killGroup(l.run.cmd)
	}
}

// fail ends a launch that went wrong: the exec context, the process group
// and go-plugin's client, then whatever the plugin started (tree.stop),
// and returns err, joined with a *LeftRunningError if something survived.
func (l *launcher) fail(err error) (*Client, error) {
	l.stopProc()
	l.kill()
	l.t.Kill()
	t := tree{name: l.cfg.Name, marker: l.marker, confine: l.cfg.Confine, bare: l.bare, supervised: l.cfg.Supervised}
	if l.run != nil && l.run.cmd.Process != nil {
		t.pgid = l.run.cmd.Process.Pid
	}
	if left := t.stop(); left != nil {
		l.logger.Error("plugin processes left running after a failed launch", "error", left)
		err = errors.Join(err, left)
	}
	removeSockets(l.sockets)
	return nil, err
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
