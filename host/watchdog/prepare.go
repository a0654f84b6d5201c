package watchdog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	hclv2 "github.com/hashicorp/hcl/v2"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/validate"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/internal/runecut"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// PrepareOptions configures Prepare.
type PrepareOptions struct {
	// RunID names the run; empty generates "<UTC time>-<6 hex>".
	RunID string
	// TrustOnFirstUse pins unpinned plugins to their current digest and
	// writes them to the lock file (`obversa run --lock`).
	TrustOnFirstUse bool
	// SkipPluginCheck skips launching each plugin before the run is created.
	SkipPluginCheck bool
	// Logger receives plugin logs of the check; nil discards.
	Logger hclog.Logger
	// Storage and Namespace, when set, replace the run file's
	// storage.directory and storage.namespace (`obversa run --storage`).
	Storage, Namespace string
}

// Prepared is a run that passed every check and has not been written yet.
type Prepared struct {
	RunFile    *hcl.RunFile
	Definition *graph.Definition
	Plan       *plan.Plan
	// Warnings are the run file's warning diagnostics and the warnings the
	// plugins' Configure answered, for the CLI to print before the run
	// starts.
	Warnings hclv2.Diagnostics
	// Verified are, by digest, the stamps of the plugin cache entries
	// Prepare read in full and found to hold their pinned bytes (Pin.Stamp);
	// Supervise hands them to the run's workers (SuperviseOptions.Verified).
	Verified map[string]plugin.FileStamp
}

// Prepare decodes and validates the run file, resolves every plugin's pin
// (run file `sha256`, else obversa.lock.hcl), copies each binary into the
// plugin cache while checking its digest and, where trusted_keys apply,
// its signature (docs/plugins.md; an existing cache entry must hold the same
// bytes), compiles the definition and plan, and launches each plugin once
// from its cache entry (handshake, health, Describe, Configure) unless it
// passed that check before with the same inputs (checkPlugins).
// Nothing of the run is written; the plugin cache is filled, check
// receipts are written and, with TrustOnFirstUse, the lock file written. Errors: *DiagnosticsError for
// the run file, for plugin paths that cannot be run
// (hcl.CheckPluginFiles) and for a config a plugin's Configure rejects
// (placed by validate.ConfigDiagnostics), ErrStorageNotText, ErrUnpinned, ErrPinConflict,
// ErrPluginMissing, *plugin.DigestMismatchError, *plugin.UntrustedError (PLUGIN_UNTRUSTED),
// launch.ErrTrustedKey, launch.ErrSidecar, launch.ErrPluginChanged
// (PLUGIN_CHANGED) for a tampered cache entry, launch errors naming the
// plugin.
func Prepare(ctx context.Context, path string, o PrepareOptions) (*Prepared, error) {
	rf, diags := hcl.DecodeFile(path)
	if diags.HasErrors() {
		return nil, &DiagnosticsError{Diags: diags}
	}
	// A plugin path that cannot be run is the run file's mistake: say
	// where, before anything is read.
	if fd := hcl.CheckPluginFiles(rf); fd.HasErrors() {
		return nil, &DiagnosticsError{Diags: fd}
	}
	if o.Storage != "" {
		if !utf8.ValidString(o.Storage) {
			// Recorded in the plan as JSON text, which holds only UTF-8.
			return nil, fmt.Errorf("%w: --storage %s; a run records its storage directory as JSON text: rename the directory",
				ErrStorageNotText, runecut.Bound(fmt.Sprintf("%q", o.Storage), runecut.EchoBytes))
		}
		abs, err := filepath.Abs(o.Storage)
		if err != nil {
			return nil, err
		}
		rf.Storage.Directory = abs
	}
	if o.Namespace != "" {
		if err := store.ValidID(o.Namespace); err != nil {
			return nil, fmt.Errorf("--namespace: %w", err)
		}
		rf.Storage.Namespace = o.Namespace
	}
	pins, err := Pins(rf, path, o.TrustOnFirstUse, rf.Storage.Directory)
	var ce *CacheCopyError
	if o.Storage != "" && errors.As(err, &ce) {
		ce.Chosen = "--storage"
	}
	if err != nil {
		return nil, err
	}
	id := o.RunID
	if id == "" {
		id = NewRunID(time.Now())
	}
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	digests := make(map[string]string, len(pins))
	verified := map[string]plugin.FileStamp{}
	for name, pin := range pins {
		digests[name] = pin.SHA256
		if pin.Stamp != nil {
			verified[pin.SHA256] = *pin.Stamp
		}
	}
	def, p, err := plan.Compile(rf, id, digests)
	if err != nil {
		return nil, err
	}
	for i := range p.Plugins {
		pl := &p.Plugins[i]
		pin := pins[pl.Name]
		pl.KeyID, pl.Signature = pin.KeyID, pin.Signature
	}
	if !o.SkipPluginCheck {
		warnings, err := checkPlugins(ctx, rf, p, o)
		if err != nil {
			return nil, err
		}
		diags = append(diags, warnings...)
	}
	return &Prepared{RunFile: rf, Definition: def, Plan: p, Warnings: diags, Verified: verified}, nil
}

// checkPlugins launches, side by side, each plugin of p that has no check
// receipt in the storage directory (launch.CheckKey: it passed this
// check before with the same bytes, args, env, config and confinement,
// answering no diagnostics) from its cache entry — handshake, health,
// Describe, Configure — and closes them again. A plugin that passes with
// no diagnostics gets a receipt, so the next run of the same plugin
// launches it only in the worker, which records a later failure to start
// (docs/decisions.md, "A plugin checked once is not launched twice").
// It returns the warnings Configure answered, placed in the run file; a
// config Configure rejects is a *DiagnosticsError, any other failure the
// launch error naming the plugin.
func checkPlugins(ctx context.Context, rf *hcl.RunFile, p *plan.Plan, o PrepareOptions) (hclv2.Diagnostics, error) {
	run := RunOf(p)
	var todo []plan.PluginPlan
	keys := map[string]string{}
	for _, pl := range p.Plugins {
		key := launch.CheckKey(pl, run)
		if !launch.Checked(p.Storage.Directory, key) {
			todo = append(todo, pl)
			keys[pl.Name] = key
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	set, err := launch.Start(ctx, todo, launch.Options{StorageDir: p.Storage.Directory, Fresh: true, Logger: o.Logger, Redact: redactor(Policy(p)), Run: run})
	var ce *launch.ConfigError
	if errors.As(err, &ce) {
		// The plugin rejected its config: show where in the run file.
		return nil, &DiagnosticsError{Diags: validate.ConfigDiagnostics(rf.Plugin(ce.Plugin), ce.Diagnostics)}
	}
	if err != nil {
		return nil, err
	}
	// What the check could not stop is a warning naming the processes,
	// not a refusal.
	diags := validate.LeftRunningDiagnostics(rf, set.Close())
	for _, pl := range todo {
		pd := set.ConfigDiagnostics()[pl.Name]
		if len(pd) > 0 {
			// Warnings are shown at every run: no receipt.
			diags = append(diags, validate.ConfigDiagnostics(rf.Plugin(pl.Name), pd)...)
			continue
		}
		// A receipt that cannot be written only costs the next run a check.
		_ = launch.RecordChecked(p.Storage.Directory, keys[pl.Name])
	}
	return diags, nil
}

// pinError adds to a CheckSource error what the user should do.
func pinError(err error, rf *hcl.RunFile, pl *hcl.Plugin, runFile string) error {
	var mismatch *plugin.DigestMismatchError
	var notRegular *plugin.NotRegularError
	switch {
	case errors.As(err, &notRegular):
		return fmt.Errorf("%w: plugin %q: path %s is %s; `path` in %s must name the plugin binary, a regular file",
			ErrNotRegular, pl.Name, pl.Path, notRegular.Kind, rf.Filename)
	case errors.Is(err, fs.ErrNotExist) && missing(pl.Path):
		return fmt.Errorf("%w: plugin %q: %s does not exist; build it (make build) or fix `path` in %s", ErrPluginMissing, pl.Name, pl.Path, rf.Filename)
	case errors.Is(err, fs.ErrNotExist):
		// The binary is there; what was not found is on the way to the
		// plugin cache under the storage directory.
		return &CacheCopyError{Plugin: pl.Name, Path: pl.Path, Chosen: "`storage.directory` in " + rf.Filename, Err: err}
	case underStorage(err, rf.Storage.Directory, pl.Path) != nil:
		// Full, read-only or not ours: the storage directory's fault.
		return &CacheCopyError{Plugin: pl.Name, Path: pl.Path, Chosen: "`storage.directory` in " + rf.Filename,
			Err: underStorage(err, rf.Storage.Directory, pl.Path)}
	case errors.As(err, &mismatch) && pl.SHA256 != "":
		return fmt.Errorf("%w; if the new binary is trusted, set sha256 = %q in %s, or remove sha256 there and re-pin with `obversa plugin lock --upgrade %s`",
			err, mismatch.Actual, rf.Filename, runFile)
	case errors.As(err, &mismatch):
		return fmt.Errorf("%w; if the new binary is trusted, re-pin it with `obversa plugin lock --upgrade %s`", err, runFile)
	}
	return err
}

// CacheCopyError is a plugin binary that is there but could not be
// copied into the plugin cache under the storage directory: a directory
// on the way does not exist, or the storage directory's file system is
// full, read-only or not writable by this user. Chosen names what chose
// the storage directory (`storage.directory` in the run file, or
// --storage), the place to fix.
type CacheCopyError struct {
	// Plugin and Path name the plugin and its binary.
	Plugin, Path string
	// Chosen names what chose the storage directory.
	Chosen string
	// Err is the copy's error: one matching fs.ErrNotExist, or the
	// *fs.PathError or *os.LinkError of a file under the storage
	// directory.
	Err error
}

// Error names the plugin, its binary, the cause and what to do.
func (e *CacheCopyError) Error() string {
	return fmt.Sprintf("plugin %q: its binary %s could not be copied into the plugin cache: %v; %s", e.Plugin, e.Path, e.Err, StorageAdvice(e.Err, e.Chosen))
}

// Unwrap returns the copy's error.
func (e *CacheCopyError) Unwrap() error { return e.Err }

// missing reports whether path itself does not exist (not some other
// file an operation on it needed).
func missing(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// NewRunID returns a sortable run id: "<UTC yyyymmddThhmmss>-<6 hex>".
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// Policy returns the record policy of a plan, with the known secrets read
// from the environment variables the plan names (values are never stored),
// each with its variable's name for refusals to name.
func Policy(p *plan.Plan) store.Policy {
	pol := store.Policy{
		MaxEventPayloadBytes:        p.Storage.MaxEventPayloadBytes,
		MaxBatchBytes:               p.Storage.MaxBatchBytes,
		MaxArtifactBytes:            p.Storage.MaxArtifactBytes,
		MaxTotalArtifactBytesPerRun: p.Storage.MaxTotalArtifactBytesPerRun,
	}
	for _, name := range p.Storage.KnownSecretsFromEnv {
		if v := os.Getenv(name); v != "" {
			pol.KnownSecrets = append(pol.KnownSecrets, v)
			pol.KnownSecretSources = append(pol.KnownSecretSources, name)
		}
	}
	return pol
}

// Create writes the prepared run (whose plugins Prepare placed in the
// cache) into b, the backend of the plan's namespace (the file backend at
// the plan's storage directory, or a database): the run and
// graph:run-started carrying the definition and plan with their digests.
// It takes the run's ownership before appending and returns it, for
// Supervise (SuperviseOptions.Owner). graph:run-started is exempt from
// max_event_payload_bytes: it must hold the whole definition. A failure
// after the run was created leaves no directory beside the record; in a
// database the run's empty row stays (its id cannot be used again).
func Create(ctx context.Context, b store.Backend, pr *Prepared) (store.Record, store.Ownership, error) {
	// Prepare placed every plugin in the cache; the worker re-verifies
	// each entry before executing it.
	pol := Policy(pr.Plan)
	pol.MaxEventPayloadBytes = 0
	run, err := b.CreateRun(ctx, pr.Plan.RunID, pol)
	if err != nil {
		if fb, ok := b.(*store.Store); ok && !errors.Is(err, store.ErrRunExists) {
			// A directory this call made and could not fill (a full
			// device) holds nothing: leave no run behind.
			_ = os.RemoveAll(fb.RunDir(pr.Plan.RunID))
		}
		return nil, nil, err
	}
	owner, err := run.Lock(ctx)
	if err != nil {
		run.Close()
		_ = os.RemoveAll(run.Dir())
		return nil, nil, err
	}
	// Nothing was recorded on a failure below: leave no run behind that
	// could only be refused again.
	discard := func() {
		owner.Release()
		run.Close()
		_ = os.RemoveAll(run.Dir())
	}
	rs, err := plan.NewRunStarted(pr.RunFile.Filename, pr.Definition, pr.Plan, time.Now())
	if err != nil {
		discard()
		return nil, nil, err
	}
	if _, err := run.Append(ctx, 0, store.NewEvent{Type: graph.EventRunStarted, Data: rs}); err != nil {
		discard()
		return nil, nil, fmt.Errorf("the record refused the run's definition and plan (nothing was written): %w", err)
	}
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.AfterAppend, graph.EventRunStarted)
	}
	return run, owner, nil
}

// RunOf is where the plugins of the run planned by p are confined
// (docs/confinement.md).
func RunOf(p *plan.Plan) *launch.Run {
	return &launch.Run{WorkspaceRoot: p.Workspace.Root, Namespace: p.Namespace, RunID: p.RunID}
}
