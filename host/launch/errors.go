package launch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/obversa/obversa/plugin"
)

var (
	// ErrConfig is matched by *ConfigError: a plugin's Configure answered
	// with an error-severity diagnostic.
	ErrConfig = errors.New("plugin configuration refused")
	// ErrPluginChanged is returned when a cached binary no longer matches
	// its digest, or is missing. Code PLUGIN_CHANGED (docs/cli.md#output-and-exit-status).
	ErrPluginChanged = errors.New("PLUGIN_CHANGED")
	// ErrType is returned when a plugin does not serve the type the run file
	// declares.
	ErrType = errors.New("plugin does not serve its declared type")
	// ErrTrustedKey is returned by LoadPublicKey and TrustedKeys for a
	// trusted_keys entry that is neither a minisign public key nor a
	// readable .pub file.
	ErrTrustedKey = errors.New("invalid trusted key")
	// ErrSidecar is returned by CheckSource for a path that names a
	// signature, key or checksum file: such a file is never executed.
	ErrSidecar = errors.New("not a plugin binary")
	// ErrInstall is returned by Install for a source it cannot install: no
	// or several plugin binaries, an unsafe archive, a binary for another
	// platform, a signed name that differs from the file name, a checksum
	// sidecar that disagrees, or a version already installed with other
	// bytes.
	ErrInstall = errors.New("cannot install plugin")
	// ErrStart is matched by every failure of a launched plugin's
	// greeting (health check, Describe, Configure: an error, a crash, no
	// answer in time) besides the more precise ErrType, *ConfigError and
	// plugin.ErrNotServing it may also wrap. Code PLUGIN_START_FAILED
	// (docs/cli.md#output-and-exit-status).
	ErrStart = errors.New("plugin failed to start")
)

// ConfigError is returned by Start when a plugin's Configure answers with
// at least one error-severity diagnostic. It matches ErrConfig. The CLI
// shows each diagnostic at its place in the plugin's config
// (hcl.Plugin.ConfigRange).
type ConfigError struct {
	// Plugin is the plugin's name in the run file.
	Plugin string
	// Diagnostics is everything Configure answered, warnings included, in
	// its order.
	Diagnostics []plugin.Diagnostic
}

// Error lists the error diagnostics on one line, each with its attribute
// path ("config.<attribute>: summary (detail)").
func (e *ConfigError) Error() string {
	var problems []string
	for _, d := range e.Diagnostics {
		if d.Severity != plugin.SeverityError {
			continue
		}
		msg := d.Summary
		if d.Attribute != "" {
			msg = "config." + d.Attribute + ": " + msg
		}
		if d.Detail != "" {
			msg += " (" + d.Detail + ")"
		}
		problems = append(problems, msg)
	}
	return fmt.Sprintf("%v: plugin %q: %s", ErrConfig, e.Plugin, strings.Join(problems, "; "))
}

// Is reports whether target is ErrConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }
