package hcl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	hclv2 "github.com/hashicorp/hcl/v2"

	"github.com/obversa/obversa/internal/pathtree"
	"github.com/obversa/obversa/internal/regfile"
	"github.com/obversa/obversa/internal/shellquote"
)

// CheckPluginFiles diagnoses plugin paths that cannot be run, at the path
// value: a path that does not exist, one that is not a regular file (a
// directory, device, pipe or socket), and a file no one may execute. It
// looks at each path with stat only and never opens it, so a pipe or a
// device cannot block it. Run it after Decode succeeded; `obversa
// validate`, `obversa plugin lock` and `obversa run` do.
func CheckPluginFiles(rf *RunFile) hclv2.Diagnostics {
	var diags hclv2.Diagnostics
	for i := range rf.Plugins {
		if d := CheckPluginFile(rf, &rf.Plugins[i]); d != nil {
			diags = append(diags, d)
		}
	}
	return diags
}

// CheckPluginFile is CheckPluginFiles for one plugin of rf: nil when its
// path can be run.
func CheckPluginFile(rf *RunFile, p *Plugin) *hclv2.Diagnostic {
	at := func(summary, detail string) *hclv2.Diagnostic {
		return &hclv2.Diagnostic{Severity: hclv2.DiagError, Summary: summary, Detail: detail, Subject: p.Ranges.Path.Ptr()}
	}
	shown := rf.DisplayPath(p.Path)
	fi, err := os.Stat(p.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return at("Plugin binary not found",
			fmt.Sprintf("The binary of plugin %q does not exist: %s (path is relative to the run file's directory). Build it — `make build` puts the bundled plugins in bin/ — or fix path.", p.Name, shown))
	case err != nil:
		return at("Cannot examine plugin binary",
			fmt.Sprintf("The binary of plugin %q cannot be examined (%v): %s. Check the path and the permissions of its directories.", p.Name, unwrapPathError(err), shown))
	case !fi.Mode().IsRegular():
		return at("Plugin path is not a regular file",
			fmt.Sprintf("The path of plugin %q is %s, not a file: %q. Its path must name the plugin's executable itself.", p.Name, regfile.Kind(fi.Mode()), shown))
	case fi.Mode().Perm()&0o111 == 0:
		return at("Plugin binary is not executable",
			fmt.Sprintf("The binary of plugin %q is not executable (mode %s): %s. Make it executable with `chmod +x %s`.", p.Name, fi.Mode().Perm(), shown, shown))
	}
	return nil
}

// DisplayPath shows a path of the run file (absolute, as decoded)
// relative to the run file's directory when it lies inside it, as a
// person wrote it; otherwise absolute.
func (rf *RunFile) DisplayPath(path string) string {
	if rel, err := filepath.Rel(rf.Dir, path); err == nil && pathtree.Within(rf.Dir, path) {
		return rel
	}
	return path
}

// CheckPins diagnoses each plugin's pin against the lock file lf (as
// decoded from LockFilePath(runFile)): a run file sha256 the lock file
// contradicts is an error at the sha256 value; a plugin pinned in neither
// place is a warning at the plugin block, since `obversa run` refuses it
// (unless --lock) and `obversa plugin lock` pins it. A lock entry whose
// name is close to an unpinned plugin's is suggested as a rename. Whether
// the binary still has its pinned digest needs its bytes: the host checks
// that.
func CheckPins(rf *RunFile, lf *LockFile, runFile string) hclv2.Diagnostics {
	var diags hclv2.Diagnostics
	for i := range rf.Plugins {
		if d := CheckPin(rf, lf, runFile, &rf.Plugins[i]); d != nil {
			diags = append(diags, d)
		}
	}
	return diags
}

// CheckPin is CheckPins for one plugin of rf: nil when it is pinned once
// or twice alike.
func CheckPin(rf *RunFile, lf *LockFile, runFile string, p *Plugin) *hclv2.Diagnostic {
	lockPath := LockFilePath(runFile)
	locked, inLock := lf.Lookup(p.Name)
	switch {
	case p.SHA256 != "" && inLock && locked.SHA256 != p.SHA256:
		return &hclv2.Diagnostic{Severity: hclv2.DiagError, Summary: "Plugin pins disagree",
			Detail: fmt.Sprintf("Plugin %q sets sha256 %s here, but %s pins %s. Remove one of them, or re-pin with `obversa plugin lock --upgrade %s`.",
				p.Name, p.SHA256, lockPath, locked.SHA256, shellquote.Quote(runFile)),
			Subject: p.Ranges.SHA256.Ptr()}
	case p.SHA256 == "" && !inLock:
		detail := fmt.Sprintf("Plugin %q has no sha256 here and no entry in %s, so `obversa run` refuses it. Pin it with `obversa plugin lock %s` (or `obversa run --lock` to trust it on first use).",
			p.Name, lockPath, shellquote.Quote(runFile))
		var orphans []string // lock entries no plugin of the run file has
		for _, l := range lf.Plugins {
			if rf.Plugin(l.Name) == nil {
				orphans = append(orphans, l.Name)
			}
		}
		if s := suggest(p.Name, orphans); s != "" {
			detail += fmt.Sprintf(" The lock file pins a plugin %q that this file does not declare: if %q was renamed, lock again.", s, s)
		}
		if note := LinkedLockNote(runFile); note != "" {
			detail += " Note: " + note + "."
		}
		return &hclv2.Diagnostic{Severity: hclv2.DiagWarning, Summary: "Plugin is not pinned", Detail: detail, Subject: p.Ranges.Block.Ptr()}
	}
	return nil
}
