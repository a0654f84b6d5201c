package hcl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/obversa/obversa/internal/pathtree"
)

// workspace decodes the workspace block. The root must be an existing
// directory; one outside the run file's directory (after symlinks) is
// warned about unless allow_outside = true (docs/run-file.md).
func (d *decoder) workspace(body *hclsyntax.Body, ws *Workspace) {
	attrs := d.attrs(body, "root", "provider", "allow_outside")
	if a := attrs["allow_outside"]; a != nil {
		if v, ok := d.boolean(a); ok {
			ws.AllowOutside = v
		}
	}
	if a := attrs["root"]; a != nil {
		if s, ok := d.nonEmptyStr(a, `a directory, for example root = "."`); ok {
			if root, ok := d.resolvePath(s, a.Expr.Range(), "workspace.root"); ok {
				ws.Root = root
				d.rootAt = a.Expr.Range().Ptr()
				d.checkRoot(s, ws.Root, ws.AllowOutside, a.Expr.Range())
			}
		}
	}
	if a := attrs["provider"]; a != nil {
		if s, ok := d.enum(a, "git", "files", "none"); ok {
			ws.Provider = s
		}
	}
}

// checkRoot diagnoses a workspace root that is not an existing directory
// (an error: every run would fail in it) and, unless allowOutside, one
// that lies outside the run file's directory once symlinks and ".." are
// resolved (a warning: plugins work and the workspace lease is kept
// there).
func (d *decoder) checkRoot(written, root string, allowOutside bool, rng hclv2.Range) {
	fi, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.errorAt(rng, "Workspace root does not exist",
			fmt.Sprintf("workspace.root %q names no directory (relative paths are resolved against the run file's directory). Create the directory, or fix root; the default is the run file's directory.", written))
		return
	case err != nil:
		d.errorAt(rng, "Cannot read workspace root",
			fmt.Sprintf("workspace.root %q cannot be examined: %v. Check its permissions, or fix root.", written, errors.Unwrap(err)))
		return
	case !fi.IsDir():
		d.errorAt(rng, "Workspace root is not a directory",
			fmt.Sprintf("workspace.root %q is a file, not a directory. Point root at the directory plugins should work in.", written))
		return
	}
	if allowOutside {
		return
	}
	realRoot, err1 := filepath.EvalSymlinks(root)
	realDir, err2 := filepath.EvalSymlinks(d.dir)
	if err1 != nil || err2 != nil || pathtree.Within(realDir, realRoot) {
		return
	}
	resolved := ""
	if realRoot != filepath.Clean(written) {
		resolved = fmt.Sprintf(" (it resolves to %q)", realRoot)
	}
	d.warnAt(rng, "Workspace root is outside the run file's directory",
		fmt.Sprintf("workspace.root %q%s lies outside the directory of the run file, after following symlinks and \"..\". Plugins and their commands work there and the run keeps its workspace lease there (in .obversa/). If that is intended, add allow_outside = true to the workspace block; otherwise point root inside the run file's directory.", written, resolved))
}
