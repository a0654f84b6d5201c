package plugin

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/plugin/confine"
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
	// Source is the path the user named for the binary — the run file's
	// plugin path, a command's argument — when Path is a copy of it (the
	// plugin cache): errors name both. Empty = Path is what the user named.
	Source string
	// SHA256 is the expected digest of the binary as 64 lower-case hex
	// digits; required. A binary with another digest is never executed.
	SHA256 string
	// Verified says that Path is a content-addressed copy whose bytes were
	// already checked against SHA256 by this host (CopyBinary, or the run's
	// plugin cache); LaunchWith then executes it without reading it again.
	// false = LaunchWith copies Path into CacheDir with CopyBinary first and
	// executes the copy, never Path itself.
	Verified bool
	// File, when set, is Path opened, with its bytes verified
	// (OpenCached). Every launch executes this open file rather than the
	// path, so a file renamed over Path after the check is not what runs:
	// unconfined, the plugin is its descriptor 3 and the kernel executes
	// /proc/self/fd/3; confined, the shim executes /proc/self/fd/4. A
	// binary executed so keeps descriptor 3 open, unconfined; a "#!"
	// script must, confined or not, since its interpreter opens the script
	// by that name (docs/decisions.md, "Plugins run from the verified
	// file"). Elsewhere than Linux, Path is executed. The caller closes it
	// once LaunchWith has returned.
	File *os.File
	// CacheDir is where LaunchWith places the verified copy when Verified is
	// false; empty = a new private directory in this process's socket
	// directory (docs/decisions.md, "Plugin socket directories"), removed
	// when the Client closes or, after a crash, by the next sweep.
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
	// StartTimeout bounds the wait for the handshake; 0 =
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Confine, when set, starts the plugin confined (plugin/confine):
	// through this running binary as the shim, which joins the plugin's
	// cgroup, applies the Landlock rules (with the plugin's socket
	// directory writable) and executes exactly the verified binary. The
	// caller releases it once the Client is closed. nil = unconfined.
	Confine *confine.Prepared
	// Supervised says that a supervisor outside this process stops
	// whatever the plugin starts once it is done (a run's worker: the
	// watchdog stops every process carrying the run's owner marker), so
	// Close stops only the plugin's process group and cgroup and skips
	// the scan of /proc for the launch's marker. false = Close finds and
	// stops every descendant itself (docs/plugins.md#stopping-a-plugin).
	Supervised bool
	// GroupTag, when not "", is put in the name of the launch's bare
	// cgroup (made when Confine makes no v2 group), so that
	// StopTaggedGroups(GroupTag) finds it: a run's launches carry a tag
	// from the run's owner marker, which its keeper knows.
	GroupTag string
}

// validate checks what LaunchWith needs of cfg: a name, a known type, an
// absolute path and a digest of 64 lower-case hex digits; an error wraps
// ErrLaunchConfig and names the field.
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

// isHexDigest reports whether s is a SHA-256 digest in lower-case hex.
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
