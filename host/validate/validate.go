package validate

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	hclv2 "github.com/hashicorp/hcl/v2"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/internal/runecut"
	"github.com/obversa/obversa/plugin"
)

// Options configures File.
type Options struct {
	// Plugins launches each pinned plugin and runs its Configure on the
	// block's config (`obversa validate --plugins`). false = no plugin is
	// executed.
	Plugins bool
	// Logger receives the launched plugins' logs; nil discards.
	Logger hclog.Logger
}

// File checks the run file at path (see the package documentation) and
// returns it decoded — nil when decoding failed — with every diagnostic
// found. The run file is valid for `obversa run` when the diagnostics hold
// no error. ctx bounds the plugin launches.
func File(ctx context.Context, path string, o Options) (*hcl.RunFile, hclv2.Diagnostics) {
	rf, diags := hcl.DecodeFile(path)
	if diags.HasErrors() {
		return nil, diags
	}
	lf, ld := hcl.DecodeLockFile(hcl.LockFilePath(path))
	diags = append(diags, ld...)
	if ld.HasErrors() {
		return rf, append(diags, hcl.CheckPluginFiles(rf)...)
	}
	diags = append(diags, checkTrustedKeys(rf)...)
	cache := ""
	if o.Plugins {
		dir, err := os.MkdirTemp("", "obversa-validate-")
		if err != nil {
			return rf, append(diags, &hclv2.Diagnostic{Severity: hclv2.DiagError, Summary: "Cannot check the plugins",
				Detail: fmt.Sprintf("A temporary plugin cache could not be made: %v. Check TMPDIR, or validate without --plugins.", err)})
		}
		defer os.RemoveAll(dir)
		cache = dir
	}
	for i := range rf.Plugins {
		pl := &rf.Plugins[i]
		if d := hcl.CheckPluginFile(rf, pl); d != nil {
			diags = append(diags, d)
			continue
		}
		if d := hcl.CheckPin(rf, lf, path, pl); d != nil {
			diags = append(diags, d)
		}
		keys, err := launch.TrustedKeys(rf, pl)
		if err != nil {
			continue // checkTrustedKeys said which entry
		}
		expected := pinOf(pl, lf)
		if _, inLock := lf.Lookup(pl.Name); expected == "" && pl.SHA256 == "" && !inLock && len(keys) > 0 {
			// Unpinned under trusted_keys: `obversa run --lock` and
			// `obversa plugin lock` pin it only when its signature
			// verifies, as run checks it; check it here too.
			_, d := checkBytes(rf, pl, "", path, "")
			diags = append(diags, d...)
			continue
		}
		if expected == "" {
			continue // unpinned, or pinned twice differently: CheckPin said so
		}
		src, d := checkBytes(rf, pl, expected, path, cache)
		diags = append(diags, d...)
		if d.HasErrors() || !o.Plugins {
			continue
		}
		diags = append(diags, configure(ctx, rf, pl, src.SHA256, cache, o.Logger)...)
	}
	return rf, append(diags, checkRecordable(rf)...)
}

// pinOf is the digest a plugin is pinned to: the run file's sha256, else
// the lock file's; "" when unpinned or when the two disagree (CheckPins
// reports both).
func pinOf(pl *hcl.Plugin, lf *hcl.LockFile) string {
	locked, inLock := lf.Lookup(pl.Name)
	switch {
	case pl.SHA256 != "" && inLock && locked.SHA256 != pl.SHA256:
		return ""
	case pl.SHA256 != "":
		return pl.SHA256
	case inLock:
		return locked.SHA256
	}
	return ""
}

// checkBytes reads a plugin binary once, as a run would: its digest must
// be expected and, where trusted_keys apply, its signature must verify.
// With cache set, the verified bytes are placed in that plugin cache.
func checkBytes(rf *hcl.RunFile, pl *hcl.Plugin, expected, runFile, cache string) (launch.Source, hclv2.Diagnostics) {
	keys, err := launch.TrustedKeys(rf, pl)
	if err != nil {
		return launch.Source{}, errorAt(pl.Ranges.Block, "Invalid trusted key",
			err.Error()+".") // the error names the entry's place and what an entry may be
	}
	src, err := launch.CheckSource(pl.Name, pl.Path, expected, keys, cache)
	var mismatch *plugin.DigestMismatchError
	switch {
	case err == nil:
		return src, nil
	case errors.As(err, &mismatch) && pl.SHA256 != "":
		return src, errorAt(pl.Ranges.SHA256, "Plugin binary differs from its pin",
			fmt.Sprintf("The binary of plugin %q has sha256 %s, but sha256 here pins %s, so `obversa run` refuses it. If the new binary is trusted, set sha256 = %q; otherwise restore the pinned binary.",
				pl.Name, mismatch.Actual, expected, mismatch.Actual))
	case errors.As(err, &mismatch):
		return src, errorAt(pl.Ranges.Path, "Plugin binary differs from its pin",
			fmt.Sprintf("The binary of plugin %q has sha256 %s, but %s pins %s, so `obversa run` refuses it. If the new binary is trusted, re-pin it with `obversa plugin lock --upgrade %s`; otherwise restore the pinned binary.",
				pl.Name, mismatch.Actual, hcl.LockFilePath(runFile), expected, runFile))
	case errors.Is(err, plugin.ErrUntrusted):
		return src, errorAt(pl.Ranges.Path, "Plugin signature is not trusted",
			fmt.Sprintf("%v; or add the key that signed it to trusted_keys.", err))
	case errors.Is(err, launch.ErrSidecar):
		return src, errorAt(pl.Ranges.Path, "Plugin path names a signature or checksum file",
			fmt.Sprintf("The path of plugin %q names a signature, key or checksum file, which is never executed: %s. Point path at the binary itself.", pl.Name, rf.DisplayPath(pl.Path)))
	default:
		return src, errorAt(pl.Ranges.Path, "Cannot read plugin binary",
			fmt.Sprintf("%v. Check the file and its permissions.", err))
	}
}

// configure launches one plugin from the cache, as a run would, and runs
// its Configure on the block's config.
func configure(ctx context.Context, rf *hcl.RunFile, pl *hcl.Plugin, sha256, cache string, logger hclog.Logger) hclv2.Diagnostics {
	pp, err := plan.Plugin(pl, sha256)
	if err != nil {
		return errorAt(pl.Ranges.Config, "Invalid plugin config", fmt.Sprintf("%v.", err))
	}
	set, err := launch.Start(ctx, []plan.PluginPlan{pp}, launch.Options{StorageDir: cache, Fresh: true, Logger: logger,
		Run: &launch.Run{WorkspaceRoot: rf.Workspace.Root, Namespace: rf.Storage.Namespace}})
	var ce *launch.ConfigError
	switch {
	case errors.As(err, &ce):
		return ConfigDiagnostics(pl, ce.Diagnostics)
	case errors.Is(err, launch.ErrType), errors.Is(err, plugin.ErrWrongType):
		return errorAt(pl.Ranges.Block, "Plugin does not serve its declared type",
			fmt.Sprintf("%v. Change type to one the plugin serves (`obversa plugin describe %s` lists them), or use another binary.", err, rf.DisplayPath(pl.Path)))
	case err != nil:
		return errorAt(pl.Ranges.Path, "Plugin failed to start",
			fmt.Sprintf("%v. `obversa run` refuses this plugin the same way until it starts.", err))
	}
	diags := ConfigDiagnostics(pl, set.ConfigDiagnostics()[pl.Name])
	return append(diags, LeftRunningDiagnostics(rf, set.Close())...)
}

// LeftRunningDiagnostics turns what closing a checked plugin left running
// (the *plugin.LeftRunningError of each plugin in err, which may be
// joined) into one warning at each plugin's path; any other error in err
// becomes a warning without a place. nil err gives none.
func LeftRunningDiagnostics(rf *hcl.RunFile, err error) hclv2.Diagnostics {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out hclv2.Diagnostics
	for _, e := range errs {
		d := &hclv2.Diagnostic{Severity: hclv2.DiagWarning, Summary: "Plugin left processes running",
			Detail: fmt.Sprintf("%v. Stop them by hand (kill -9 PID); they may hold files or ports of the run.", e)}
		var left *plugin.LeftRunningError
		if errors.As(e, &left) {
			if pl := rf.Plugin(left.Plugin); pl != nil {
				d.Subject = pl.Ranges.Path.Ptr()
			}
		}
		out = append(out, d)
	}
	return out
}

// MaxPluginDiagnostics is how many of one plugin's Configure diagnostics
// ConfigDiagnostics places; the rest are counted in one more diagnostic,
// so a plugin cannot flood a terminal or a CI log (docs/decisions.md,
// "A plugin's diagnostics are capped").
const MaxPluginDiagnostics = 100

// MaxDiagnosticBytes bounds the summary and the detail of each diagnostic
// a plugin answers, in bytes; longer text is cut at a rune boundary and
// says how many bytes were left out.
const MaxDiagnosticBytes = 4096

// ConfigDiagnostics places the diagnostics a plugin's Configure answered
// in the run file: each at the config attribute its attribute path names
// (hcl.Plugin.ConfigRange), or at the config value when the path is empty
// or not written as constant objects and lists. It places the first
// MaxPluginDiagnostics, each summary and detail cut to
// MaxDiagnosticBytes, and then, when there were more, one diagnostic
// "… and N more diagnostics from plugin X" (an error when any left out
// is one) whose Extra is hcl.Omitted(N).
func ConfigDiagnostics(pl *hcl.Plugin, ds []plugin.Diagnostic) hclv2.Diagnostics {
	var out hclv2.Diagnostics
	for _, d := range ds[:min(len(ds), MaxPluginDiagnostics)] {
		rng, _ := pl.ConfigRange(d.Attribute)
		about := "its config"
		if d.Attribute != "" {
			about = "config." + clip(d.Attribute)
		}
		detail := fmt.Sprintf("Plugin %q reports this about %s when configured.", pl.Name, about)
		if d.Detail != "" {
			detail += " " + clip(d.Detail)
		}
		sev := hclv2.DiagError
		if d.Severity == plugin.SeverityWarning {
			sev = hclv2.DiagWarning
		}
		out = append(out, &hclv2.Diagnostic{Severity: sev, Summary: clip(d.Summary), Detail: detail, Subject: rng.Ptr()})
	}
	if len(ds) <= MaxPluginDiagnostics {
		return out
	}
	rest := ds[MaxPluginDiagnostics:]
	sev := hclv2.DiagWarning
	for _, d := range rest {
		if d.Severity != plugin.SeverityWarning {
			sev = hclv2.DiagError
			break
		}
	}
	rng, _ := pl.ConfigRange("")
	return append(out, &hclv2.Diagnostic{Severity: sev,
		Summary: fmt.Sprintf("… and %d more diagnostics from plugin %q", len(rest), pl.Name),
		Detail: fmt.Sprintf("Plugin %q answered %d diagnostics when configured; the first %d are shown. Fix those and validate again.",
			pl.Name, len(ds), MaxPluginDiagnostics),
		Subject: rng.Ptr(), Extra: hcl.Omitted(len(rest))})
}

// clip is s cut to MaxDiagnosticBytes at a rune boundary, saying how many
// bytes it left out.
func clip(s string) string {
	if len(s) <= MaxDiagnosticBytes {
		return s
	}
	p := runecut.Prefix(s, MaxDiagnosticBytes)
	return fmt.Sprintf("%s… (%d more bytes)", p, len(s)-len(p))
}

// errorAt is one error diagnostic at rng.
func errorAt(rng hclv2.Range, summary, detail string) hclv2.Diagnostics {
	return hclv2.Diagnostics{{Severity: hclv2.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}}
}

// checkTrustedKeys loads every entry of the run file's trusted_keys and of
// each plugin's, as plugin lock and run do, and reports one that is
// neither a minisign public key nor a readable .pub file at the entry, for
// every plugin, pinned or not: a run refuses them all the same.
func checkTrustedKeys(rf *hcl.RunFile) hclv2.Diagnostics {
	var diags hclv2.Diagnostics
	check := func(entries []string, ranges []hclv2.Range, whose string) {
		for i, e := range entries {
			if _, err := launch.LoadPublicKey(e, rf.Dir); err != nil && i < len(ranges) {
				diags = append(diags, errorAt(ranges[i], "Invalid trusted key",
					fmt.Sprintf("%v (in %s). An entry of trusted_keys is a minisign public key (its RW… line, as `obversa plugin keygen` prints it) or the path of a .pub file, relative to the run file; `obversa plugin lock` and `obversa run` refuse the run until it is fixed.", err, whose))[0])
			}
		}
	}
	check(rf.TrustedKeys, rf.TrustedKeyRanges, "the run file's trusted_keys")
	for i := range rf.Plugins {
		pl := &rf.Plugins[i]
		check(pl.TrustedKeys, pl.Ranges.TrustedKeys, fmt.Sprintf("plugin %q's trusted_keys", pl.Name))
	}
	return diags
}
