package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// StartError reports a plugin that was executed but did not complete its
// handshake, with what the host saw of it. It matches ErrHandshake.
type StartError struct {
	// Name is the plugin name, Path the binary executed, Source the path
	// the user named when Path is a copy of it (LaunchConfig.Source).
	Name, Path, Source string
	// What happened, in words: "exited before its handshake", "printed to
	// stdout before its handshake: \"…\"", "wrote a line of 102400 bytes
	// on stdout before its handshake (…)", "answered protocol version 2 in
	// its handshake; this host speaks protocol version 1", "did not
	// complete its handshake within 10s", or go-plugin's own text.
	What string
	// Exit is how the process ended on its own: "exit code 1", "killed by
	// signal SIGSEGV"; empty when it was still running (the host then
	// killed it).
	Exit string
	// Cause, when known, names the underlying problem, e.g. a unix socket
	// path too long to bind.
	Cause string
	// Stderr is the last 4 KiB (at most) of the plugin's stderr, with the
	// host's known secrets redacted.
	Stderr string
	// notPlugin says the binary showed no sign of a handshake (it exited,
	// printed other text, or said nothing in time); Error adds how to check.
	notPlugin bool
}

// Error names the plugin and says what happened, how it ended and what it
// last wrote to stderr.
func (e *StartError) Error() string {
	var b strings.Builder
	if e.Source != "" && e.Source != e.Path {
		fmt.Fprintf(&b, "plugin %q: %s (executed as its verified copy %s) %s", e.Name, e.Source, e.Path, e.What)
	} else {
		fmt.Fprintf(&b, "plugin %q: %s %s", e.Name, e.Path, e.What)
	}
	if e.Exit != "" {
		fmt.Fprintf(&b, " (%s)", e.Exit)
	}
	if e.Cause != "" {
		fmt.Fprintf(&b, "; %s", e.Cause)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		fmt.Fprintf(&b, "; its stderr ends with:\n%s\n", s)
	} else {
		b.WriteString("; it wrote nothing to stderr")
	}
	if e.notPlugin {
		b.WriteString(notPluginHint)
	}
	return b.String() + ": " + ErrHandshake.Error()
}

// notPluginHint follows a start error of a binary that showed no sign of
// being a plugin: it exited, timed out or printed something else before
// any handshake.
const notPluginHint = "; check that the path names an Obversa plugin: one built with the sdk (sdk.ServeEngine, sdk.ServeNode or sdk.ServePolicy) prints its handshake line on stdout as it starts (docs/writing-plugins.md)"

// Is reports whether target is ErrHandshake.
func (e *StartError) Is(target error) bool { return target == ErrHandshake }

// go-plugin reports handshake problems only as text; these are the texts
// of the pinned go-plugin version (client.go), checked by tests.
const (
	gpUnrecognized = "Unrecognized remote plugin message: "
	gpExited       = "plugin exited before we could connect"
	gpTimeout      = "timeout while waiting for plugin to start"
	gpVersion      = "incompatible API version with plugin. Plugin version: "
)

// exitWait bounds the wait for a failed plugin's exit status; go-plugin
// kills the process when the handshake fails, so it comes at once.
const exitWait = 2 * time.Second

// startError turns an error of go-plugin's Client.Start into ours, using
// what the runner saw (nil when the process never started).
func startError(cfg LaunchConfig, path string, timeout time.Duration, err error, run *procRunner) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) || run == nil || run.cmd.Process == nil {
		return fmt.Errorf("plugin %q: executing %s: %w", cfg.Name, path, err)
	}
	e := &StartError{Name: cfg.Name, Path: path, Source: cfg.Source}
	if e.Source == "" && path != cfg.Path {
		e.Source = cfg.Path // Launch executed its own copy
	}
	msg := err.Error()
	<-run.lineDone
	switch {
	case run.longLine > 0:
		e.What = fmt.Sprintf("wrote a line of %d bytes on stdout before its handshake (the handshake line comes first and is at most %d bytes; logs belong on stderr)",
			run.longLine, maxHandshakeBytes)
	case run.foreign:
		e.What = fmt.Sprintf("named the address %q in its handshake, which the host does not dial: a plugin listens on a unix socket or on a loopback address such as 127.0.0.1:PORT (docs/writing-plugins.md)", run.foreignAddr)
	case strings.HasPrefix(msg, gpUnrecognized):
		line, _, _ := strings.Cut(strings.TrimPrefix(msg, gpUnrecognized), "\n")
		if line == "" {
			e.What = "exited before its handshake"
		} else {
			e.What = fmt.Sprintf("printed to stdout before its handshake: %q", line)
		}
		e.notPlugin = true
	case msg == gpExited:
		e.What, e.notPlugin = "exited before its handshake", true
	case strings.HasPrefix(msg, gpVersion):
		v, _, _ := strings.Cut(strings.TrimPrefix(msg, gpVersion), ",")
		e.What = fmt.Sprintf("answered protocol version %s in its handshake; this host speaks protocol version %d", v, ProtocolVersion)
	case msg == gpTimeout:
		e.What, e.notPlugin = fmt.Sprintf("did not complete its handshake within %s (the plugin block's start_timeout, docs/run-file.md)", timeout), true
	default:
		e.What = "failed its handshake: " + msg
	}
	e.Exit = run.exitWithin(exitWait)
	if e.Exit != "" {
		// It ended by itself: what it wrote before may still be on its way
		// through the pipe to the reader that keeps the tail.
		run.stderrEnd(pipeDrainMax + time.Second)
	}
	e.Stderr = run.stderr.String()
	if strings.Contains(e.Stderr, "bind: invalid argument") {
		e.Cause = fmt.Sprintf("it could not bind its unix socket, which happens when the socket path is over %d bytes (the host offered the directory %s in %s)",
			maxSocketPath, socketDirOf(cfg), envUnixSocketDir)
	}
	return e
}
