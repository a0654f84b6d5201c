package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin/confine"
)

// Run locates the directories a run's plugins may write by default
// (docs/confinement.md).
type Run struct {
	// WorkspaceRoot is the run's workspace root (absolute).
	WorkspaceRoot string
	// Namespace is the run's storage namespace.
	Namespace string
	// RunID names the run; empty for a launch outside a run (validate),
	// which gets no scratch directory.
	RunID string
}

// ScratchDir returns the scratch directory of run runID, which every
// plugin of the run may write: <storage>/<namespace>/scratch/<run-id>.
func ScratchDir(storageDir, namespace, runID string) string {
	return filepath.Join(storageDir, namespace, "scratch", runID)
}

// StateDir returns the state directory of plugin name, which it keeps
// from run to run in its namespace: <storage>/<namespace>/state/<name>.
func StateDir(storageDir, namespace, name string) string {
	return filepath.Join(storageDir, namespace, "state", name)
}

// TempDir returns the TMPDIR of a confined plugin: <scratch>/tmp in a
// run, else <state>/tmp.
func TempDir(storageDir string, r Run, name string) string {
	if r.RunID == "" {
		return filepath.Join(StateDir(storageDir, r.Namespace, name), "tmp")
	}
	return filepath.Join(ScratchDir(storageDir, r.Namespace, r.RunID), "tmp")
}

// Spec is the confinement of plugin p in run r: writes to the workspace
// root, the run's scratch directory, the plugin's state directory and
// the declared paths; the storage directory (records, locks, other runs,
// the plugin cache inside it) protected whatever the declared paths say, except the
// scratch and state directories themselves.
func Spec(p plan.PluginPlan, storageDir string, r Run) confine.Spec {
	c := p.Confine
	own := []string{StateDir(storageDir, r.Namespace, p.Name)}
	if r.RunID != "" {
		own = append(own, ScratchDir(storageDir, r.Namespace, r.RunID))
	}
	write := append([]string{}, c.Write...)
	if r.WorkspaceRoot != "" {
		write = append([]string{r.WorkspaceRoot}, write...)
	}
	return confine.Spec{
		Write: write, Own: own, Protect: []string{storageDir},
		DenyRead: c.DenyRead, Network: c.Network, MemoryBytes: c.MemoryBytes,
	}
}

// prepareConfinement makes the plugin's directories and its confinement
// (confine.Prepare): a required confinement the kernel cannot give is an
// error wrapping confine.ErrUnavailable. It returns the plugin's TMPDIR.
func prepareConfinement(p plan.PluginPlan, o Options) (*confine.Prepared, string, error) {
	spec := Spec(p, o.StorageDir, *o.Run)
	// Tagged as a bare group is (Start), so that the run's keeper stops
	// the memory group too.
	spec.GroupTag = GroupTag(os.Getenv(OwnerEnv))
	tmp := TempDir(o.StorageDir, *o.Run, p.Name)
	for _, d := range append(append([]string{}, spec.Own...), tmp) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, "", fmt.Errorf("plugin %q: confinement directory: %w", p.Name, err)
		}
	}
	// Declared paths that do not exist yet are made, as a bind mount's
	// source would be, so that the plugin can use them.
	for _, d := range p.Confine.Write {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, "", fmt.Errorf("plugin %q: confine.write %s: %w", p.Name, d, err)
			}
		}
	}
	prep, err := confine.Prepare(spec, confine.Detect(), p.Confine.Required)
	if err != nil {
		return nil, "", fmt.Errorf("plugin %q: %w", p.Name, err)
	}
	return prep, tmp, nil
}

// memoryWatch remembers, per plugin, the highest count of OOM kills read
// from its memory group.
type memoryWatch struct {
	mu   sync.Mutex
	seen map[string]uint64
}

// OOMMark returns a mark to take before a call to plugin name, for
// OOMKilledSince after it failed: the count of the plugin's OOM kills the
// host has read so far. It makes no system call, so a call that succeeds
// costs nothing more.
func (s *Set) OOMMark(name string) uint64 {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.seen[name]
}

// OOMKilledSince reports whether the kernel's OOM killer ended a process
// of plugin name after mark (OOMMark) was taken, and the plugin's memory
// limit in bytes; a plugin without a memory limit never reports one. Every
// call that was in flight when a process of the plugin's group was killed
// says so — the host cannot tell whose command the kernel picked, so each
// of them was possibly cut off mid-way — as may a call that started after
// a kill the host had not yet read (docs/confinement.md, "Memory").
func (s *Set) OOMKilledSince(name string, mark uint64) (limitBytes int64, killed bool) {
	prep := s.confined[name]
	if prep == nil || prep.LimitBytes() == 0 {
		return 0, false
	}
	n := prep.OOMKills()
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	s.watch.seen[name] = max(s.watch.seen[name], n)
	return prep.LimitBytes(), n > mark
}

// Confinement returns the confinement each plugin was launched with, by
// name; a plugin launched unconfined has no entry.
func (s *Set) Confinement() map[string]*confine.Prepared { return s.confined }
