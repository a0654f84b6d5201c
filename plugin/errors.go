package plugin

import (
	"errors"
	"fmt"
)

// Errors returned by this package. Typed failures reported by a plugin are
// *Failure values, never one of these.
var (
	// ErrPluginMissing is returned by LaunchWith when the binary does not exist
	// at LaunchConfig.Path.
	ErrPluginMissing = errors.New("plugin binary missing")

	// ErrDigestMismatch is matched by *DigestMismatchError: the binary's
	// SHA-256 differs from the pinned digest, so it was not executed
	// (docs/plugins.md).
	ErrDigestMismatch = errors.New("plugin digest mismatch")

	// ErrLaunchConfig is returned by LaunchWith for an invalid LaunchConfig: an
	// empty Name, an unknown Type, a relative Path, or a SHA256 that is not
	// 64 lower-case hex digits.
	ErrLaunchConfig = errors.New("invalid plugin launch config")

	// ErrHandshake is returned by LaunchWith when the process started but the
	// go-plugin handshake failed: it printed something else on stdout, exited
	// first, did not answer within the start timeout, or speaks an
	// incompatible protocol.
	ErrHandshake = errors.New("plugin handshake failed")

	// ErrSocketDir is wrapped by the error of a launch that found no
	// directory for plugin sockets: /tmp/obversa-<uid> (or
	// $XDG_RUNTIME_DIR/obversa) is not a directory owned by this user with
	// mode 0700 and cannot be made one (docs/decisions.md, "Plugin socket
	// directories").
	ErrSocketDir = errors.New("no directory for plugin sockets")

	// ErrWrongType is returned when a plugin is used as a type it was not
	// launched as or does not serve.
	ErrWrongType = errors.New("plugin does not serve this type")

	// ErrPluginTransport wraps a failure to talk to the plugin over gRPC that
	// is not a typed failure, a cancelled request or an oversize message.
	ErrPluginTransport = errors.New("plugin transport error")

	// ErrPluginExited is returned when a call failed because the plugin
	// process exited (an *ExitedError says which and how). Errors wrapping
	// it also wrap ErrPluginTransport. A request cancelled by its own
	// context wraps the context's error instead.
	ErrPluginExited = errors.New("plugin process exited")

	// ErrNotServing is returned by Client.Health when the plugin answers
	// with a status other than SERVING.
	ErrNotServing = errors.New("plugin health is not SERVING")

	// ErrProtocol is returned when a plugin's answer violates the protocol:
	// an invalid terminal result, a stream that ends without a terminal
	// message, an unknown enum value where one is required, or invalid JSON.
	ErrProtocol = errors.New("plugin protocol violation")

	// ErrMessageTooLarge is returned when a request or response exceeds
	// MaxMessageBytes.
	ErrMessageTooLarge = errors.New("plugin message too large")

	// ErrInvalidRequest is returned, before anything is sent, for a request
	// the host built wrongly (an unknown Purpose, a string field that is
	// not valid UTF-8). The plugin never saw it: a definite failure of
	// that call alone.
	ErrInvalidRequest = errors.New("invalid plugin request")

	// ErrServeConfig is returned by Serve when there is nothing to serve.
	ErrServeConfig = errors.New("invalid plugin serve config")
	// ErrLeftRunning is wrapped by the *LeftRunningError Client.Close
	// returns when a process the plugin started survived the stop.
	ErrLeftRunning = errors.New("plugin processes left running")
)

// DigestMismatchError reports a plugin binary whose SHA-256 differs from the
// pinned digest. LaunchWith returns it before executing anything.
type DigestMismatchError struct {
	// Name is the plugin name from the run file.
	Name string
	// Path is the binary that was hashed.
	Path string
	// Expected and Actual are lower-case hex SHA-256 digests.
	Expected string
	Actual   string
}

// Error names the plugin, the path and both digests.
func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("plugin %q: binary %s has sha256 %s, expected %s; refusing to launch it",
		e.Name, e.Path, e.Actual, e.Expected)
}

// Is reports whether target is ErrDigestMismatch.
func (e *DigestMismatchError) Is(target error) bool {
	return target == ErrDigestMismatch
}

// ExitedError is the error of a call that failed because the plugin
// process exited under it: which plugin, the binary it ran, and how it
// ended. It matches ErrPluginExited and ErrPluginTransport.
type ExitedError struct {
	// Name is the plugin name from the run file.
	Name string
	// Path is the binary the process ran (the plugin cache's copy in a
	// run); "" when unknown.
	Path string
	// Method is the call that broke off ("Run", "Invoke", ...).
	Method string
	// Status is how the process ended: "exit code N", "killed by signal
	// SIGKILL"; "" when the host killed it or it could not be told.
	Status string
}

// Error says that the plugin died, naming it, its binary and its end.
func (e *ExitedError) Error() string {
	s := fmt.Sprintf("plugin %q", e.Name)
	if e.Path != "" {
		s += " (" + e.Path + ")"
	}
	s += " died during " + e.Method
	if e.Status != "" {
		s += ": " + e.Status
	}
	return s
}

// Unwrap returns ErrPluginExited and ErrPluginTransport.
func (e *ExitedError) Unwrap() []error { return []error{ErrPluginExited, ErrPluginTransport} }
