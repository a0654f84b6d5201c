package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/internal/regfile"
)

// CheckedDir returns where a storage directory keeps its check receipts:
// <storage>/plugins/checked.
func CheckedDir(storageDir string) string {
	return filepath.Join(storageDir, "plugins", "checked")
}

// checkInput is everything a launch of one plugin depends on that the run
// file or the host decides; two launches with equal inputs start the same
// bytes the same way. Values of pass_env variables are left out (only
// their names are stored anywhere), so a changed API key does not
// invalidate a receipt: preflight's live probe is what checks a key.
type checkInput struct {
	SHA256       string            `json:"sha256"`
	Type         string            `json:"type"`
	Args         []string          `json:"args"`
	Env          map[string]string `json:"env"`
	PassEnv      []string          `json:"pass_env"`
	ConfigDigest string            `json:"config_digest"`
	Confine      *plan.Confine     `json:"confine"`
	Workspace    string            `json:"workspace"`
	Namespace    string            `json:"namespace"`
	// Host names the launching binary, which is also the confinement
	// shim: its build and, for a rebuilt development binary, its size and
	// modification time.
	Host string `json:"host"`
}

// CheckKey returns the hex SHA-256 that names a passed pre-run check of
// plugin p when launched for run r (nil: outside a run): its digest, type,
// args, run-file env, pass_env names, config digest, confinement,
// workspace and namespace, and the launching binary's identity. A receipt
// under this key (RecordChecked) lets `obversa run` skip launching the
// plugin before the run is created (docs/decisions.md, "A plugin checked
// once is not launched twice").
func CheckKey(p plan.PluginPlan, r *Run) string {
	in := checkInput{SHA256: p.SHA256, Type: p.Type, Args: p.Args, Env: p.Env, PassEnv: p.PassEnv,
		ConfigDigest: p.ConfigDigest, Confine: p.Confine, Host: hostIdentity()}
	if r != nil {
		in.Workspace, in.Namespace = r.WorkspaceRoot, r.Namespace
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Every field is a string, a list or a map of strings.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// hostIdentity names the running binary: its module version, VCS
// revision and modified flag, and its file's size and modification time
// (ns), so any rebuild is another host.
func hostIdentity() string {
	id := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		id = bi.GoVersion + " " + bi.Main.Path + "@" + bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				id += " " + s.Key + "=" + s.Value
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if st, err := os.Stat(exe); err == nil {
			id += fmt.Sprintf(" %s %d %d", exe, st.Size(), st.ModTime().UnixNano())
		}
	}
	return id
}

// Checked reports whether a check receipt for key exists in storageDir.
// Any error reading it counts as no receipt: the plugin is checked again.
func Checked(storageDir, key string) bool {
	st, err := os.Lstat(filepath.Join(CheckedDir(storageDir), key))
	return err == nil && st.Mode().IsRegular()
}

// RecordChecked writes the receipt for key: an empty file named by it. It
// is not synced: a receipt lost to a crash only means one more check.
// Errors are those of creating the directory or the file.
func RecordChecked(storageDir, key string) error {
	dir := CheckedDir(storageDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := regfile.OpenFile(filepath.Join(dir, key), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
