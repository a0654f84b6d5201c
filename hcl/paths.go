package hcl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// resolvePath makes a path the run file writes in field (for example
// "workspace.root") absolute: "~" and "~/…" are the home directory of the
// user running obversa ($HOME), a relative path is relative to the run
// file's directory. "~user" is refused with a diagnostic at rng, as is
// "~" when the home directory is unknown; ok is false then
// (docs/run-file.md, "Paths").
func (d *decoder) resolvePath(p string, rng hclv2.Range, field string) (string, bool) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			d.errorAt(rng, fmt.Sprintf("Cannot expand %q in %s", p, field),
				fmt.Sprintf(`%s in %s is %q, and "~" is the home directory, which is unknown here (%v). Set HOME, or write the path in full.`, field, d.filename, p, err))
			return "", false
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~")), true
	case strings.HasPrefix(p, "~"):
		user, _, _ := strings.Cut(strings.TrimPrefix(p, "~"), "/")
		d.errorAt(rng, fmt.Sprintf("Unsupported path %q in %s", p, field),
			fmt.Sprintf(`%s in %s is %q: only "~" and "~/…" (the home directory of the user running obversa) are expanded, not another user's "~%s". Write that home directory in full, as an absolute path; a path that really starts with "~" can be written "./%s".`, field, d.filename, p, user, p))
		return "", false
	case filepath.IsAbs(p):
		return filepath.Clean(p), true
	}
	return filepath.Join(d.dir, p), true
}
