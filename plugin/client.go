package plugin

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

// closeGrace bounds each stage of Client.Close: the graceful go-plugin
// shutdown, then the cleanup after a forced kill.
const closeGrace = 5 * time.Second

// Client is a running plugin process started by LaunchWith. It is safe for
// concurrent use; Close ends it.
type Client struct {
	name   string
	typ    Type
	t      Transport
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
	// sockets is the plugin's socket directory, removed by Close.
	sockets string
	// tree is what the launch may have started, stopped by Close.
	tree tree
	// closeErr is what the first Close found left running.
	closeErr error
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
func (c *Client) Exited() bool { return c.t.Exited() }

// Close stops the plugin: gracefully through go-plugin (its controller's
// Shutdown, then up to 2 s for the process to exit), then by SIGKILL. Each
// stage is bounded by 5 s so that a hung plugin cannot hang the host; if
// cleanup is still blocked after the kill (a child of the plugin holding its
// stderr open), Close logs it and goes on. Then it stops everything the
// plugin started, wherever it moved (docs/plugins.md#stopping-a-plugin):
// the processes carrying the launch's LaunchEnv marker and their
// descendants (frozen, SIGTERM, 2 s, SIGKILL; skipped when
// LaunchConfig.Supervised), the plugin's process group and, confined, its
// cgroup, and removes the plugin's socket directory. It returns nil when none is left, else a *LeftRunningError
// (ErrLeftRunning) naming the survivors, also logged. Close is idempotent:
// later calls return the first call's result.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.stopPlugin()
		c.stopProc()
		if c.tmpDir != "" {
			_ = os.RemoveAll(c.tmpDir)
		}
		if err := c.tree.stop(); err != nil {
			c.logger.Error("plugin processes left running", "error", err)
			c.closeErr = err
		}
		removeSockets(c.sockets)
	})
	return c.closeErr
}

// stopPlugin stops the plugin process itself: go-plugin's graceful stop,
// then SIGKILL, each bounded by closeGrace.
func (c *Client) stopPlugin() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.t.Kill()
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
}
